"""Tool declarations, results and the episode's rules, without running any EDA tool: schemas
generated from the argument models, size-capped results, bad calls answered as typed errors,
budgets, and what the agent is shown of the task (never the golden)."""

from __future__ import annotations

import json

import pytest
from _agent_fixtures import GOLDEN_FRAGMENTS, GOLDEN_TEXT, RV_ACCUM

from rtlforge.behave.env import (
    AgentEnv,
    AgentReply,
    EnvConfig,
    ScriptedAgent,
    ScriptedCall,
    ToolCall,
    ToolResult,
    WorkspaceLimits,
    openai_tools,
    run_episode,
)
from rtlforge.behave.sim.task import load_behave_task

C = ScriptedCall


@pytest.fixture(scope="module")
def task():
    return load_behave_task(RV_ACCUM)


def _reply(*calls: tuple[str, str]) -> AgentReply:
    return AgentReply(tool_calls=tuple(ToolCall(id=f"c{n}", name=name, arguments=args)
                                       for n, (name, args) in enumerate(calls)))


def _answers(env: AgentEnv, *calls: tuple[str, str]) -> list[dict]:
    return [json.loads(m.content) for m in env.step(_reply(*calls))]


def test_openai_tool_declarations_come_from_the_argument_models() -> None:
    tools = {t["function"]["name"]: t for t in openai_tools()}
    assert set(tools) == {"write_file", "edit_file", "read_file", "list_files", "compile",
                          "run_testbench", "behave_self_check", "synthesise", "submit"}
    for t in tools.values():
        assert t["type"] == "function" and t["function"]["description"]
        params = t["function"]["parameters"]
        assert params["type"] == "object" and params["additionalProperties"] is False
        assert '"title"' not in json.dumps(params)
    write = tools["write_file"]["function"]["parameters"]
    assert sorted(write["required"]) == ["content", "path"]
    check = tools["behave_self_check"]["function"]["parameters"]["properties"]
    assert check["sequences"]["maximum"] == 50 and check["transactions"]["maximum"] == 100
    assert check["model"]["default"] == "model.py"
    lint = tools["compile"]["function"]["parameters"]["properties"]["linter"]
    assert sorted(lint["enum"]) == ["icarus", "verilator"]
    assert "required" not in tools["list_files"]["function"]["parameters"]


def test_a_result_is_capped_and_stays_json() -> None:
    result = ToolResult(ok=True, summary="big", data={"output": "x" * 50_000,
                                                      "items": ["y" * 5000] * 80})
    text = result.render(2000)
    assert len(text) <= 2000
    obj = json.loads(text)
    assert obj["ok"] is True and obj["summary"] == "big"
    small = ToolResult.failure("not_found", "gone").render(2000)
    assert json.loads(small) == {"ok": False, "error": "not_found", "summary": "gone"}


def test_bad_calls_become_typed_error_results(task) -> None:
    env = AgentEnv(task, config=EnvConfig(max_argument_chars=2048))
    env.reset()
    out = _answers(env,
                   ("no_such_tool", "{}"),
                   ("write_file", '{"path": "a.v", "content": '),  # cut-off JSON
                   ("write_file", "[1, 2]"),
                   ("write_file", '{"path": "a.v"}'),  # content missing
                   ("write_file", '{"path": "a.v", "content": "", "mode": "x"}'),  # extra key
                   ("read_file", json.dumps({"path": "z" * 3000})),  # over the argument cap
                   ("list_files", ""))  # empty arguments: no arguments
    assert [o.get("error") for o in out] == [
        "unknown_tool", "invalid_json", "invalid_arguments", "invalid_arguments",
        "invalid_arguments", "too_large", None]
    assert any("content" in p for p in out[3]["problems"])
    assert out[6]["ok"] and out[6]["files"] == {}
    assert not env.done and env.turns == 1 and env.tool_calls_used == 7


def test_hostile_file_arguments_are_refused(task) -> None:
    env = AgentEnv(task, config=EnvConfig(
        workspace=WorkspaceLimits(max_files=2, max_file_bytes=1000)))
    env.reset()
    golden_path = str(RV_ACCUM / "golden.py")
    out = _answers(env,
                   ("read_file", json.dumps({"path": "golden.py"})),
                   ("read_file", json.dumps({"path": "../rv_accum/golden.py"})),
                   ("read_file", json.dumps({"path": golden_path})),
                   ("write_file", json.dumps({"path": "../../evil.v", "content": "x"})),
                   ("write_file", json.dumps({"path": "big.v", "content": "x" * 1001})),
                   ("write_file", json.dumps({"path": "a.v", "content": "a"})),
                   ("write_file", json.dumps({"path": "b.v", "content": "b"})),
                   ("write_file", json.dumps({"path": "c.v", "content": "c"})))
    assert [o.get("error") for o in out] == [
        "not_found", "bad_name", "bad_name", "bad_name", "too_large", None, None,
        "too_many_files"]
    assert env.workspace.names() == ["a.v", "b.v"]


def test_edit_and_read_round_trip(task) -> None:
    env = AgentEnv(task)
    env.reset()
    out = _answers(env, ("write_file", json.dumps({"path": "m.v", "content": "a b a"})),
                   ("edit_file", json.dumps({"path": "m.v", "old_text": "a",
                                             "new_text": "c"})),
                   ("edit_file", json.dumps({"path": "m.v", "old_text": "a", "new_text": "c",
                                             "replace_all": True})),
                   ("read_file", json.dumps({"path": "m.v"})))
    assert out[1]["error"] == "ambiguous_match"
    assert out[2]["ok"] and out[3]["content"] == "c b c"


def test_the_turn_limit_ends_an_episode_that_never_submits(task) -> None:
    agent = ScriptedAgent([[C(name="list_files")]] * 10)
    result = run_episode(task, agent, config=EnvConfig(max_turns=3))
    assert result.end_reason == "turn_limit" and result.turns == 3
    assert not result.submitted and len(agent.seen) == 3
    assert result.rtl.status == result.model.status == "missing"  # nothing written
    assert not result.unresolved


def test_per_turn_and_episode_tool_call_budgets(task) -> None:
    env = AgentEnv(task, config=EnvConfig(max_calls_per_turn=2, max_tool_calls=3))
    env.reset()
    out = _answers(env, *[("list_files", "{}")] * 3)
    assert [o.get("error") for o in out] == [None, None, "budget"]
    assert not env.done
    out = _answers(env, ("list_files", "{}"), ("list_files", "{}"))
    assert [o.get("error") for o in out] == [None, "budget"]
    assert env.end_reason == "tool_call_limit"


def test_the_token_budget(task) -> None:
    env = AgentEnv(task, config=EnvConfig(max_tokens=150))
    env.reset()
    env.step(AgentReply(tool_calls=(ToolCall(id="a", name="list_files", arguments=""),),
                        prompt_tokens=100, completion_tokens=20))
    assert not env.done
    env.step(AgentReply(tool_calls=(ToolCall(id="b", name="list_files", arguments=""),),
                        prompt_tokens=20, completion_tokens=10))
    assert env.end_reason == "token_limit"


def test_a_reply_without_tool_calls_ends_the_episode(task) -> None:
    result = run_episode(task, ScriptedAgent([]))
    assert result.end_reason == "agent_stopped" and result.turns == 1
    assert result.transcript[-1].role == "assistant"


def test_an_agent_infrastructure_failure_is_unresolved_not_failed(task) -> None:
    from rtlforge.generation.base import GenerationConnectionError

    class Down:
        def respond(self, messages, tools):
            raise GenerationConnectionError("server down")

    result = run_episode(task, Down())
    assert result.end_reason == "agent_error" and result.unresolved
    assert result.rtl.status == result.model.status == "unresolved"
    assert "server down" in (result.agent_error or "")


def test_the_prompt_shows_spec_and_interface_but_nothing_of_the_golden(task) -> None:
    env = AgentEnv(task)
    system, user = env.reset()
    text = system.content + user.content
    assert task.spec.strip() in text
    for port in ("input [7:0] in_data", "output in_ready", "output [9:0] out_sum",
                 "input out_ready"):
        assert port in text
    assert "process(self, in_data: UInt[8])" in text
    assert "golden" not in text.lower() and str(RV_ACCUM) not in text
    for fragment in GOLDEN_FRAGMENTS:
        assert fragment in GOLDEN_TEXT and fragment not in text, fragment
