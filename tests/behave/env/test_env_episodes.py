"""Scripted episodes on examples/behave/rv_accum through the real tools (sandboxed Icarus,
Verilator, Yosys): a correct design and model pass the hidden check, a wrong pair that agrees
with itself fails it, an agent that never submits meets the turn limit, hostile arguments and
designs get typed errors, and B* is read only after the last turn."""

from __future__ import annotations

import builtins
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from _agent_fixtures import (
    GOLDEN_FRAGMENTS,
    GOOD_MODEL,
    GOOD_RTL,
    HOSTILE_RTL,
    RV_ACCUM,
    TESTBENCH,
    THREE_MODEL,
    THREE_RTL,
)

from rtlforge.behave.env import AgentEnv, EnvConfig, ScriptedAgent, ScriptedCall, run_episode
from rtlforge.behave.sim.stimulus import StimulusConfig
from rtlforge.behave.sim.task import load_behave_task
from rtlforge.core.plugins import PluginHost
from rtlforge.sandbox.runner import SandboxRunner

pytestmark = [pytest.mark.tools, pytest.mark.requires_tools("iverilog", "vvp")]

C = ScriptedCall
CONFIG = EnvConfig(hidden_stimulus=StimulusConfig(sequences=10, transactions=50))
SELF = {"sequences": 4, "transactions": 40}


@pytest.fixture(scope="module")
def task():
    return load_behave_task(RV_ACCUM)


@pytest.fixture(scope="module")
def host() -> PluginHost:
    return PluginHost.default()


@pytest.fixture(scope="module")
def runner() -> Iterator[SandboxRunner]:
    with SandboxRunner() as r:
        yield r


def _write(name: str, content: str) -> ScriptedCall:
    return C(name="write_file", arguments={"path": name, "content": content})


def _results(result, name: str) -> list[dict]:
    """The JSON results of every call of tool ``name``, in order."""
    ids = [c.id for m in result.transcript if m.role == "assistant" for c in m.tool_calls
           if c.name == name]
    by_id = {m.tool_call_id: m for m in result.transcript if m.role == "tool"}
    return [json.loads(by_id[i].content) for i in ids]


class _TaskDirReads:
    """Records every file read under the task directory (Path.read_text/read_bytes, open)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, root: Path) -> None:
        self.paths: list[str] = []
        root_text = str(root.resolve())
        real_open, real_text, real_bytes = builtins.open, Path.read_text, Path.read_bytes

        def note(path: object) -> None:
            if str(Path(str(path)).resolve()).startswith(root_text):
                self.paths.append(str(path))

        def fake_open(file, *a, **kw):
            if isinstance(file, str | Path):
                note(file)
            return real_open(file, *a, **kw)

        def fake_text(self_, *a, **kw):
            note(self_)
            return real_text(self_, *a, **kw)

        def fake_bytes(self_, *a, **kw):
            note(self_)
            return real_bytes(self_, *a, **kw)

        monkeypatch.setattr(builtins, "open", fake_open)
        monkeypatch.setattr(Path, "read_text", fake_text)
        monkeypatch.setattr(Path, "read_bytes", fake_bytes)


@pytest.mark.requires_tools("yosys", "yosys-abc")
def test_a_correct_design_and_model_pass_and_b_star_stays_hidden(
        task, host, runner, monkeypatch) -> None:
    script = [
        [_write("rv_accum.v", GOOD_RTL), _write("model.py", GOOD_MODEL),
         _write("tb_rv_accum.v", TESTBENCH)],
        [C(name="compile", arguments={})],
        [C(name="run_testbench", arguments={"testbench": "tb_rv_accum.v"})],
        [C(name="behave_self_check", arguments=SELF)],
        [C(name="synthesise", arguments={})],
        [C(name="read_file", arguments={"path": "golden.py"}),
         C(name="read_file", arguments={"path": "../rv_accum/golden.v"}),
         C(name="read_file", arguments={"path": str(RV_ACCUM / "golden.py")})],
        [C(name="submit", arguments={})],
    ]
    agent = ScriptedAgent(script)
    reads = _TaskDirReads(monkeypatch, RV_ACCUM)
    with AgentEnv(task, host=host, runner=runner, config=CONFIG) as env:
        env.reset()
        while not env.done:
            env.step(agent.respond(env.messages, env.tools))
        assert reads.paths == []  # nothing of the task directory read during the episode
        result = env.finish()
    assert any(p.endswith("golden.py") for p in reads.paths)  # the guard does see reads
    assert result.end_reason == "submitted" and result.submitted and result.turns == 7
    assert result.rtl.status == "pass" and result.model.status == "pass", (
        result.rtl.result, result.model.result)
    assert not result.unresolved
    assert result.submission.design == {"rv_accum.v": GOOD_RTL}  # the testbench left out
    assert result.submission.model_name == "model.py"

    (compiled,) = _results(result, "compile")
    assert compiled["ok"] and compiled["verdict"] == "pass"
    (tb,) = _results(result, "run_testbench")
    assert tb["verdict"] == "pass" and "STATUS: PASS" in tb["output"]
    (self_check,) = _results(result, "behave_self_check")
    assert self_check["verdict"] == "pass" and self_check["mismatches"] == 0
    cov = self_check["coverage"]
    # the edge sweep plus 4 x 40 random transactions; every fourth input emits one sum
    assert cov["transactions"] >= 160 and cov["completed"] == cov["outputs"] > 0
    assert cov["model_branches_hit"] == cov["model_branches"] == 2
    (ppa,) = _results(result, "synthesise")
    assert ppa["ok"] and ppa["area_um2"] > 0 and ppa["delay_ns"] > 0 and ppa["cells"] > 0
    assert [r["error"] for r in _results(result, "read_file")] == [
        "not_found", "bad_name", "bad_name"]
    shown = "\n".join(m.content or "" for m in result.transcript if m.role != "assistant")
    for fragment in GOLDEN_FRAGMENTS:
        assert fragment not in shown, fragment
    names = [r.name for r in result.tool_calls]
    assert names.count("write_file") == 3 and names[-1] == "submit"
    assert all(r.seconds >= 0 for r in result.tool_calls)


def test_a_wrong_design_that_agrees_with_its_own_model_fails_the_hidden_check(
        task, host, runner) -> None:
    agent = ScriptedAgent([
        [_write("acc.v", THREE_RTL), _write("sum3.py", THREE_MODEL)],
        [C(name="behave_self_check", arguments={"model": "sum3.py", **SELF})],
        [C(name="submit", arguments={"model": "sum3.py"})],
    ])
    result = run_episode(task, agent, host=host, runner=runner, config=CONFIG)
    (self_check,) = _results(result, "behave_self_check")
    assert self_check["verdict"] == "pass"  # consistent with itself: only B* can tell
    assert result.rtl.status == "fail" and result.model.status == "fail"
    rtl = result.rtl.result
    assert rtl.verdict == "fail" and rtl.mismatches > 0 and rtl.first_failure is not None
    assert result.model.result.verdict == "fail" and not result.unresolved


def test_the_turn_limit_judges_the_workspace_as_it_stands(task, host, runner) -> None:
    script = [[_write("rv_accum.v", GOOD_RTL)]] + [[C(name="list_files")]] * 5
    judged = run_episode(task, ScriptedAgent(script), host=host, runner=runner,
                         config=CONFIG.model_copy(update={"max_turns": 3}))
    assert judged.end_reason == "turn_limit" and judged.turns == 3
    assert not judged.submitted and judged.submission is not None
    assert not judged.submission.explicit
    assert judged.rtl.status == "pass" and judged.model.status == "missing"
    strict = run_episode(task, ScriptedAgent(script), host=host, runner=runner,
                         config=CONFIG.model_copy(update={"max_turns": 3,
                                                          "on_limit": "no_submission"}))
    assert strict.rtl.status == strict.model.status == "missing"


@pytest.mark.requires_tools("yosys", "yosys-abc")
def test_hostile_arguments_and_designs_get_typed_errors(task, host, runner) -> None:
    bad_model = "import os\n" + GOOD_MODEL
    hostile_tb = TESTBENCH.replace("$finish;", "$system(\"rm -rf /\");\n    $finish;")
    agent = ScriptedAgent([
        [_write("../../escape.v", "x"), _write("/tmp/abs.v", "x"),
         _write("big.v", "x" * (200 * 1024)), _write("rv_accum.v", HOSTILE_RTL),
         _write("model.py", bad_model), _write("tb_x.v", hostile_tb)],
        [C(name="compile", arguments={}),
         C(name="behave_self_check", arguments={"model": "model.py", **SELF}),
         C(name="synthesise", arguments={})],
        [_write("model.py", GOOD_MODEL),
         C(name="behave_self_check", arguments=SELF),
         C(name="run_testbench", arguments={"testbench": "tb_x.v"}),
         C(name="compile", arguments={"design": ["missing.v"]}),
         C(name="compile", arguments='{"design": ["rv_accum.v"'),
         C(name="run_testbench", arguments={"testbench": "../tb.v"})],
        [C(name="submit", arguments={}), C(name="list_files")],
    ])
    result = run_episode(task, agent, host=host, runner=runner, config=CONFIG)
    errors = [r.error for r in result.tool_calls]
    assert errors == [
        "bad_name", "bad_name", "too_large", None, None, None,  # writes
        "security", "model_error", "security",  # compile, self-check (model), synthesise
        None, "security", "security", "not_found", "invalid_json", "bad_name",
        None, "episode_over"]
    (bad,) = [r for r in _results(result, "behave_self_check") if not r["ok"]
              and r["error"] == "model_error"]
    assert bad["line"] == 1 and "import" in bad["summary"]
    assert result.end_reason == "submitted"
    # the hidden check refuses the design too: a fail, never a crash or infra_error
    assert result.rtl.status == "fail" and "security" in result.rtl.result.message
    assert result.model.status == "pass" and not result.unresolved


@pytest.mark.requires_tools("verilator")
def test_compile_with_verilator_reports_lint_errors_with_lines(task, host, runner) -> None:
    broken = GOOD_RTL.replace("partial <= 10'd0;\n        end", "partial <= 10'd0\n        end")
    agent = ScriptedAgent([
        [_write("rv_accum.v", broken)],
        [C(name="compile", arguments={"linter": "verilator"})],
        [_write("rv_accum.v", GOOD_RTL), C(name="compile", arguments={"linter": "verilator"})],
    ])
    result = run_episode(task, agent, host=host, runner=runner,
                         config=CONFIG.model_copy(update={"on_limit": "no_submission"}))
    first, second = _results(result, "compile")
    assert first["verdict"] == "error" and first["feedback"]
    assert any(f.get("line") for f in first["feedback"])
    assert second["verdict"] == "pass"


def test_a_design_may_include_its_own_header(task, host, runner) -> None:
    header = "`define GROUP_LAST 2'd3\n"
    rtl = '`include "acc_defs.vh"\n' + GOOD_RTL.replace("if (&count) begin",
                                                       "if (count == `GROUP_LAST) begin")
    agent = ScriptedAgent([
        [_write("acc_defs.vh", header), _write("rv_accum.v", rtl),
         C(name="compile", arguments={}), C(name="submit", arguments={})]])
    result = run_episode(task, agent, host=host, runner=runner, config=CONFIG)
    (compiled,) = _results(result, "compile")
    assert compiled["verdict"] == "pass", compiled
    assert set(result.submission.design) == {"acc_defs.vh", "rv_accum.v"}
    assert result.rtl.status == "pass", result.rtl.result
