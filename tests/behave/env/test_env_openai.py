"""The OpenAI-compatible tool-calling agent over real HTTP, against a scripted local server:
arguments as JSON strings, several calls in one message, a malformed arguments string, a final
message without tool calls; and the client's handling of broken servers."""

from __future__ import annotations

import json

import pytest
from _agent_fixtures import GOOD_MODEL, GOOD_RTL, RV_ACCUM
from _fake_openai import ScriptedOpenAIServer, tool_call

from rtlforge.behave.env import EnvConfig, Message, OpenAIToolAgent, openai_tools, run_episode
from rtlforge.behave.sim.stimulus import StimulusConfig
from rtlforge.behave.sim.task import load_behave_task
from rtlforge.generation.base import (
    GenerationError,
    GenerationHTTPError,
    MalformedResponseError,
    RetryPolicy,
)

NO_RETRY = RetryPolicy(max_attempts=1)


def _agent(url: str, **kw) -> OpenAIToolAgent:
    return OpenAIToolAgent(model="fake", base_url=url, api_key_env=None, timeout=10, **kw)


@pytest.mark.tools
@pytest.mark.requires_tools("iverilog", "vvp")
def test_an_episode_over_http_with_tool_calls() -> None:
    task = load_behave_task(RV_ACCUM)
    replies = [
        {"content": None, "tool_calls": [  # two calls in one message, arguments as strings
            tool_call("w1", "write_file", json.dumps({"path": "rv_accum.v",
                                                      "content": GOOD_RTL})),
            tool_call("w2", "write_file", json.dumps({"path": "model.py",
                                                      "content": GOOD_MODEL}))]},
        {"content": "Let me lint it.", "tool_calls": [
            tool_call("c1", "compile", '{"linter": "icarus"')]},  # malformed: cut off
        {"content": None, "tool_calls": [
            tool_call("s1", "behave_self_check", '{"sequences": 3, "transactions": 30}')]},
        {"content": "The design and its model agree; I am done."},  # no tool calls
    ]
    config = EnvConfig(hidden_stimulus=StimulusConfig(sequences=8, transactions=40))
    with ScriptedOpenAIServer(replies) as server:
        result = run_episode(task, _agent(server.url, retry=NO_RETRY), config=config)
        bodies = server.requests
    assert len(bodies) == 4
    assert result.end_reason == "agent_stopped" and result.turns == 4
    assert result.prompt_tokens == 400 and result.completion_tokens == 40
    # the request carried the tools and the conversation in OpenAI's shape
    assert bodies[0]["tools"] == openai_tools() and bodies[0]["model"] == "fake"
    assert [m["role"] for m in bodies[0]["messages"]] == ["system", "user"]
    second = bodies[1]["messages"]
    assert [m["role"] for m in second[2:]] == ["assistant", "tool", "tool"]
    assert [c["id"] for c in second[2]["tool_calls"]] == ["w1", "w2"]
    assert [m["tool_call_id"] for m in second[3:]] == ["w1", "w2"]
    assert json.loads(second[3]["content"])["ok"] is True
    # the malformed arguments reached the model as an invalid_json result, not a crash
    third = bodies[2]["messages"]
    assert third[-2]["tool_calls"][0]["function"]["arguments"] == '{"linter": "icarus"'
    assert json.loads(third[-1]["content"])["error"] == "invalid_json"
    checked = json.loads(bodies[3]["messages"][-1]["content"])
    assert checked["verdict"] == "pass", checked
    assert result.transcript[-1] == Message(role="assistant",
                                            content="The design and its model agree; I am done.")
    # ended without submit: the workspace is judged as it stands (on_limit="judge")
    assert not result.submitted
    assert result.rtl.status == "pass" and result.model.status == "pass"


def test_a_message_without_tool_calls_and_usage_counts() -> None:
    with ScriptedOpenAIServer([{"content": "hello"}]) as server:
        reply = _agent(server.url).respond([Message(role="user", content="hi")], [])
    assert reply.content == "hello" and reply.tool_calls == ()
    assert reply.prompt_tokens == 100 and reply.completion_tokens == 10
    assert reply.finish_reason == "stop"


def test_odd_tool_call_shapes_are_kept_for_the_environment_to_answer() -> None:
    message = {"content": None, "tool_calls": [
        {"type": "function", "function": {"name": "list_files", "arguments": {}}},  # no id
        {"id": "x", "type": "function", "function": {"arguments": "{}"}},  # no name
        "junk"]}
    with ScriptedOpenAIServer([message]) as server:
        reply = _agent(server.url).respond([Message(role="user", content="hi")], [])
    assert [(c.name, c.arguments) for c in reply.tool_calls] == [("list_files", "{}"),
                                                                  ("", "{}")]
    assert reply.tool_calls[0].id == "call_1_0" and reply.tool_calls[1].id == "x"


@pytest.mark.parametrize(("reply", "error"), [
    ((200, b"not json"), MalformedResponseError),
    ((200, {"choices": []}), GenerationError),
    ((200, {"choices": [{"message": {"role": "assistant"}}]}), MalformedResponseError),
    ((400, {"error": {"message": "bad tools"}}), GenerationHTTPError),
])
def test_broken_server_replies_are_typed_generation_errors(reply, error) -> None:
    with ScriptedOpenAIServer([reply]) as server, pytest.raises(error):
        _agent(server.url, retry=NO_RETRY).respond([Message(role="user", content="hi")], [])


def test_a_server_error_is_retried() -> None:
    fast = RetryPolicy(max_attempts=2, base_delay=0.0, jitter=0.0)
    with ScriptedOpenAIServer([(503, {"error": {"message": "busy"}}),
                               {"content": "ok"}]) as server:
        reply = _agent(server.url, retry=fast).respond([Message(role="user", content="x")], [])
        assert len(server.requests) == 2
    assert reply.content == "ok"


def test_an_unreachable_server_ends_the_episode_unresolved() -> None:
    with ScriptedOpenAIServer([]) as server:
        url = server.url
    result = run_episode(load_behave_task(RV_ACCUM), _agent(url, retry=NO_RETRY))
    assert result.end_reason == "agent_error" and result.unresolved
    assert result.rtl.status == "unresolved" and result.turns == 0
