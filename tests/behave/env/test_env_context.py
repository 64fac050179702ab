"""The agent environment's rollout settings: the BEHAVE paper's 60 turns, and what the model
is shown once the conversation outgrows its context (the oldest interaction turns dropped,
the task instructions and the latest tool feedback kept). No tool runs here: the scripted
agents only write, list and read workspace files, and nothing is judged."""

from __future__ import annotations

from pathlib import Path

from rtlforge.behave.env import (
    AgentEnv,
    EnvConfig,
    Message,
    ScriptedAgent,
    ScriptedCall,
    ToolCall,
    run_episode,
)
from rtlforge.behave.env.messages import fit_context, message_chars
from rtlforge.behave.sim.task import load_behave_task

RV_ACCUM = Path(__file__).resolve().parents[3] / "examples" / "behave" / "rv_accum"


def _turn(n: int, args: str, result: str) -> list[Message]:
    call = ToolCall(id=f"c{n}", name="write_file", arguments=args)
    return [Message(role="assistant", content=None, tool_calls=(call,)),
            Message(role="tool", tool_call_id=f"c{n}", name="write_file", content=result)]


def test_the_papers_rollout_settings_are_the_defaults() -> None:
    """BEHAVE Appendix D.2 (as issue 25 quotes it): 60 turns per rollout, the oldest turns
    evicted when the context fills (ours were 20 turns and no eviction). The tool-call cap no
    longer binds before the turn limit (it was 60, one a turn)."""
    config = EnvConfig()
    assert config.max_turns == 60
    assert config.max_tool_calls is None
    assert config.max_context_chars == 96_000


def test_fit_context_by_hand() -> None:
    """System 10 + task 20 = 30 characters of instructions; turns of 10 + 40 + 100 = 150,
    10 + 20 + 50 = 80 and 10 + 30 + 200 = 240 characters (tool name, arguments, result).

    - 1,000: everything fits (30 + 470), nothing dropped.
    - 400: 30 + 240 + 80 = 350 fits, adding the first turn (150) would make 500: 1 dropped.
    - 300: 30 + 240 = 270; with the second turn 350 > 300: 2 dropped.
    - 100: the latest turn alone is over (270), it stays anyway: 2 dropped.
    - None: no limit."""
    head = [Message(role="system", content="s" * 10), Message(role="user", content="t" * 20)]
    t1, t2, t3 = _turn(1, "a" * 40, "r" * 100), _turn(2, "b" * 20, "q" * 50), \
        _turn(3, "c" * 30, "p" * 200)
    messages = [*head, *t1, *t2, *t3]
    assert [sum(message_chars(m) for m in t) for t in (head, t1, t2, t3)] == [30, 150, 80, 240]
    assert fit_context(messages, 1000) == (messages, 0)
    assert fit_context(messages, 400) == ([*head, *t2, *t3], 1)
    assert fit_context(messages, 300) == ([*head, *t3], 2)
    assert fit_context(messages, 100) == ([*head, *t3], 2)
    assert fit_context(messages, None) == (messages, 0)
    # a turn is never split: every tool message still follows the call that it answers
    shown, _ = fit_context(messages, 300)
    assert [m.role for m in shown] == ["system", "user", "assistant", "tool"]


def test_an_episode_shows_the_model_the_instructions_and_the_latest_turns() -> None:
    """Four turns each writing a 10,000-character file, with room for 25,000 characters after
    the instructions: each turn is 10,000 characters of arguments plus a little (the call and
    its short result), so the model sees at most the two latest turns. Before turn 4 it sees
    turns 2 and 3, not turn 1; the transcript keeps everything."""
    task = load_behave_task(RV_ACCUM)
    texts = [chr(ord("a") + n) * 10_000 for n in range(4)]
    agent = ScriptedAgent([[ScriptedCall(name="write_file",
                                         arguments={"path": f"f{n}.txt", "content": text})]
                           for n, text in enumerate(texts)])
    with AgentEnv(task, config=EnvConfig()) as probe:
        instructions = sum(message_chars(m) for m in probe.reset())
    config = EnvConfig(max_context_chars=instructions + 25_000, on_limit="no_submission")
    result = run_episode(task, agent, config=config)
    assert result.end_reason == "agent_stopped" and result.turns == 5
    seen = agent.seen  # the messages each turn was asked with
    assert [len(s) for s in seen] == [2, 4, 6, 6, 6]  # instructions + up to two turns of two
    for asked in seen:
        assert asked[0].role == "system" and asked[1].role == "user"
        assert "outgrows your context" in asked[0].content
    shown = ["".join(c.arguments for m in asked for c in m.tool_calls) for asked in seen]
    assert [[text in s for text in texts] for s in shown] == [
        [False, False, False, False],
        [True, False, False, False],
        [True, True, False, False],
        [False, True, True, False],  # before turn 4: turn 1 dropped
        [False, False, True, True],
    ]
    assert seen[3][-1].role == "tool"  # the latest tool feedback is the last message shown
    assert result.evicted_turns == 2
    assert len(result.transcript) == 2 + 4 * 2 + 1  # the transcript keeps every message


def test_eviction_off_shows_the_whole_transcript() -> None:
    task = load_behave_task(RV_ACCUM)
    agent = ScriptedAgent([[ScriptedCall(name="list_files")]] * 3)
    result = run_episode(task, agent, config=EnvConfig(max_context_chars=None,
                                                       on_limit="no_submission"))
    assert [len(s) for s in agent.seen] == [2, 4, 6, 8]
    assert result.evicted_turns == 0
    assert "outgrows your context" not in agent.seen[0][0].content
