"""`rtlforge behave agent`: an LLM episode from the command line, against a scripted server."""

from __future__ import annotations

import json

import pytest
from _agent_fixtures import GOOD_RTL, RV_ACCUM, THREE_RTL
from _fake_openai import ScriptedOpenAIServer, tool_call
from click.testing import CliRunner

from rtlforge.behave.cli import behave

pytestmark = [pytest.mark.tools, pytest.mark.requires_tools("iverilog", "vvp")]


def _replies(rtl: str) -> list[dict]:
    return [{"content": None, "tool_calls": [
                tool_call("a", "write_file", json.dumps({"path": "rv_accum.v",
                                                         "content": rtl}))]},
            {"content": None, "tool_calls": [tool_call("b", "submit", "{}")]}]


@pytest.mark.parametrize(("rtl", "code", "status"), [(GOOD_RTL, 0, "pass"),
                                                      (THREE_RTL, 1, "fail")])
def test_agent_command_json_output_and_exit_code(tmp_path, rtl, code, status) -> None:
    out = tmp_path / "episode.json"
    with ScriptedOpenAIServer(_replies(rtl)) as server:
        result = CliRunner().invoke(behave, [
            "agent", "--task", str(RV_ACCUM), "--base-url", server.url, "--model", "fake",
            "--api-key-env", "", "--max-turns", "5", "--json", "--output", str(out),
            "--sequences", "5", "--transactions", "40"])
    assert result.exit_code == code, result.output
    summary = json.loads(result.output)
    assert summary["end_reason"] == "submitted" and summary["turns"] == 2
    assert summary["rtl"]["status"] == status and summary["model"]["status"] == "missing"
    saved = json.loads(out.read_text())
    assert [m["role"] for m in saved["transcript"]] == [
        "system", "user", "assistant", "tool", "assistant", "tool"]


def test_agent_command_unreachable_server_exits_3() -> None:
    with ScriptedOpenAIServer([]) as server:
        url = server.url
    result = CliRunner().invoke(behave, ["agent", "--task", str(RV_ACCUM), "--base-url", url,
                                         "--model", "fake", "--api-key-env", "",
                                         "--attempts", "1"])
    assert result.exit_code == 3, result.output
    assert "agent_error" in result.output
