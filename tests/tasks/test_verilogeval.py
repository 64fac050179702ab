"""VerilogEval v2 as distributed: the loader, its refusals, the pass rule, and runs end to end.

The fixtures under ``fixtures/verilogeval/`` are written for these tests in exactly the v2
layout (``ProbNNN_name_{prompt.txt,ref.sv,test.sv}``, a ``tb`` that drives ``RefModule`` and
``TopModule`` with one stimulus and prints ``Mismatches: N in M samples``); the expected
verdicts come from what each design computes, worked out by hand.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from rtlforge.core.errors import TaskFormatError
from rtlforge.core.models import Verdict
from rtlforge.eda.modules import declared_modules
from rtlforge.eda.verdicts import judge
from rtlforge.tasks.verilogeval import (
    PASS_RULE,
    find_dataset,
    is_verilogeval,
    load_verilogeval,
    scan_verilogeval,
)

FIXTURES = Path(__file__).parent / "fixtures" / "verilogeval"
SPEC_TO_RTL = FIXTURES / "dataset_spec-to-rtl"
CODE_COMPLETE = FIXTURES / "dataset_code-complete-iccad2023"

XOR_OK = "module TopModule(input a, input b, output out);\n  assign out = a ^ b;\nendmodule\n"
XOR_WRONG = "module TopModule(input a, input b, output out);\n  assign out = a | b;\nendmodule\n"
XOR_BROKEN = "module TopModule(input a, input b, output out);\n  assign out = a ^ ;\nendmodule\n"
COUNT_OK = """module TopModule(input clk, input reset, output logic [3:0] q);
  always @(posedge clk) q <= reset ? 4'd0 : q + 4'd1;
endmodule
"""


def copy_dataset(dest: Path, source: Path = SPEC_TO_RTL) -> Path:
    shutil.copytree(source, dest)
    return dest


# --------------------------------------------------------------------------------------------
# loading
# --------------------------------------------------------------------------------------------


def test_fixture_problems_become_tasks() -> None:
    tasks = load_verilogeval(FIXTURES)
    assert [t.id for t in tasks] == ["Prob001_xor2", "Prob002_count4"]
    xor = tasks[0]
    assert xor.top == "TopModule" and xor.testbench_top == "tb"
    assert xor.spec == (SPEC_TO_RTL / "Prob001_xor2_prompt.txt").read_text()
    # the reference is compiled with the testbench, after it (the official compile order)
    assert [f.name for f in xor.testbench] == ["Prob001_xor2_test.sv", "Prob001_xor2_ref.sv"]
    assert xor.testbench[1].content == (SPEC_TO_RTL / "Prob001_xor2_ref.sv").read_text()
    assert xor.support == ()
    assert xor.pass_rule == PASS_RULE and xor.category == "spec-to-rtl"
    assert xor.metadata == {
        "source": "verilogeval-v2", "dataset": "spec-to-rtl", "problem_number": 1,
        "reference_file": "Prob001_xor2_ref.sv", "reference_module": "RefModule",
    }


def test_golden_is_the_reference_renamed_to_topmodule() -> None:
    for task in load_verilogeval(FIXTURES):
        (golden,) = task.golden
        reference = (SPEC_TO_RTL / f"{task.id}_ref.sv").read_text()
        assert declared_modules(golden.content) == ["TopModule"]
        assert golden.content == reference.replace("module RefModule", "module TopModule")
        assert golden.name == f"{task.id}_golden.sv"


@pytest.mark.parametrize("where", ["checkout", "dataset", "loose"])
def test_accepts_a_checkout_a_dataset_folder_or_loose_files(tmp_path: Path, where: str) -> None:
    if where == "checkout":
        path = FIXTURES
    elif where == "dataset":
        path = SPEC_TO_RTL
    else:
        path = copy_dataset(tmp_path / "some_folder")
    assert is_verilogeval(path)
    assert [t.id for t in load_verilogeval(path)] == ["Prob001_xor2", "Prob002_count4"]


def test_code_complete_dataset_keeps_the_interface() -> None:
    (task,) = load_verilogeval(FIXTURES, dataset="code-complete-iccad2023")
    assert task.id == "Prob001_xor2" and task.category == "code-complete-iccad2023"
    assert task.metadata["interface"] == (CODE_COMPLETE / "Prob001_xor2_ifc.txt").read_text()
    assert find_dataset(CODE_COMPLETE, "code-complete-iccad2023") == CODE_COMPLETE


def test_missing_file_is_reported_not_crashed(tmp_path: Path) -> None:
    folder = copy_dataset(tmp_path / "dataset_spec-to-rtl")
    (folder / "Prob002_count4_test.sv").unlink()
    scan = scan_verilogeval(tmp_path)
    assert [t.id for t in scan.tasks] == ["Prob001_xor2"]
    (skipped,) = scan.skipped
    assert skipped.problem == "Prob002_count4"
    assert "missing Prob002_count4_test.sv" in skipped.reason
    with pytest.raises(TaskFormatError, match=r"missing Prob002_count4_test\.sv"):
        load_verilogeval(tmp_path)
    assert [t.id for t in load_verilogeval(tmp_path, skip_incomplete=True)] == ["Prob001_xor2"]


def test_reference_without_refmodule_is_skipped_with_the_reason(tmp_path: Path) -> None:
    folder = copy_dataset(tmp_path / "ds")
    ref = folder / "Prob001_xor2_ref.sv"
    ref.write_text(ref.read_text().replace("RefModule", "SomethingElse"))
    (skipped,) = scan_verilogeval(folder).skipped
    assert skipped.problem == "Prob001_xor2"
    assert "does not declare module RefModule" in skipped.reason


def test_unreadable_file_is_reported(tmp_path: Path) -> None:
    folder = copy_dataset(tmp_path / "ds")
    (folder / "Prob001_xor2_prompt.txt").write_bytes(b"\xff\xfe not utf-8")
    (skipped,) = scan_verilogeval(folder).skipped
    assert skipped.problem == "Prob001_xor2" and "not UTF-8" in skipped.reason


def test_problems_txt_selects_and_reports_listed_problems(tmp_path: Path) -> None:
    folder = copy_dataset(tmp_path / "ds")
    (folder / "problems.txt").write_text("Prob002_count4\n\nProb099_absent\n")
    scan = scan_verilogeval(folder)
    assert [t.id for t in scan.tasks] == ["Prob002_count4"]
    assert [s.problem for s in scan.skipped] == ["Prob099_absent"]


def test_a_folder_that_is_not_verilogeval_is_refused(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello")
    assert not is_verilogeval(tmp_path)
    with pytest.raises(TaskFormatError, match="not a VerilogEval v2 checkout"):
        load_verilogeval(tmp_path)
    with pytest.raises(TaskFormatError, match="does not exist"):
        load_verilogeval(tmp_path / "nowhere")


# --------------------------------------------------------------------------------------------
# the pass rule: scripts/sv-iv-analyze passes a log only on "Mismatches: 0 in M samples"
# without a TIMEOUT or "error" line
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("output", "verdict"), [
    ("Hint: Output 'out' has no mismatches.\nMismatches: 0 in 67 samples\n", Verdict.PASS),
    ("Hint: Output 'out' has 3 mismatches.\nMismatches: 3 in 67 samples\n", Verdict.FAIL),
    ("TIMEOUT\nMismatches: 0 in 12 samples\n", Verdict.FAIL),
    ("an error occurred\nMismatches: 0 in 12 samples\n", Verdict.FAIL),
    ("Simulation finished at 10 ps\n", Verdict.FAIL),  # no count at all
])
def test_pass_rule_follows_the_official_analysis(output: str, verdict: Verdict) -> None:
    assert judge(output, PASS_RULE, nonce=None).verdict is verdict


# --------------------------------------------------------------------------------------------
# the CLI picks the format
# --------------------------------------------------------------------------------------------


def test_load_task_map_detects_the_layout_and_takes_the_explicit_name(tmp_path: Path) -> None:
    from rtlforge.cmdline import load_task_map

    assert sorted(load_task_map(FIXTURES, "auto")) == ["Prob001_xor2", "Prob002_count4"]
    assert sorted(load_task_map(SPEC_TO_RTL, "verilogeval")) == ["Prob001_xor2",
                                                                 "Prob002_count4"]


def test_every_entry_point_reads_a_checkout_alike(tmp_path: Path) -> None:
    # The library's load_tasks, a reward's task lookup and the CLI decide a folder's layout in
    # one place: a VerilogEval checkout gave [] from rtlforge.load_tasks while --tasks worked.
    import rtlforge
    from rtlforge.cmdline import load_task_map
    from rtlforge.rewards.columns import resolve_tasks
    from rtlforge.tasks.loader import find_tasks

    expected = ["Prob001_xor2", "Prob002_count4"]
    assert [t.id for t in rtlforge.load_tasks(FIXTURES)] == expected
    assert find_tasks(FIXTURES).format == "verilogeval"
    lookup = resolve_tasks(FIXTURES)
    assert [getattr(lookup(i), "id", None) for i in expected] == expected
    assert sorted(load_task_map(FIXTURES, "auto")) == expected
    with pytest.raises(TaskFormatError, match=r"looked for suite.*rtllm.*verilogeval"):
        rtlforge.load_tasks(tmp_path)


def test_cli_help_names_the_format() -> None:
    from rtlforge.cli import cli

    text = CliRunner().invoke(cli, ["eval", "--help"]).output
    assert "verilogeval" in text and "VerilogEval v2" in text


# --------------------------------------------------------------------------------------------
# with the real simulator
# --------------------------------------------------------------------------------------------


def _validate(task_id: str, source: str) -> Any:
    from rtlforge.core.models import Candidate
    from rtlforge.core.plugins import PluginHost
    from rtlforge.validate.pipeline import Pipeline

    task = {t.id: t for t in load_verilogeval(FIXTURES)}[task_id]
    pipeline = Pipeline.build(PluginHost.default(), simulator="icarus", timeout=60)
    return pipeline.validate(task, Candidate.from_source(source, name="TopModule.sv"))


def _messages(report: Any) -> str:
    return "\n".join(f.message for f in report.feedback)


@pytest.mark.tools
@pytest.mark.parametrize(("task_id", "source"), [("Prob001_xor2", XOR_OK),
                                                 ("Prob002_count4", COUNT_OK)])
def test_a_correct_design_passes(task_id: str, source: str) -> None:
    report = _validate(task_id, source)
    assert report.verdict is Verdict.PASS, _messages(report)


@pytest.mark.tools
def test_every_golden_passes_its_own_testbench() -> None:
    for task in load_verilogeval(FIXTURES):
        report = _validate(task.id, task.golden[0].content)
        assert report.verdict is Verdict.PASS, (task.id, _messages(report))


@pytest.mark.tools
def test_a_wrong_design_fails_with_the_mismatch_count() -> None:
    report = _validate("Prob001_xor2", XOR_WRONG)
    assert report.verdict is Verdict.FAIL
    # a | b differs from a ^ b only when both are 1; the fixture drives 11 once in the sweep
    # and then random pairs, so some but not all samples mismatch
    counts = re.findall(r"Mismatches: (\d+) in (\d+) samples", _messages(report))
    assert len(counts) == 1
    wrong, total = map(int, counts[0])
    assert 0 < wrong < total
    # the summary decides the verdict; the failing check is read from the testbench's hint line
    [check] = [m for f in report.feedback for m in f.mismatches]
    assert check.signal == "out" and check.count == wrong and check.time is not None


@pytest.mark.tools
def test_a_broken_design_is_a_compile_error() -> None:
    assert _validate("Prob001_xor2", XOR_BROKEN).verdict is Verdict.ERROR


@pytest.mark.tools
def test_a_design_wrapping_the_reference_is_refused() -> None:
    wrapper = ("module TopModule(input a, input b, output out);\n"
               "  RefModule r(.a(a), .b(b), .out(out));\nendmodule\n")
    report = _validate("Prob001_xor2", wrapper)
    assert report.verdict is Verdict.FAIL and "RefModule" in _messages(report)


@pytest.mark.tools
def test_cli_eval_on_the_fixture_reports_pass_at_1(tmp_path: Path) -> None:
    from rtlforge.cli import cli

    answer = "[BEGIN]\n{}[DONE]\n"  # the enclosure the spec-to-rtl prompt asks for
    samples = tmp_path / "samples.jsonl"
    samples.write_text("".join(json.dumps(s) + "\n" for s in [
        {"task_id": "Prob001_xor2", "completion": answer.format(XOR_OK)},
        {"task_id": "Prob001_xor2", "completion": answer.format(XOR_WRONG)},
        {"task_id": "Prob001_xor2", "completion": answer.format(XOR_BROKEN)},
        {"task_id": "Prob002_count4", "completion": answer.format(COUNT_OK)},
    ]))
    result = CliRunner().invoke(cli, ["eval", str(samples), "--tasks", str(FIXTURES), "-k", "1",
                                      "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    # pass@1 per task is c/n: 1/3 for the xor, 1/1 for the counter; the mean over tasks
    assert summary["pass_at_k"]["pass@1"] == pytest.approx((1 / 3 + 1) / 2, abs=1e-4)
    assert summary["verdicts"] == {"pass": 2, "fail": 1, "error": 1}


@pytest.mark.tools
def test_cli_eval_warns_about_a_skipped_problem(tmp_path: Path) -> None:
    from rtlforge.cli import cli

    folder = copy_dataset(tmp_path / "dataset_spec-to-rtl")
    (folder / "Prob002_count4_ref.sv").unlink()
    samples = tmp_path / "samples.jsonl"
    samples.write_text(json.dumps({"task_id": "Prob001_xor2", "completion": XOR_OK}) + "\n")
    result = CliRunner().invoke(cli, ["eval", str(samples), "--tasks", str(tmp_path), "-k", "1",
                                      "--json"])
    assert result.exit_code == 0, result.output
    assert "skipped" in result.stderr and "Prob002_count4_ref.sv" in result.stderr
    assert json.loads(result.stdout.strip().splitlines()[-1])["pass_at_k"]["pass@1"] == 1.0


@pytest.fixture
def with_replay(monkeypatch: pytest.MonkeyPatch) -> Any:
    """The CLI with explore's commands and the replay generator (whatever the installed entry
    points say), as tests/explore sets it up."""
    import rtlforge.plugins.generators.replay as gen_replay
    from rtlforge.cli import cli
    from rtlforge.core.plugins import PluginHost

    base = PluginHost.default

    def host() -> Any:
        h = base()
        if "replay" not in h.names("generator"):
            h.add_plugin(gen_replay, name="replay")
        return h

    monkeypatch.setattr(PluginHost, "default", staticmethod(host))  # the CLI's host
    monkeypatch.setenv("RTLFORGE_PLUGIN_CACHE", "off")  # no manifest: that host is the CLI's
    return cli


def test_cli_generate_spec_reads_a_prompt_file_as_its_problem(tmp_path: Path,
                                                               with_replay: Any) -> None:
    recorded = tmp_path / "recorded.jsonl"
    recorded.write_text(json.dumps({"task_id": "Prob001_xor2",
                                    "completion": f"[BEGIN]\n{XOR_OK}[DONE]"}) + "\n")
    result = CliRunner().invoke(with_replay, [
        "generate", "--generator", "replay", "--generator-option", f"path={recorded}",
        "--spec", str(SPEC_TO_RTL / "Prob001_xor2_prompt.txt"), "--template", "spec-to-rtl",
        "--json"])
    assert result.exit_code == 0, result.output
    # the recording is found under the problem's id, and the code comes out of [BEGIN]/[DONE]
    assert json.loads(result.stdout.strip().splitlines()[-1])["candidates"] == [
        {"source": XOR_OK, "generator": "replay"}]


def test_spec_task_takes_the_module_named_in_the_prose() -> None:
    from rtlforge.explore.cli import _spec_task

    task = _spec_task(SPEC_TO_RTL / "Prob002_count4_prompt.txt")
    assert (task.id, task.top) == ("Prob002_count4", "TopModule")


@pytest.mark.tools
@pytest.mark.slow
def test_cli_explore_runs_on_the_fixture_with_recorded_answers(
        tmp_path: Path, with_replay: Any) -> None:
    recorded = tmp_path / "recorded.jsonl"
    recorded.write_text("".join(json.dumps(r) + "\n" for r in [
        {"task_id": "Prob001_xor2", "completion": f"[BEGIN]\n{XOR_WRONG}[DONE]", "iteration": 1},
        {"task_id": "Prob001_xor2", "completion": f"[BEGIN]\n{XOR_OK}[DONE]", "iteration": 2},
    ]))
    result = CliRunner().invoke(with_replay, [
        "explore", "--tasks", str(FIXTURES), "--task", "Prob001_xor2", "--generator", "replay",
        "--generator-option", f"path={recorded}", "--select", "iteration",
        "--template", "spec-to-rtl", "--iterations", "2", "--checkpoints", "1,2", "--no-ast",
        "--ppa-estimator", "none", "--run-dir", str(tmp_path / "run"), "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["candidates"] == 2
    assert summary["methods"]["replay"]["verdicts"] == {"fail": 1, "pass": 1}
