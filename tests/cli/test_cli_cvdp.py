"""``rtlforge eval`` and ``rtlforge refine`` with ``--tasks`` a CVDP JSONL file: answers in
CVDP's convention, pass@k per category and difficulty, refinement through the harness."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import rtlforge.plugins.validators.cvdp as cvdp_plugin
from rtlforge.agents.roles.common import FEEDBACK_HEADING
from rtlforge.cli import cli
from rtlforge.core.plugins import PluginHost
from rtlforge.testing import requires_tools

FIXTURES = Path(__file__).parents[1] / "fixtures" / "cvdp"
DATASET = FIXTURES / "cvdp_fixtures.jsonl"
RECORDS = {r["id"]: r for r in map(json.loads, DATASET.read_text().splitlines())}
SOLUTIONS = {r["id"]: r["files"] for r in
             map(json.loads, (FIXTURES / "solutions.jsonl").read_text().splitlines())}
COUNTER = "cvdp_copilot_updown_counter_0001"


def host() -> PluginHost:
    built = PluginHost()
    if "cvdp" not in built.names("validator"):  # a checkout used through PYTHONPATH
        built.add_plugin(cvdp_plugin, name="cvdp")
    return built


def fenced(files: dict[str, str]) -> str:
    """An answer as a model gives one: prose, then a block per file, its path on the fence."""
    blocks = [f"```systemverilog {path}\n{text}```" for path, text in files.items()]
    return "Here is the updated design.\n\n" + "\n\n".join(blocks) + "\n"


@pytest.mark.tools
@requires_tools("iverilog", "vvp", "verilator", "yosys")
def test_eval_reports_pass_at_k_per_category_and_difficulty(tmp_path: Path) -> None:
    samples = tmp_path / "samples.jsonl"
    with samples.open("w") as fh:
        for task_id, record in RECORDS.items():
            fh.write(json.dumps({"task_id": task_id,
                                 "completion": fenced(SOLUTIONS[task_id])}) + "\n")
            # the input context handed back unchanged (or nothing, for a spec-only problem)
            unchanged = {p: t for p, t in record["input"]["context"].items()
                         if p in record["output"]["context"]}
            fh.write(json.dumps({"task_id": task_id,
                                 "completion": fenced(unchanged) if unchanged else
                                 "I would write the module in rtl/x.sv."}) + "\n")
    result = CliRunner().invoke(cli, ["eval", str(samples), "--tasks", str(DATASET), "-k", "1",
                                      "--timeout", "120", "--json"], obj=host())
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["pass_at_k"] == {"pass@1": 0.5}
    by = summary["pass_at_k_by"]
    # each task has one passing sample of two: 0.5 in every group
    assert by["category"] == {
        "cid002": {"tasks": 1, "pass@1": 0.5}, "cid003": {"tasks": 1, "pass@1": 0.5},
        "cid004": {"tasks": 1, "pass@1": 0.5}, "cid007": {"tasks": 2, "pass@1": 0.5},
        "cid016": {"tasks": 1, "pass@1": 0.5}}
    assert by["difficulty"] == {"easy": {"tasks": 3, "pass@1": 0.5},
                                "medium": {"tasks": 3, "pass@1": 0.5}}
    assert summary["verdicts"] == {"pass": 6, "fail": 5, "error": 1}
    lines = [json.loads(line) for line in (tmp_path / "samples_results.jsonl").read_text()
             .splitlines()]
    assert {line["verdict"] for line in lines[0::2]} == {"pass"}

    # the text summary prints the groups too (two cid007 problems' samples only, for time)
    lint_qor = tmp_path / "cid007.jsonl"
    lint_qor.write_text("".join(line + "\n" for line in samples.read_text().splitlines()
                                if "cid007" in RECORDS[json.loads(line)["task_id"]]
                                ["categories"]))
    text = CliRunner().invoke(cli, ["eval", str(lint_qor), "--tasks", str(DATASET), "-k", "1",
                                    "--timeout", "120"], obj=host())
    assert text.exit_code == 0, text.output
    assert "category cid007 (2 tasks): pass@1 0.5000" in text.stdout
    assert "difficulty easy (1 tasks): pass@1 0.5000" in text.stdout


@pytest.mark.tools
@requires_tools("iverilog", "vvp")
def test_refine_fixes_a_missing_file_from_the_harness_feedback(tmp_path: Path) -> None:
    # first answer: only the counter (the harness says counter_top is missing), then both
    first = fenced({"rtl/counter.sv": SOLUTIONS[COUNTER]["rtl/counter.sv"]})
    script = {COUNTER: {"*": [first, {"text": fenced(SOLUTIONS[COUNTER]),
                                      "when_prompt_contains": [FEEDBACK_HEADING,
                                                               "rtl/counter_top.sv"]}]}}
    path = tmp_path / "script.json"
    path.write_text(json.dumps(script))
    result = CliRunner().invoke(cli, [
        "refine", "--tasks", str(DATASET), "--task", COUNTER, "--generator", "scripted",
        "--generator-option", f"path={path}", "--run-dir", str(tmp_path / "run"), "--json"],
        obj=host())
    assert result.exit_code == 0, result.output
    [row] = [json.loads(line) for line in result.stdout.splitlines()]
    assert row["verdict"] == "pass" and row["iterations"] == 2
