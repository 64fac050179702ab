"""The behave-agent trainer's pure parts against hand-computed values: advantages, eviction,
packing into masked sequences, the masked loss, tool-call parsing, the reward rule."""

from __future__ import annotations

import math

import pytest

from rtlforge.agents.agentrl.context import select_turns
from rtlforge.agents.agentrl.objective import group_advantages, masked_policy_loss
from rtlforge.agents.agentrl.outcome import parse_tool_calls, score_episode
from rtlforge.agents.agentrl.rollout import Rollout, TurnRecord, pack
from rtlforge.behave.env.environment import ArtifactVerdict, EpisodeResult, ToolCallRecord
from rtlforge.behave.sim.check import BehaveResult


def test_group_advantages_by_hand() -> None:
    # rewards 1, 0, 0, 1: mean 0.5, population std 0.5
    assert group_advantages([1.0, 0.0, 0.0, 1.0]) == pytest.approx(
        [0.5 / 0.5001, -0.5 / 0.5001, -0.5 / 0.5001, 0.5 / 0.5001])
    # 1, 0, 0, 0: mean 0.25, std sqrt((0.5625 + 3 * 0.0625) / 4) = sqrt(0.1875)
    std = math.sqrt(0.1875)
    assert group_advantages([1.0, 0.0, 0.0, 0.0]) == pytest.approx(
        [0.75 / (std + 1e-4)] + [-0.25 / (std + 1e-4)] * 3)
    assert group_advantages([1.0, 1.0, 1.0]) == [0.0, 0.0, 0.0]


def test_eviction_keeps_instructions_and_latest_turn() -> None:
    # instructions 10, turns 5, 6, 7, opening 2, reserve 3: 10 + 18 + 5 = 33 > 30, so the oldest
    # turn goes (28 fits); at 25 two go (10 + 7 + 5 = 22); below 22 nothing fits
    assert select_turns(10, [5, 6, 7], prompt=2, reserve=3, window=33) == ([0, 1, 2], [])
    assert select_turns(10, [5, 6, 7], prompt=2, reserve=3, window=30) == ([1, 2], [0])
    assert select_turns(10, [5, 6, 7], prompt=2, reserve=3, window=25) == ([2], [0, 1])
    assert select_turns(10, [5, 6, 7], prompt=2, reserve=3, window=22) == ([2], [0, 1])
    assert select_turns(10, [5, 6, 7], prompt=2, reserve=3, window=21) is None
    assert select_turns(10, [], prompt=2, reserve=3, window=15) == ([], [])


def _rollout() -> Rollout:
    r = Rollout(update=0, task_id="t", group=0, index=0)
    r.add("instructions", 0, [1, 2])          # 0
    r.add("format", 1, [9])                   # 1 opening of turn 1
    r.add("model", 1, [10, 11])               # 2
    r.add("format", 1, [8])                   # 3
    r.add("tool", 1, [20, 21, 22])            # 4
    r.add("format", 2, [9])                   # 5
    r.add("model", 2, [12])                   # 6
    r.add("format", 2, [8])                   # 7
    r.add("tool", 2, [23])                    # 8
    r.add("format", 3, [9])                   # 9
    r.add("model", 3, [13, 14])               # 10
    r.turns = [TurnRecord(turn=1, context=(0, 1), completion=2),
               TurnRecord(turn=2, context=(0, 1, 2, 3, 4, 5), completion=6),
               TurnRecord(turn=3, context=(0, 5, 6, 7, 8, 9), completion=10, evicted=(1,))]
    return r


def test_pack_merges_extending_turns_and_splits_at_an_eviction() -> None:
    seqs = pack(_rollout())
    assert seqs == [
        ([1, 2, 9, 10, 11, 8, 20, 21, 22, 9, 12], [0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 1]),
        # turn 3's context left turn 1 out: a new sequence; turn 2's tokens are context there
        ([1, 2, 9, 12, 8, 23, 9, 13, 14], [0, 0, 0, 0, 0, 0, 0, 1, 1]),
    ]
    assert _rollout().model_tokens == 5
    assert sum(sum(m) for _, m in seqs) == 5  # every model token trained exactly once


def test_masked_loss_by_hand() -> None:
    torch = pytest.importorskip("torch")
    lp = torch.tensor([[-1.0, -2.0, -3.0]], requires_grad=True)
    mask = torch.tensor([[0, 1, 1]])
    loss, kl = masked_policy_loss(lp, mask, 2.0)
    loss.backward()
    assert float(loss.detach()) == pytest.approx(-4.0)  # -A * ratio (1) on the two model tokens
    assert lp.grad.tolist() == [[0.0, -2.0, -2.0]]  # the masked position carries nothing
    assert float(kl) == 0.0
    # with a reference: k3 = exp(ref - lp) - (ref - lp) - 1 on the model tokens
    lp = torch.tensor([[-1.0, -2.0, -3.0]], requires_grad=True)
    ref = torch.tensor([[float("-inf"), -1.5, -3.0]])  # -inf where masked must not leak
    loss, kl = masked_policy_loss(lp, mask, 1.0, ref_logprobs=ref, beta=0.5)
    k3 = math.exp(0.5) - 0.5 - 1.0
    assert float(kl) == pytest.approx(k3)
    assert float(loss.detach()) == pytest.approx(-2.0 + 0.5 * k3)
    loss.backward()
    # d/dlp of -A*ratio + beta*(exp(ref-lp) - (ref-lp) - 1) = -A + beta*(1 - exp(ref-lp))
    assert lp.grad[0].tolist() == pytest.approx([0.0, -1.0 + 0.5 * (1 - math.exp(0.5)), -1.0])


def test_parse_tool_calls() -> None:
    reply = parse_tool_calls(
        'thinking <tool_call>{"name": "compile", "arguments": {"linter": "icarus"}}</tool_call>'
        ' and <tool_call>{"name": "submit"}</tool_call><tool_call>not json', turn=3)
    assert [(c.id, c.name, c.arguments) for c in reply.tool_calls] == [
        ("call_3_0", "compile", '{"linter": "icarus"}'), ("call_3_1", "submit", "{}"),
        ("call_3_2", "(unparsed tool call)", "not json")]
    assert reply.content == "thinking  and"
    assert parse_tool_calls("no calls here", turn=1).tool_calls == ()


def _episode(rtl: ArtifactVerdict, *, calls: tuple[ToolCallRecord, ...] = (),
             end: str = "submitted") -> EpisodeResult:
    return EpisodeResult(task_id="t", end_reason=end, submitted=True, rtl=rtl,  # type: ignore[arg-type]
                         model=ArtifactVerdict(status="missing"),
                         unresolved=rtl.status == "unresolved", turns=1, tool_calls=calls,
                         transcript=())


def test_reward_rule() -> None:
    def verdict(v: str) -> ArtifactVerdict:
        return ArtifactVerdict.of(BehaveResult(verdict=v, artifact="rtl"))  # type: ignore[arg-type]

    assert score_episode(_episode(verdict("pass")), "rtl").reward == 1.0
    assert score_episode(_episode(verdict("fail")), "rtl").reward == 0.0
    timed_out = score_episode(_episode(verdict("timeout")), "rtl")
    assert (timed_out.reward, timed_out.unresolved) == (0.0, True)  # the paper: unresolved = 0
    assert score_episode(_episode(ArtifactVerdict(status="missing")), "rtl").reward == 0.0
    # infrastructure: dropped (None), never 0
    assert score_episode(_episode(verdict("infra_error")), "rtl").reward is None
    flaky = ToolCallRecord(turn=1, call_id="c", name="compile", ok=False, error="infra_error")
    dropped = score_episode(_episode(verdict("pass"), calls=(flaky,)), "rtl")
    assert dropped.reward is None and "compile" in (dropped.drop_reason or "")
    assert score_episode(_episode(ArtifactVerdict(status="unresolved"), end="agent_error"),
                         "rtl").reward is None
    # the other artifact's infrastructure problem does not touch this one's reward
    assert score_episode(_episode(verdict("pass")), "model").reward == 0.0
