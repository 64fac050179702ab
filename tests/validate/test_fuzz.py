"""Garbled input at every entry point: always a typed result or a typed error, never a crash."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rtlforge.core.errors import RtlforgeError, SecurityViolation, TaskFormatError
from rtlforge.core.models import Candidate, PassRule, SourceFile, Task, Verdict
from rtlforge.core.plugins import PluginHost
from rtlforge.eda.feedback import parse_iverilog, parse_verilator, parse_yosys
from rtlforge.eda.verdicts import judge
from rtlforge.sandbox.security import check_sources
from rtlforge.tasks.loader import load_task
from rtlforge.tasks.samples import load_samples
from rtlforge.validate.pipeline import Pipeline

VERILOG_WORDS = ["module", "endmodule", "input", "output", "wire", "reg", "assign", "always",
                 "@(posedge clk)", "begin", "end", "if", "else", "case", "endcase", "(", ")",
                 ";", ",", "=", "<=", "a", "b", "y", "clk", "[3:0]", "8'hff", "`define X",
                 "`X", "$display(\"x\")", "$finish;", "initial", "#1", "/*", "*/", "//", "\""]
verilogish = st.lists(st.sampled_from(VERILOG_WORDS), max_size=60).map(" ".join)
texts = st.one_of(st.text(max_size=300), verilogish,
                  st.binary(max_size=200).map(lambda b: b.decode("latin-1")))

TB = SourceFile(name="tb.v", content="""module tb;
  reg a; wire y; m dut(.a(a), .y(y));
  initial begin a = 0; #1; if (y !== a) $display("Mismatches: 1 in 1 samples");
    else $display("Mismatches: 0 in 1 samples"); $finish; end
endmodule
""")
TASK = Task(id="fuzz", spec="", top="m", testbench=(TB,))


@pytest.fixture(scope="module")
def pipeline() -> Pipeline:
    return Pipeline.build(PluginHost(), timeout=5)


@pytest.mark.tools
@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(source=texts)
def test_pipeline_gives_a_verdict_for_any_text(pipeline: Pipeline, source: str) -> None:
    report = pipeline.validate(TASK, Candidate.from_source(source))
    assert report.verdict in (Verdict.FAIL, Verdict.ERROR, Verdict.PASS, Verdict.TIMEOUT)
    if report.verdict is not Verdict.PASS:
        assert report.feedback, "a non-pass verdict must say why"


@settings(max_examples=150, deadline=None)
@given(source=texts)
def test_security_check_is_total(source: str) -> None:
    try:
        check_sources([SourceFile(name="x.v", content=source)], role="design")
    except SecurityViolation as exc:
        assert exc.line is None or exc.line >= 1


@settings(max_examples=150, deadline=None)
@given(output=texts)
def test_judge_and_parsers_are_total(output: str) -> None:
    for rule in (PassRule(), PassRule(kind="regex", pass_regex="ok", fail_regex="bad")):
        assert judge(output, rule, nonce=None).verdict in (Verdict.PASS, Verdict.FAIL,
                                                           Verdict.ERROR)
    for parse in (parse_iverilog, parse_verilator, parse_yosys):
        for fb in parse(output, stage="fuzz", files={"x.v": output}):
            assert fb.category and fb.message is not None


@settings(max_examples=100, deadline=None)
@given(toml=texts)
def test_task_loader_is_total(tmp_path_factory: pytest.TempPathFactory, toml: str) -> None:
    directory = tmp_path_factory.mktemp("task")
    (directory / "task.toml").write_text(toml, encoding="utf-8", errors="surrogateescape")
    try:
        task = load_task(directory)
    except TaskFormatError:
        return
    assert isinstance(task, Task)


@settings(max_examples=100, deadline=None)
@given(lines=st.lists(texts, max_size=5))
def test_sample_loader_is_total(tmp_path_factory: pytest.TempPathFactory,
                                lines: list[str]) -> None:
    path: Path = tmp_path_factory.mktemp("samples") / "s.jsonl"
    path.write_text("\n".join(lines), encoding="utf-8", errors="surrogateescape")
    try:
        samples = load_samples(path)
    except RtlforgeError:
        return
    assert all(isinstance(s.task_id, str) for s in samples)
