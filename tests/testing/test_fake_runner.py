"""rtlforge.testing's builders and FakeRunner, used the way a plugin author would: on the
built-in Icarus validators (their verdict logic, with scripted tool output) and, with the real
tools, on a generated testbench whose verdicts are known from the vectors."""

from __future__ import annotations

from pathlib import Path

import pytest

from rtlforge.core.errors import ToolMissingError
from rtlforge.core.models import Port, Verdict
from rtlforge.core.plugins import PluginHost
from rtlforge.plugins.validators import iverilog
from rtlforge.plugins.validators.iverilog import IverilogLint, IverilogSim
from rtlforge.testing import (
    FakeRunner,
    ScriptedRun,
    UnscriptedToolError,
    make_candidate,
    make_context,
    make_plugin_host,
    make_task,
    parse_port,
    requires_tools,
)
from rtlforge.validate.pipeline import Pipeline

AND2 = ["input a", "input b", "output y"]
AND2_VECTORS = [{"a": a, "b": b, "y": a & b} for a in (0, 1) for b in (0, 1)]
GOOD = "module and2(input a, input b, output y);\n  assign y = a & b;\nendmodule\n"
WRONG = "module and2(input a, input b, output y);\n  assign y = a | b;\nendmodule\n"


# ------------------------------------------------------------------------------ builders


@pytest.mark.parametrize(("text", "port"), [
    ("input a", Port(name="a", direction="input")),
    ("output [7:0] y", Port(name="y", direction="output", width=8)),
    ("input signed [3:0] b", Port(name="b", direction="input", width=4, signed=True)),
    ("output reg [0:3] q", Port(name="q", direction="output", width=4)),
    ("inout wire x", Port(name="x", direction="inout")),
])
def test_parse_port_reads_verilog_declarations(text: str, port: Port) -> None:
    assert parse_port(text) == port


def test_parse_port_refuses_what_it_cannot_read() -> None:
    with pytest.raises(ValueError, match="input \\[7:0\\] a"):
        parse_port("wire [7:0] a")


def test_make_task_from_ports_and_vectors() -> None:
    task = make_task("and2", ports=AND2, vectors=AND2_VECTORS, golden=GOOD)
    assert (task.id, task.top, task.testbench_top) == ("and2", "and2", "tb")
    assert [p.name for p in task.ports] == ["a", "b", "y"]
    assert task.spec == "Implement module and2(input a, input b, output y)."
    assert [f.name for f in task.testbench] == ["tb.v"]
    assert "Mismatches: %0d in 4 samples" in task.testbench[0].content
    assert task.golden[0].content == GOOD


@pytest.mark.parametrize(("vectors", "message"), [
    ([{"a": 1, "y": 1}], "inputs not driven \\['b'\\]"),
    ([{"a": 1, "b": 1, "z": 1}], "unknown ports \\['z'\\]"),
    ([{"a": 1, "b": 1}], "check nothing"),
    ([{"a": 2, "b": 0, "y": 0}], "does not fit port 'a'"),
])
def test_make_task_refuses_bad_vectors(vectors: list[dict[str, int]], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make_task("and2", ports=AND2, vectors=vectors)


def test_make_candidate_from_text_or_files() -> None:
    assert make_candidate(GOOD).files[0].name == "design.v"
    two = make_candidate({"top.v": GOOD, "defs.vh": "`define W 8\n"}, top="and2")
    assert [f.name for f in two.files] == ["top.v", "defs.vh"] and two.top == "and2"


def test_make_plugin_host_ignores_entry_points_and_the_shell(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RTLFORGE_PLUGINS_BLOCK", "iverilog")
    monkeypatch.setenv("RTLFORGE_PLUGINS_ALLOW", "something-else")
    host = make_plugin_host(iverilog)
    assert isinstance(host, PluginHost)
    assert host.names("validator") == ["iverilog-lint", "iverilog-sim"]
    assert host.names("generator") == []  # no built-in came in through an entry point
    assert [i.name for i in host.describe()] == ["rtlforge.plugins.validators.iverilog"]


# ------------------------------------------------------------------------------ FakeRunner


def test_lint_verdict_from_scripted_icarus_output(fake_runner: FakeRunner) -> None:
    fake_runner.script["iverilog"] = ScriptedRun(
        returncode=1, stderr="design.v:2: syntax error\nI give up.\n")
    task = make_task("and2", ports=AND2)  # no testbench: the design is compiled alone
    ctx = make_context(task, make_candidate("module and2(input a);\n  assign = ;\nendmodule\n"),
                       fake_runner, timeout=7.0)
    result = IverilogLint().validate(ctx)
    assert result.verdict is Verdict.ERROR
    (fb,) = [f for f in result.feedback if f.severity == "error"]
    assert (fb.file, fb.line) == ("design.v", 2)
    (call,) = fake_runner.calls
    assert call.tool == "iverilog" and call.cwd == ctx.workdir and call.timeout == 7.0
    assert call.spec is not None and call.spec.name == "iverilog"  # the tool it declared
    assert call.argv[-1] == "design.v"
    assert call.argv[call.argv.index("-s") + 1] == "and2"
    assert fake_runner.put_names("design") == ["design.v"]
    assert (ctx.workdir / "design.v").read_text().startswith("module and2")


@pytest.mark.parametrize(("stdout", "verdict"), [
    ("Mismatches: 0 in 4 samples\n", Verdict.PASS),
    ("FAIL vector 3: a=1, b=1 gives y=0, expected 1'd1\nMismatches: 1 in 4 samples\n",
     Verdict.FAIL),
    ("nothing the testbench would say\n", Verdict.FAIL),
])
def test_sim_verdict_from_scripted_output(fake_runner: FakeRunner, stdout: str,
                                          verdict: Verdict) -> None:
    fake_runner.script.update(iverilog=ScriptedRun(), vvp=[ScriptedRun(stdout=stdout)])
    ctx = make_context(make_task("and2", ports=AND2, vectors=AND2_VECTORS),
                       make_candidate(GOOD), fake_runner)
    result = IverilogSim().validate(ctx)
    assert result.verdict is verdict
    assert fake_runner.tools == ["iverilog", "vvp"]
    assert fake_runner.put_names("testbench") == ["tb.v"]
    assert {"design.v", "tb.v"} <= set(fake_runner.argvs[0])


def test_unscripted_or_exhausted_tools_fail_the_test(fake_runner: FakeRunner) -> None:
    ctx = make_context(make_task("and2", ports=AND2, vectors=AND2_VECTORS),
                       make_candidate(GOOD), fake_runner)
    with pytest.raises(UnscriptedToolError, match="'iverilog'"):
        IverilogSim().validate(ctx)
    fake_runner.script.update(iverilog=ScriptedRun(), vvp=[])
    with pytest.raises(UnscriptedToolError, match="'vvp' ran 1 times"):
        IverilogSim().validate(ctx)


def test_scripted_files_exceptions_and_functions(tmp_path: Path) -> None:
    runner = FakeRunner({
        "yosys": ScriptedRun(files={"yosys.log": "Number of cells: 3\n"}),
        "sta": ScriptedRun(raises=ToolMissingError("sta", "install OpenSTA")),
        "echo": lambda call: ScriptedRun(stdout=" ".join(call.argv[1:])),
    }, base_dir=tmp_path)
    with runner.workspace() as work:
        assert runner.run(["yosys", "-l", "yosys.log"], work).ok
        assert (work / "yosys.log").read_text() == "Number of cells: 3\n"
        assert runner.run(["/bin/echo", "hi", "there"], work, env={"X": "1"}).stdout == "hi there"
        with pytest.raises(ToolMissingError):
            runner.run(["sta"], work)
    assert runner.tools == ["yosys", "echo", "sta"]
    assert runner.calls[1].env == {"X": "1"}
    assert work.is_relative_to(tmp_path)


def test_a_pipeline_runs_on_the_fake_runner(fake_runner: FakeRunner) -> None:
    fake_runner.script.update(iverilog=ScriptedRun(), vvp=ScriptedRun(stdout="no verdict"))
    report = Pipeline([IverilogSim()], runner=fake_runner).validate(  # type: ignore[arg-type]
        make_task("and2", ports=AND2, vectors=AND2_VECTORS), make_candidate(GOOD))
    assert [(s.name, s.verdict) for s in report.stages] == [
        ("security", Verdict.PASS), ("iverilog-sim", Verdict.FAIL)]
    assert fake_runner.tools == ["iverilog", "vvp"]


# ------------------------------------------------------------------------------ real tools


@pytest.mark.tools
@requires_tools("iverilog", "vvp")
def test_generated_testbench_judges_designs_with_icarus() -> None:
    host = make_plugin_host(iverilog)
    pipeline = Pipeline.build(host, timeout=30)
    task = make_task("and2", ports=AND2, vectors=AND2_VECTORS, golden=GOOD)
    good = pipeline.validate(task, make_candidate(GOOD))
    assert good.verdict is Verdict.PASS, good.to_summary()
    wrong = pipeline.validate(task, make_candidate(WRONG))
    assert wrong.verdict is Verdict.FAIL
    # a | b differs from a & b on (0, 1) and (1, 0): vectors 1 and 2
    text = "\n".join(f.message + (f.context or "") for f in wrong.feedback)
    assert "FAIL vector 1" in text and "FAIL vector 2" in text
    assert "FAIL vector 0" not in text and "FAIL vector 3" not in text
