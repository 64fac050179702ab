"""Protocol records (rtlforge.evaluation.protocol) and ``rtlforge eval --preset paper``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from rtlforge.cli import cli
from rtlforge.evaluation.protocol import (
    PAPER,
    MethodProtocol,
    layout_line,
    preset,
    protocol_record,
    sample_layout_record,
)

ROOT = Path(__file__).resolve().parents[2]
TASKS = ROOT / "examples" / "tasks"
PAPER_METHOD = {"temperature": 0.5, "samples": 1, "history": "passing-only", "history_limit": None,
                "template": "paper"}


def test_preset_lookup() -> None:
    assert preset("paper") is PAPER and preset(PAPER) is PAPER
    with pytest.raises(ValueError, match="unknown preset"):
        preset("nope")


def test_protocol_record_lists_every_deviation() -> None:
    exact = protocol_record(trials=30, iterations=10, checkpoints=(1, 5, 10),
                            methods={"a": PAPER_METHOD}, preset_name="paper")
    assert exact["paper_protocol"] is True and exact["overridden"] == []
    custom = protocol_record(
        trials=30, iterations=10, checkpoints=(1, 4),  # checkpoints only choose the report
        methods={"a": {**PAPER_METHOD, "history_limit": 8},
                 "b": MethodProtocol(**{**PAPER_METHOD, "temperature": 0.8})})
    assert custom["paper_protocol"] is False and custom["preset"] is None
    assert custom["deviations"] == {
        "methods.a.history_limit": {"paper": None, "run": 8},
        "methods.b.temperature": {"paper": 0.5, "run": 0.8}}
    assert "overridden" not in custom


def test_sample_layout_record() -> None:
    paper = [("m", t, trial, it) for t in ("x", "y") for trial in range(1, 31)
             for it in range(1, 11)]
    record = sample_layout_record(paper, "paper")
    assert record["paper_layout"] is True and record["deviations"] == {}
    assert record["observed"]["m"] == {"tasks": 2, "trials": 30,
                                       "iterations": list(range(1, 11)), "samples": 1}
    assert record["unchecked"] == ["temperature", "history", "history_limit", "template"]
    assert layout_line(record).startswith("paper layout (--preset paper)")
    short = [*paper[:-1], ("m", "y", 30, 9)]  # y's trial 30 lacks iteration 10, has 9 twice
    record = sample_layout_record([lab for lab in short if lab[1] == "y"] +
                                  [("m", "x", 1, it) for it in range(1, 11)])
    assert record["deviations"] == {
        "methods.m.trials": {"paper": 30, "run": 1},
        "methods.m.samples": {"paper": 1, "run": 2}}
    assert layout_line(record).startswith("custom: differs from the paper protocol in")


def _samples(path: Path, trials: int, iterations: int) -> Path:
    golden = (TASKS / "mux4" / "golden.v").read_text()
    path.write_text("".join(
        json.dumps({"task_id": "mux4", "completion": golden, "method": m, "trial": t,
                    "iteration": i}) + "\n"
        for m in ("a", "b") for t in range(1, trials + 1) for i in range(1, iterations + 1)))
    return path


@pytest.mark.tools
def test_eval_preset_paper_measures_ppa_and_records_the_layout(tmp_path: Path) -> None:
    samples = _samples(tmp_path / "s.jsonl", trials=2, iterations=2)
    result = CliRunner().invoke(cli, [
        "eval", str(samples), "--tasks", str(TASKS), "--preset", "paper", "--baseline", "b",
        "--report", str(tmp_path / "rep"), "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    protocol = summary["protocol"]
    assert protocol["preset"] == "paper" and protocol["paper_layout"] is False
    assert protocol["deviations"]["methods.a.trials"] == {"paper": 30, "run": 2}
    assert protocol["deviations"]["methods.a.iterations"] == {
        "paper": list(range(1, 11)), "run": [1, 2]}
    assert summary["run"]["protocol"].startswith("custom (--preset paper)")
    metrics = summary["metrics"]  # PPA was measured without --ppa: the preset turns it on
    assert metrics["baselines"] == ["b"] and metrics["baseline"] == "b"
    # the golden against itself: exactly (1, 1, 1), so every rHV is 1 against b's archive too
    assert metrics["methods"]["a"]["rhv_vs_baseline_median"] == pytest.approx(1.0)
    assert metrics["union_of_first_trials"] == {"trials": [1], "iterations": [1]}
    html = (tmp_path / "rep" / "report.html").read_text()
    assert "Appendix E.2" in html and "Appendix E.5" in html
    results = [json.loads(x) for x in (tmp_path / "s_results.jsonl").read_text()
               .splitlines()]
    assert all(r["objectives"] == [1.0, 1.0, 1.0] for r in results)


def test_eval_unknown_baseline_is_a_usage_error(tmp_path: Path) -> None:
    samples = _samples(tmp_path / "s.jsonl", trials=1, iterations=1)
    result = CliRunner().invoke(cli, ["eval", str(samples), "--tasks", str(TASKS),
                                      "--baseline", "a,zz", "--out", str(tmp_path / "o.jsonl")])
    assert result.exit_code == 2 and "'zz'" in result.output
