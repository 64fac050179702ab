"""``trainer: behave-agent`` end to end with the tiny random model built at test time: checks
computed by hand from the logged rollouts (advantages, eviction, dropped rollouts, the masked
loss and its gradient), kill-and-resume equality, the shipped example learning, and one update
through the real BEHAVE environment and sandbox."""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch", reason="the behave-agent trainer needs the [train] extra")
pytest.importorskip("transformers", reason="the behave-agent trainer needs the [train] extra")

import torch

from rtlforge.agents.agentrl.rollout import Rollout, pack
from rtlforge.agents.agentrl.trainer import BehaveAgentTrainer
from rtlforge.core.plugins import PluginHost
from rtlforge.trainers.config import create_trainer, load_config, parse_config

REPO = Path(__file__).resolve().parents[3]
WINDOW = 300
ALLOWED = ["c", "s", "l"]


@pytest.fixture(scope="module")
def host() -> PluginHost:
    host = PluginHost()
    assert "behave-agent" in host.names("trainer")
    return host


def _config(out: Path, host: PluginHost, **overrides: Any) -> Any:
    data = {
        "trainer": "behave-agent", "seed": 0, "steps": 3, "out_dir": str(out),
        "model": {"build_tiny": {"hidden": 32, "layers": 1, "heads": 2, "vocab_size": 400},
                  "threads": 1},
        "env": {"kind": "toy", "tasks": ["toy", "flaky"], "max_turns": 4,
                "infra_rollouts": {"flaky": [1]}},
        "schedule": {"groups_kept": 2, "oversample": 2, "cooldown_all_pass": 0,
                     "cooldown_all_fail": 0},
        "num_generations": 4, "context_window": WINDOW, "max_new_tokens": 1,
        "allowed_tokens": ALLOWED, "temperature": 0.9, "learning_rate": 1e-2, "beta": 0.1,
        "executor": "serial", "checkpoint": {"every": 1, "keep": 5, "resume_from": "latest"},
        **overrides}
    return parse_config(data, host=host)


def _rollouts(out: Path) -> list[Rollout]:
    return [Rollout.model_validate_json(line)
            for line in (out / "rollouts.jsonl").read_text().splitlines()]


def _metrics(out: Path) -> list[dict[str, Any]]:
    return [{k: v for k, v in json.loads(line).items() if k != "seconds"}
            for line in (out / "metrics.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory, host: PluginHost
        ) -> tuple[BehaveAgentTrainer, Path]:
    out = tmp_path_factory.mktemp("agentrl") / "run"
    trainer = create_trainer(_config(out, host), host=host)
    assert isinstance(trainer, BehaveAgentTrainer)
    trainer.train()
    return trainer, out


def test_advantages_are_group_relative(run: tuple[BehaveAgentTrainer, Path]) -> None:
    _, out = run
    groups: dict[tuple[int, int], list[Rollout]] = {}
    for r in _rollouts(out):
        groups.setdefault((r.update, r.group), []).append(r)
    kept = 0
    for members in groups.values():
        rewards = [r.reward for r in members]
        if None in rewards or len(set(rewards)) == 1:  # incomplete or constant: not kept
            assert all(r.advantage is None for r in members)
            continue
        kept += 1
        mean = statistics.fmean(rewards)  # type: ignore[arg-type]
        std = statistics.pstdev(rewards)  # type: ignore[arg-type]
        for r in members:
            assert r.advantage == pytest.approx((r.reward - mean) / (std + 1e-4), abs=1e-9)
    assert kept >= 1, "the run must train on at least one group"


def test_infrastructure_failures_are_dropped_not_zero(run: tuple[BehaveAgentTrainer, Path]
                                                      ) -> None:
    _, out = run
    rollouts = _rollouts(out)
    for r in rollouts:
        flaky_compare = r.task_id == "flaky" and r.index == 1 and any(
            "compare" in t.tool_calls for t in r.turns)
        assert (r.reward is None) == flaky_compare
        if flaky_compare:
            assert "infra_error" in (r.drop_reason or "") and r.advantage is None
    dropped = sum(r.reward is None for r in rollouts)
    assert dropped >= 1, "the flaky rollout must have called compare in some update"
    assert sum(m["dropped"] for m in _metrics(out)) == dropped


def test_eviction_keeps_instructions_and_latest_feedback(run: tuple[BehaveAgentTrainer, Path]
                                                         ) -> None:
    trainer, out = run
    evictions = 0
    for r in _rollouts(out):
        instructions = [i for i, s in enumerate(r.segments) if s.turn == 0]
        for t in r.turns:
            context = list(t.context)
            assert context[:len(instructions)] == instructions
            by_turn = {r.segments[i].turn for i in context[len(instructions):]}
            assert set(t.evicted) == set(range(1, t.turn)) - by_turn
            assert t.evicted == tuple(range(1, len(t.evicted) + 1))  # oldest first
            if t.turn > 1:  # the latest feedback: every segment of the previous turn
                latest = [i for i, s in enumerate(r.segments)
                          if s.turn == t.turn - 1 and i < t.completion]
                assert set(latest) <= set(context)
                assert any(r.segments[i].kind == "tool" for i in latest)
            size = sum(len(r.segments[i].ids) for i in context)
            assert size + trainer.config.max_new_tokens <= WINDOW
            evictions += bool(t.evicted)
    assert evictions >= 1, "the window must have evicted some turn"
    assert sum(m["evictions"] for m in _metrics(out)) == evictions


def test_metrics_follow_the_rollouts(run: tuple[BehaveAgentTrainer, Path]) -> None:
    _, out = run
    rollouts = _rollouts(out)
    for m in _metrics(out):
        mine = [r for r in rollouts if r.update == m["step"] - 1]
        scored = [r.reward for r in mine if r.reward is not None]
        assert m["reward_mean"] == pytest.approx(statistics.fmean(scored))
        assert m["turns_mean"] == pytest.approx(statistics.fmean(len(r.turns) for r in mine))
        tools: dict[str, int] = {}
        for r in mine:
            for t in r.turns:
                for name in t.tool_calls:
                    tools[name] = tools.get(name, 0) + 1
        assert m["tool_calls"] == tools
        # one token per turn (max_new_tokens 1), all from the allowed alphabet
        assert m["tokens_mean"] == m["turns_mean"]


def _hand_loss(trainer: BehaveAgentTrainer, rollouts: list[Rollout]) -> torch.Tensor:
    """GRPO's 1/N Σ_i 1/|o_i| Σ_t [-A_i ratio + β k3], each turn on its own logged context
    (no packing), log-probabilities over the allowed letters at the sampling temperature."""
    tok = trainer._tokenizer
    allowed = [tok(a, add_special_tokens=False).input_ids[0] for a in ALLOWED]
    cfg = trainer.config
    total = torch.zeros(())
    for r in rollouts:
        n = sum(len(s.ids) for s in r.segments if s.kind == "model")
        for t in r.turns:
            context = [i for s in t.context for i in r.segments[s].ids]
            completion = list(r.segments[t.completion].ids)
            seq = torch.tensor([context + completion])

            def lps(logits: torch.Tensor, seq: torch.Tensor = seq,
                    completion: list[int] = completion) -> torch.Tensor:
                rows = logits[0, -len(completion) - 1:-1, allowed] / cfg.temperature
                picked = [allowed.index(c) for c in completion]
                return torch.log_softmax(rows, dim=-1)[range(len(completion)), picked]

            lp = lps(trainer._model(input_ids=seq).logits)
            with torch.no_grad():
                ref = lps(trainer._reference(input_ids=seq).logits)
            k3 = torch.exp(ref - lp) - (ref - lp) - 1
            term = -r.advantage * torch.exp(lp - lp.detach()) + cfg.beta * k3
            total = total + term.sum() / (n * len(rollouts))
    return total


def test_loss_is_masked_and_normalised_per_rollout(run: tuple[BehaveAgentTrainer, Path]
                                                   ) -> None:
    trainer, out = run
    kept = [r for r in _rollouts(out) if r.advantage is not None]
    assert kept
    params = [p for p in trainer._model.parameters() if p.requires_grad]

    captured: list[torch.Tensor] = []

    def keep_logits(_module: Any, _inputs: Any, output: torch.Tensor) -> None:
        output.retain_grad()
        captured.append(output)

    handle = trainer._model.lm_head.register_forward_hook(keep_logits)
    try:
        trainer._model.zero_grad()
        for r in kept:
            loss, _ = trainer.rollout_loss(r, r.advantage, r.model_tokens * len(kept))
            loss.backward()
    finally:
        handle.remove()
    ours = [p.grad.clone() for p in params]
    # logits exist only at the rows that predict model tokens, and each of them carries loss
    masks = [mask for r in kept for _, mask in pack(r)]
    assert [logits.shape[1] for logits in captured] == [sum(m[1:]) for m in masks]
    assert all(bool((logits.grad[0].abs().sum(dim=-1) > 0).all()) for logits in captured)

    trainer._model.zero_grad()
    _hand_loss(trainer, kept).backward()
    for mine, hand in zip(ours, [p.grad for p in params], strict=True):
        assert torch.allclose(mine, hand, atol=1e-6, rtol=1e-4)


def test_a_killed_run_resumes_to_the_same_rollouts_and_metrics(
        tmp_path: Path, host: PluginHost, monkeypatch: pytest.MonkeyPatch) -> None:
    whole = tmp_path / "whole"
    create_trainer(_config(whole, host, steps=4), host=host).train()

    killed = tmp_path / "killed"
    original = BehaveAgentTrainer.train_update

    def dies_in_update_3(self: BehaveAgentTrainer, schedule: Any) -> dict[str, Any]:
        if self.step == 2:
            self.rollout_group("toy", 0)  # half an update's work, then the kill
            raise KeyboardInterrupt
        return original(self, schedule)

    monkeypatch.setattr(BehaveAgentTrainer, "train_update", dies_in_update_3)
    with pytest.raises(KeyboardInterrupt):
        create_trainer(_config(killed, host, steps=4), host=host).train()
    monkeypatch.setattr(BehaveAgentTrainer, "train_update", original)
    create_trainer(_config(killed, host, steps=4), host=host).train()

    assert (killed / "rollouts.jsonl").read_text() == (whole / "rollouts.jsonl").read_text()
    assert _metrics(killed) == _metrics(whole)
    assert (killed / "pool" / "schedule.json").read_text() == (
        whole / "pool" / "schedule.json").read_text()
    a = torch.load(whole / "final" / "policy.pt", weights_only=True)
    b = torch.load(killed / "final" / "policy.pt", weights_only=True)
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


@pytest.mark.slow
def test_the_tiny_example_learns_to_compare_before_submitting(tmp_path: Path,
                                                              host: PluginHost) -> None:
    config = load_config(REPO / "examples" / "train" / "behave-agent-tiny.yaml", host=host)
    out = tmp_path / "example"
    create_trainer(config.model_copy(update={"out_dir": str(out)}), host=host).train()
    rewards = [m["reward_mean"] for m in _metrics(out)]
    assert len(rewards) == 20
    first, last = statistics.fmean(rewards[:5]), statistics.fmean(rewards[-5:])
    assert last >= first + 0.3, rewards
    # what was learned is the order: passing rollouts compared before they submitted
    for r in _rollouts(out):
        if r.rtl == "pass":
            names = [n for t in r.turns for n in t.tool_calls]
            assert names.index("compare") < names.index("submit")


def test_lora_kl_reference_is_the_adapter_off(tmp_path: Path, host: PluginHost) -> None:
    out = tmp_path / "lora"
    config = _config(out, host, steps=3, env={"kind": "toy", "max_turns": 4},
                     schedule={"groups_kept": 1, "oversample": 1, "cooldown_all_pass": 0,
                               "cooldown_all_fail": 0}, num_generations=8,
                     learning_rate=5e-2, beta=0.5,
                     model={"build_tiny": {"hidden": 32, "layers": 1, "heads": 2,
                                           "vocab_size": 400}, "threads": 1,
                            "lora": {"r": 4, "alpha": 8}})
    trainer = create_trainer(config, host=host)
    trainer.train()
    assert trainer._reference is None  # no second copy of the weights
    metrics = _metrics(out)
    updated = [m for m in metrics if m["grad_norm"] is not None]
    assert len(updated) >= 2, "groups must have been mixed (seed 0: all three)"
    # LoRA's B starts at zero: before the first update the policy is the reference, KL 0
    assert updated[0]["kl"] == pytest.approx(0.0, abs=1e-7)
    assert all(m["kl"] >= 0 for m in updated)
    assert updated[-1]["kl"] > 0  # the adapter moved the policy away from the reference
    saved = torch.load(out / "final" / "policy.pt", weights_only=True)
    assert saved and all("lora_" in name for name in saved)  # the adapter only


def test_gradient_checkpointing_and_a_token_free_log_change_nothing_else(
        tmp_path: Path, host: PluginHost) -> None:
    plain, checkpointed = tmp_path / "plain", tmp_path / "checkpointed"
    create_trainer(_config(plain, host, steps=2), host=host).train()
    create_trainer(_config(checkpointed, host, steps=2, gradient_checkpointing=True,
                           log_tokens=False), host=host).train()
    assert _metrics(plain) == _metrics(checkpointed)
    full = [json.loads(line) for line in (plain / "rollouts.jsonl").read_text().splitlines()]
    lean = [json.loads(line)
            for line in (checkpointed / "rollouts.jsonl").read_text().splitlines()]
    for a, b in zip(full, lean, strict=True):
        assert [len(s["ids"]) for s in a["segments"]] == [s["n"] for s in b["segments"]]
        assert {k: v for k, v in a.items() if k != "segments"} == {
            k: v for k, v in b.items() if k != "segments"}


def test_the_gpu_config_validates_and_names_real_tasks(host: PluginHost) -> None:
    from rtlforge.behave.sim.task import load_behave_task

    config = load_config(REPO / "examples" / "train" / "behave-agent-qwen7b.yaml", host=host)
    assert config.env.kind == "behave" and config.env.max_turns == 60
    assert config.model.lora is not None and config.model.device == "cuda"
    assert config.schedule.oversample == 12 and config.schedule.groups_kept == 8
    for path in config.tasks:
        assert load_behave_task(REPO / path).id == Path(path).name
