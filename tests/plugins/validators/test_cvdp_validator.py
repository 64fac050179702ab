"""The ``cvdp`` validator: a CVDP problem's own harness run in the jail on the answer's files.

Verdict logic first, on reports as the in-jail driver writes them (no tools needed): what is
the design's fault and what is the harness's. Then every fixture problem against real tools:
its reference solution passes, its input context handed back unchanged does not, and broken
harnesses (a cocotb 1 module, an import error, runner arguments of another cocotb) are
infrastructure errors, never a failed design.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

import rtlforge.plugins.validators.cvdp as cvdp_plugin
from rtlforge.core.answers import answer_files, candidate_from_answer
from rtlforge.core.errors import ExtractionError
from rtlforge.core.models import Candidate, Task, ValidationReport, Verdict
from rtlforge.core.plugins import PluginHost
from rtlforge.evaluation.evaluate import pipeline_for
from rtlforge.plugins.validators.cvdp import CvdpValidator, judge_service
from rtlforge.sandbox.runner import ToolRun
from rtlforge.tasks.cvdp import load_cvdp
from rtlforge.testing import requires_tools
from rtlforge.validate.pipeline import Pipeline

FIXTURES = Path(__file__).parents[2] / "fixtures" / "cvdp"
DATASET = FIXTURES / "cvdp_fixtures.jsonl"
RECORDS = {r["id"]: r for r in map(json.loads, DATASET.read_text().splitlines())}
SOLUTIONS = {r["id"]: r["files"] for r in
             map(json.loads, (FIXTURES / "solutions.jsonl").read_text().splitlines())}
TASKS = {t.id: t for t in load_cvdp(DATASET)}
GRAY = "cvdp_copilot_bin2gray_0001"
COUNTER = "cvdp_copilot_updown_counter_0001"


def run(**fields: Any) -> ToolRun:
    base: dict[str, Any] = {"argv": ("python",), "returncode": 0, "stdout": "", "stderr": "",
                            "seconds": 0.1}
    return ToolRun(**{**base, **fields})


def ran(exit_code: int, **fields: Any) -> dict[str, Any]:
    return {"status": "ran", "exit": exit_code, "items": {}, "failures": [],
            "collect_errors": [], "builds": [], "sims": [], "api": [], "harness": [],
            "logs": {}, **fields}


def sim(*failed: tuple[str, str], tests: int = 1) -> dict[str, Any]:
    return {"nodeid": "test_runner", "raised": "SystemExit" if failed else None, "message": "",
            "results": {"tests": tests, "failed": [
                {"name": "t", "type": kind, "message": message} for kind, message in failed]}}


def judge(report: dict[str, Any] | None, **run_fields: Any) -> tuple[Verdict, list[str]]:
    judged = judge_service("direct", report, run(**run_fields), {}, 30.0)
    return judged.verdict, [f.category for f in judged.feedback]


# ---------------------------------------------------------------- verdicts from reports


def test_a_service_that_exits_zero_passes() -> None:
    assert judge(ran(0, sims=[sim()], items={"test_runner": "passed"}))[0] is Verdict.PASS


def test_a_failing_cocotb_test_fails_the_design() -> None:
    report = ran(1, sims=[sim(("AssertionError", "gray 0011"))])
    assert judge(report) == (Verdict.FAIL, ["sim_mismatch"])
    # a port the design lacks is the design's fault, not an API problem
    missing_port = ran(1, sims=[sim(("AttributeError", "top contains no child object named x"))])
    assert judge(missing_port) == (Verdict.FAIL, ["sim_mismatch"])


def test_a_cocotb_api_the_harness_expects_is_an_infrastructure_error() -> None:
    for message in ("'Logic' object has no attribute 'integer'",
                    "module 'cocotb' has no attribute 'fork'",
                    "__init__() got an unexpected keyword argument 'units'"):
        report = ran(1, sims=[sim(("AttributeError", message))])
        assert judge(report) == (Verdict.INFRA_ERROR, ["cocotb_api"])
    bound = ran(1, api=[{"nodeid": "t", "message": "Runner.build: unexpected keyword "
                         "argument 'toplevel'"}])
    assert judge(bound) == (Verdict.INFRA_ERROR, ["cocotb_api"])
    # a real mismatch next to an API problem still says the design is wrong
    both = ran(1, sims=[sim(("AssertionError", "wrong"), ("AttributeError",
                                                          "'Logic' object has no attribute 'x'"))])
    assert judge(both)[0] is Verdict.FAIL


def test_a_design_that_does_not_compile_is_an_error() -> None:
    log = "../code/rtl/x.sv:3: syntax error\n"
    report = ran(1, builds=[{"nodeid": "t", "ok": False, "message": "Command failed", "log": log}])
    verdict, categories = judge(report)
    assert verdict is Verdict.ERROR and categories == ["syntax"]


@pytest.mark.parametrize(("report", "category"), [
    ({"status": "missing", "message": "No module named 'cocotb_tools'"}, "tool_missing"),
    ({"status": "harness_error", "cocotb_api": True, "message": "No module named "
      "'cocotb.binary'"}, "cocotb_api"),
    ({"status": "harness_error", "cocotb_api": False, "message": "x"}, "harness"),
    ({"status": "driver_error", "message": "KeyError"}, "infra"),
    ({"status": "layout_failed", "message": "disk full"}, "infra"),
    (ran(2, collect_errors=[{"nodeid": "t", "message": "No module named 'numpy'"}]), "harness"),
    (ran(5), "harness"),
    (ran(1, failures=[{"nodeid": "t", "when": "call", "type": "ModuleNotFoundError",
                       "message": "x", "import_error": True}]), "harness"),
    (ran(1, harness=[{"nodeid": "t", "message": "Runner.test: ValueError: no toplevel"}]),
     "harness"),
    (None, "infra"),
])
def test_a_harness_that_cannot_run_is_never_a_design_verdict(report: dict[str, Any] | None,
                                                              category: str) -> None:
    verdict, categories = judge(report)
    assert verdict is Verdict.INFRA_ERROR and categories[0] == category


def test_a_failed_check_of_the_harness_fails_the_design_with_its_log() -> None:
    report = ran(1, failures=[{"nodeid": "test_lint", "when": "call", "type": "AssertionError",
                               "message": "lint warnings", "import_error": False}],
                 logs={"lint_results.log": "%Warning-WIDTH: rtl/x.sv:3:1: ..."})
    assert judge(report) == (Verdict.FAIL, ["check_failed", "check_log"])


def test_what_the_design_prints_cannot_change_the_verdict() -> None:
    # the service's output is shared with the simulated design: only the report decides
    printed = "ModuleNotFoundError: No module named 'cocotb.binary'\n1 passed"
    report = ran(1, sims=[sim(("AssertionError", "wrong"))])
    assert judge(report, stdout=printed)[0] is Verdict.FAIL
    assert judge(None, stdout="PASSED")[0] is Verdict.INFRA_ERROR
    assert judge(ran(0), timed_out=True)[0] is Verdict.TIMEOUT
    assert judge(ran(0), output_overflow=True)[0] is Verdict.FAIL


# ---------------------------------------------------------------- against real tools


def host_with_cvdp() -> PluginHost:
    host = PluginHost()
    if "cvdp" not in host.names("validator"):  # a checkout used through PYTHONPATH
        host.add_plugin(cvdp_plugin, name="cvdp")
    return host


@pytest.fixture(scope="module")
def pipeline() -> Any:
    built = Pipeline([CvdpValidator()], timeout=120)
    yield built
    built.runner.close()


def answer(task: Task, files: dict[str, str]) -> Candidate:
    return candidate_from_answer(files, answer_files(task), task_id=task.id)


def validate(pipeline: Pipeline, task: Task, files: dict[str, str]) -> ValidationReport:
    return pipeline.validate(task, answer(task, files))


def stage_messages(report: ValidationReport) -> str:
    return "\n".join(f"{f.category}: {f.message}" for f in report.feedback)


def broken(tmp_path: Path, edit: Any, task_id: str = GRAY) -> Task:
    """The fixture problem with its harness files changed by ``edit``."""
    record = copy.deepcopy(RECORDS[task_id])
    edit(record["harness"]["files"])
    path = tmp_path / "broken.jsonl"
    path.write_text(json.dumps(record) + "\n")
    return load_cvdp(path)[0]


@pytest.mark.tools
@requires_tools("iverilog", "vvp", "verilator", "yosys")
@pytest.mark.parametrize("task_id", sorted(RECORDS))
def test_the_reference_solution_passes(pipeline: Pipeline, task_id: str) -> None:
    report = validate(pipeline, TASKS[task_id], SOLUTIONS[task_id])
    assert report.verdict is Verdict.PASS, stage_messages(report)
    services = report.stages[-1].metrics["services"]
    wanted = [s for s in ("direct", "lint", "synth") if f"  {s}:" in
              RECORDS[task_id]["harness"]["files"]["docker-compose.yml"]]
    assert list(services) == wanted


@pytest.mark.tools
@requires_tools("iverilog", "vvp", "verilator", "yosys")
@pytest.mark.parametrize(("task_id", "category"), [
    ("cvdp_copilot_parity_gen_0001", "sim_mismatch"),     # the skeleton drives 0
    ("cvdp_copilot_updown_counter_0001", "sim_mismatch"),  # no `down` port yet
    ("cvdp_copilot_mux4_lint_0001", "check_failed"),       # simulates, but lints dirty
    ("cvdp_copilot_max4_qor_0001", "check_failed"),        # simulates, no area gain
    ("cvdp_copilot_bin2gray_0001", "sim_mismatch"),        # the bug is still there
])
def test_the_input_context_handed_back_unchanged_fails(pipeline: Pipeline, task_id: str,
                                                       category: str) -> None:
    report = validate(pipeline, TASKS[task_id], RECORDS[task_id]["input"]["context"])
    assert report.verdict is Verdict.FAIL, stage_messages(report)
    assert report.feedback[0].category == category


def test_a_problem_without_context_has_nothing_to_hand_back() -> None:
    task = TASKS["cvdp_copilot_sat_adder_0001"]
    assert set(RECORDS[task.id]["input"]["context"]) == {"docs/spec.md"}
    with pytest.raises(ExtractionError, match="none of the files"):
        answer(task, RECORDS[task.id]["input"]["context"])


@pytest.mark.tools
@requires_tools("iverilog", "vvp")
def test_an_answer_missing_a_file_fails_with_that_reason(pipeline: Pipeline) -> None:
    task = TASKS[COUNTER]
    report = validate(pipeline, task, {"rtl/counter.sv": SOLUTIONS[COUNTER]["rtl/counter.sv"]})
    assert report.verdict is Verdict.FAIL
    (finding,) = report.feedback
    assert finding.category == "missing_file" and "rtl/counter_top.sv" in finding.message


@pytest.mark.tools
@requires_tools("iverilog", "vvp")
def test_a_design_that_does_not_compile_is_an_error_pointing_at_its_file(
        pipeline: Pipeline) -> None:
    task = TASKS[GRAY]
    text = SOLUTIONS[GRAY]["rtl/bin2gray.sv"].replace("assign gray", "assign gray =;")
    report = validate(pipeline, task, {"rtl/bin2gray.sv": text})
    assert report.verdict is Verdict.ERROR, stage_messages(report)
    assert report.feedback[0].file == "bin2gray.sv" and report.feedback[0].line == 7


@pytest.mark.tools
@requires_tools("iverilog", "vvp")
@pytest.mark.parametrize(("name", "edit", "category"), [
    ("a cocotb 1 module", lambda f: f.update({"src/test_bin2gray.py": "from cocotb.binary "
                                              "import BinaryValue\n" + f["src/test_bin2gray.py"]}),
     "cocotb_api"),
    ("a cocotb 1 value API", lambda f: f.update({"src/test_bin2gray.py": f[
        "src/test_bin2gray.py"].replace("int(dut.gray.value) ==", "dut.gray.value[0].integer ==")}),
     "cocotb_api"),
    ("cocotb 1.7 runner arguments", lambda f: f.update({"src/test_runner.py": f[
        "src/test_runner.py"].replace("hdl_toplevel=toplevel, always", "toplevel=toplevel, "
                                      "always")}), "cocotb_api"),
    ("an import the harness lacks", lambda f: f.update({"src/test_runner.py": "import numpy_x\n"
                                                        + f["src/test_runner.py"]}), "harness"),
])
def test_a_broken_harness_is_an_infrastructure_error(pipeline: Pipeline, tmp_path: Path,
                                                     name: str, edit: Any,
                                                     category: str) -> None:
    task = broken(tmp_path, edit)
    report = validate(pipeline, task, SOLUTIONS[GRAY])
    assert report.verdict is Verdict.INFRA_ERROR, f"{name}: {stage_messages(report)}"
    assert report.feedback[0].category == category, stage_messages(report)


@pytest.mark.tools
@requires_tools("iverilog", "vvp")
def test_cocotb_1_runner_names_run(pipeline: Pipeline) -> None:
    # the parity problem imports `from cocotb.runner import get_runner` and passes
    # verilog_sources=: both run on cocotb 2 (alias and deprecated argument)
    assert "from cocotb.runner import get_runner" in RECORDS["cvdp_copilot_parity_gen_0001"][
        "harness"]["files"]["src/test_runner.py"]
    report = validate(pipeline, TASKS["cvdp_copilot_parity_gen_0001"],
                      SOLUTIONS["cvdp_copilot_parity_gen_0001"])
    assert report.verdict is Verdict.PASS, stage_messages(report)


@pytest.mark.tools
@requires_tools("iverilog", "vvp")
def test_harness_code_runs_in_the_jail(pipeline: Pipeline, tmp_path: Path) -> None:
    # a host file the harness names is not there; the run directory and /code paths are
    probe = (f"import os\nassert not os.path.exists({str(DATASET)!r}), 'host file visible'\n"
             "assert os.path.isfile('/code/rtl/bin2gray.sv'), 'answer not laid out'\n"
             "assert os.getcwd().endswith('/code/rundir'), os.getcwd()\n")
    task = broken(tmp_path, lambda f: f.update({"src/test_runner.py": probe
                                                + f["src/test_runner.py"]}))
    report = validate(pipeline, task, SOLUTIONS[GRAY])
    assert report.verdict is Verdict.PASS, stage_messages(report)


@pytest.mark.tools
@requires_tools("iverilog", "vvp")
def test_pipeline_for_cvdp_tasks_runs_only_their_harness() -> None:
    built = pipeline_for(host_with_cvdp(), TASKS.values(), timeout=120)
    try:
        assert [v.name for v in built.validators] == ["cvdp"]
        report = built.validate(TASKS[GRAY], answer(TASKS[GRAY], SOLUTIONS[GRAY]))
        assert report.verdict is Verdict.PASS
        assert [s.name for s in report.stages] == ["security", "cvdp"]
    finally:
        built.runner.close()


@pytest.mark.tools
@requires_tools("iverilog", "vvp")
def test_a_harness_needing_a_tool_not_installed_is_an_infrastructure_error(
        pipeline: Pipeline, tmp_path: Path) -> None:
    # a commercial simulator this machine lacks: the harness cannot run, so no design verdict
    task = broken(tmp_path, lambda f: f.update({"src/test_runner.py": f["src/test_runner.py"]
                                                + "\n# rerun with: xrun -f files.f\n"}))
    report = validate(pipeline, task, SOLUTIONS[GRAY])
    assert report.verdict is Verdict.INFRA_ERROR
    assert report.feedback[0].category == "tool_missing" and "xrun" in report.feedback[0].message


def test_pipeline_for_takes_the_cvdp_options_given() -> None:
    built = pipeline_for(host_with_cvdp(), TASKS.values(),
                         extra=[("cvdp", {"timeout": 321.0})])
    try:
        [validator] = built.validators
        assert isinstance(validator, CvdpValidator) and validator.timeout == 321.0
    finally:
        built.runner.close()


@pytest.mark.tools
@requires_tools("iverilog", "vvp")
def test_eval_checks_the_golden_of_a_record_with_its_solution(pipeline: Pipeline,
                                                              tmp_path: Path) -> None:
    from rtlforge.evaluation.golden import GoldenCheck

    good = copy.deepcopy(RECORDS[GRAY])
    good["output"]["context"] = SOLUTIONS[GRAY]
    wrong = copy.deepcopy(good)
    wrong["id"] = "cvdp_copilot_bin2gray_0002"
    wrong["output"]["context"] = RECORDS[GRAY]["input"]["context"]  # the buggy input
    path = tmp_path / "with_solutions.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps(wrong) + "\n")
    checker = GoldenCheck(pipeline)
    verdicts = {t.id: checker.check(t) for t in load_cvdp(path)}
    assert verdicts[GRAY].usable and verdicts[GRAY].verdict == "pass"
    assert not verdicts["cvdp_copilot_bin2gray_0002"].usable


def test_a_test_module_the_harness_cannot_find_is_not_the_design_s_fault() -> None:
    no_results = {"nodeid": "t", "results": None, "raised": "RuntimeError",
                  "message": "Simulation terminated abnormally"}
    assert judge(ran(1, sims=[no_results], unfound=["test_x"])) == (Verdict.INFRA_ERROR,
                                                                   ["harness"])
    # with the module found, a simulation that stops without results is the design's run
    assert judge(ran(1, sims=[no_results])) == (Verdict.FAIL, ["no_verdict"])
    fixture = ran(1, failures=[{"nodeid": "t", "when": "setup", "type": "KeyError",
                                "message": "'WIDTH'", "import_error": False}])
    assert judge(fixture) == (Verdict.INFRA_ERROR, ["harness"])


@pytest.mark.tools
@requires_tools("iverilog", "vvp")
def test_a_test_module_named_only_in_the_runner_is_imported_first(pipeline: Pipeline,
                                                                  tmp_path: Path) -> None:
    # MODULE unset: the runner names the module itself; a cocotb 1 import in it is still
    # caught before any design runs
    def edit(files: dict[str, str]) -> None:
        files["src/.env"] = files["src/.env"].replace("MODULE          = test_bin2gray\n", "")
        assert "MODULE" not in files["src/.env"]
        files["src/test_runner.py"] = files["src/test_runner.py"].replace(
            'os.environ["MODULE"]', '"test_bin2gray"')
        files["src/test_bin2gray.py"] = "from cocotb.result import TestFailure\n" + files[
            "src/test_bin2gray.py"]

    report = validate(pipeline, broken(tmp_path, edit), SOLUTIONS[GRAY])
    assert report.verdict is Verdict.INFRA_ERROR, stage_messages(report)
    assert report.feedback[0].category == "cocotb_api", stage_messages(report)


@pytest.mark.tools
@requires_tools("iverilog", "vvp")
def test_a_design_that_never_lets_time_advance_times_out() -> None:
    # zero-delay toggling: simulation time stays at 0, so no cocotb test ever ends
    loop = "    logic osc;\n    initial begin osc = 1'b0; forever #0 osc = ~osc; end\n"
    hang = SOLUTIONS[GRAY]["rtl/bin2gray.sv"].replace("    assign gray", loop + "    assign gray")
    short = Pipeline([CvdpValidator(timeout=6)], timeout=6)
    try:
        report = validate(short, TASKS[GRAY], {"rtl/bin2gray.sv": hang})
    finally:
        short.runner.close()
    assert report.verdict is Verdict.TIMEOUT, stage_messages(report)
