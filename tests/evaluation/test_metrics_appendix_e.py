"""Appendix E.2 (rHV against the archive of several baselines) and E.5 (union of the first N
trials), against values computed by hand from docs/pareto.md's definitions.

Objective vectors are chosen on a small integer grid and turned back into PPA through a golden
of 60 (``o = 60 / x`` is exact in floating point). With min-max normalisation over ``U_i`` the
normalised points are quarters or halves, so every hypervolume below is a sum of a few
rectangles; a third objective held constant normalises to 0 for every point and, by
Proposition 1, leaves the 2-D ratio unchanged (its ``delta`` thickness cancels).
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

import rtlforge.plugins.archives.pareto as pareto_plugin
from rtlforge.evaluation.metrics import Record, compute_metrics, metrics_json

G = 60.0
GOLDEN = {"power": G, "delay": G, "area": G}


def point(method: str, trial: int, iteration: int, o: tuple[float, ...],
          task: str = "t") -> Record:
    """A passing circuit whose objective vector is ``o`` (2-D: the area objective is 1)."""
    o3 = (*o, 1.0) if len(o) == 2 else o
    power, delay, area = (G / v for v in o3)
    return Record.model_validate({
        "method": method, "task": task, "trial": trial, "iteration": iteration,
        "passed": True, "power": power, "delay": delay, "area": area, "golden": GOLDEN})


# ------------------------------------------------------------------ E.2

def e2_records() -> list[Record]:
    """U spans [1, 5] on both axes, normalised (o - 1) / 4:
    B1: (5,1) -> (1,0) in trial 1, (3,3) -> (.5,.5) in trial 2;
    B2: (1,5) -> (0,1) in trial 1, (4,2) -> (.75,.25) in trial 2;
    M:  (4,4) -> (.75,.75) in trial 1, (3,3) -> (.5,.5) in trial 2."""
    return [point("B1", 1, 1, (5, 1)), point("B1", 2, 1, (3, 3)),
            point("B2", 1, 1, (1, 5)), point("B2", 2, 1, (4, 2)),
            point("M", 1, 1, (4, 4)), point("M", 2, 1, (3, 3))]


def test_e2_median_rhv_against_the_union_of_the_baselines() -> None:
    # front of B1 ∪ B2: (1,0), (.75,.25), (.5,.5), (0,1); staircase .75·.25 + .5·.25 = .3125
    out = compute_metrics(e2_records(), baseline=["B1", "B2"], n_boot=200)
    med = {m: v["rhv_vs_baseline_median"] for m, v in out["methods"].items()}
    assert med["M"] == pytest.approx((0.5625 / 0.3125 + 0.25 / 0.3125) / 2, rel=1e-9)  # 1.3
    assert med["B1"] == pytest.approx((0.0 + 0.25 / 0.3125) / 2, rel=1e-9)  # 0.4
    assert med["B2"] == pytest.approx((0.0 + 0.1875 / 0.3125) / 2, rel=1e-9)  # 0.3
    assert out["baselines"] == ["B1", "B2"] and "baseline" not in out
    assert [(c["method"], c["versus"]) for c in out["comparisons"]] == [("M", "B1"), ("M", "B2")]


def test_e2_one_baseline_is_the_single_baseline_result() -> None:
    # front of B1 alone: (1,0), (.5,.5): HV .25
    single = compute_metrics(e2_records(), baseline="B1", n_boot=200)
    assert compute_metrics(e2_records(), baseline=["B1"], n_boot=200) == single
    med = {m: v["rhv_vs_baseline_median"] for m, v in single["methods"].items()}
    assert med["M"] == pytest.approx((2.25 + 1.0) / 2, rel=1e-9)
    assert med["B2"] == pytest.approx((0.0 + 0.75) / 2, rel=1e-9)
    assert single["baseline"] == "B1" and single["baselines"] == ["B1"]
    assert [(c["method"], c["versus"]) for c in single["comparisons"]] == [
        ("B2", "B1"), ("M", "B1")]


def test_e2_in_three_dimensions() -> None:
    """U spans [1, 3] on every axis, normalised (o - 1) / 2. B1 (3,2,2) -> (1,.5,.5) and
    B2 (2,3,2) -> (.5,1,.5): boxes of .25 each overlapping in a .125 cube, union .375.
    M (2,2,3) -> (.5,.5,1): a box of .25 in trial 1; (1,1,1) -> the origin in trial 2."""
    rows = [point("B1", 1, 1, (3, 2, 2)), point("B2", 1, 1, (2, 3, 2)),
            point("M", 1, 1, (2, 2, 3)), point("M", 2, 1, (1, 1, 1))]
    both = compute_metrics(rows, baseline=["B1", "B2"], n_boot=50)
    assert both["methods"]["M"]["rhv_vs_baseline_median"] == pytest.approx(
        (0.25 / 0.375 + 0.0) / 2, abs=1e-9)
    assert both["methods"]["B1"]["rhv_vs_baseline_median"] == pytest.approx(
        (0.25 / 0.375 + 0.0) / 2, abs=1e-9)
    alone = compute_metrics(rows, baseline="B1", n_boot=50)
    assert alone["methods"]["M"]["rhv_vs_baseline_median"] == pytest.approx(0.5, abs=1e-9)


# ------------------------------------------------------------------ E.5

def e5_records() -> list[Record]:
    """Trials 7, 2, 4 (not contiguous, listed out of order); iterations 1 and 5.
    U spans [1, 5]: A trial 2 has (5,2) -> (1,.25) at iteration 1 and (4,4) -> (.75,.75) at
    iteration 5; trial 4 (2,5) -> (.25,1); trial 7 (3,3) -> (.5,.5); B trial 2 (1,1) -> (0,0).
    Reference front (1,.25), (.75,.75), (.25,1): .25 + .75·.5 + .25·.25 = 11/16."""
    rows = [point("A", 7, 1, (3, 3)), point("A", 2, 5, (4, 4)), point("B", 2, 1, (1, 1)),
            point("A", 4, 1, (2, 5)), point("A", 2, 1, (5, 2))]
    random.Random(3).shuffle(rows)
    return rows


def test_e5_union_of_the_first_n_trials_by_hand() -> None:
    out = compute_metrics(e5_records(), union_trials=(1, 2, 3), n_boot=50)
    assert out["union_of_first_trials"] == {"trials": [1, 2, 3], "iterations": [1, 5]}
    a = out["methods"]["A"]["rhv_union_of_first_trials"]
    ref = 11 / 16
    expected = {
        1: {1: 0.25 / ref, 5: (0.25 + 0.75 * 0.5) / ref},  # trial 2 only
        2: {1: (0.25 + 0.25 * 0.75) / ref, 5: 1.0},  # trials 2 and 4
        3: {1: (0.25 + 0.5 * 0.25 + 0.25 * 0.5) / ref, 5: 1.0},  # and trial 7
    }
    for n, row in expected.items():
        for it, value in row.items():
            assert a[n][it] == pytest.approx(value, rel=1e-9), (n, it)
    assert a[3][5] == pytest.approx(out["methods"]["A"]["rhv_union"], rel=1e-12)
    b = out["methods"]["B"]["rhv_union_of_first_trials"]
    assert all(v == pytest.approx(0.0, abs=1e-9) for row in b.values() for v in row.values())


def test_e5_reports_only_the_paper_n_and_iterations_present() -> None:
    out = compute_metrics(e5_records(), n_boot=50)  # the paper's N and l
    assert out["union_of_first_trials"] == {"trials": [1], "iterations": [1, 5]}
    six = [point("A", trial, it, (2, 2)) for trial in range(1, 7) for it in (1, 5, 10, 11)]
    out = compute_metrics(six, n_boot=50)
    assert out["union_of_first_trials"] == {"trials": [1, 5], "iterations": [1, 5, 10]}
    assert set(out["methods"]["A"]["rhv_union_of_first_trials"][5]) == {1, 5, 10}


def test_e5_counts_trials_every_problem_has() -> None:
    rows = [point("A", trial, 1, (2, 2), task="x") for trial in range(1, 6)]
    rows += [point("A", 1, 1, (2, 2), task="y")]
    out = compute_metrics(rows, n_boot=50)
    assert out["union_of_first_trials"]["trials"] == [1]  # task y has one trial only


# ------------------------------------------------------------------ CLI and JSON

def metrics_group() -> click.Group:
    group = click.Group()
    pareto_plugin.register_commands(cli=group)
    return group


def write(path: Path, rows: list[Record]) -> Path:
    lines = []
    for r in rows:
        ppa = r.ppa.triple() if r.ppa is not None else {}
        lines.append(json.dumps({"method": r.method, "task": r.task, "trial": r.trial,
                                 "iteration": r.iteration, "passed": r.passed, **ppa,
                                 "golden": GOLDEN}))
    path.write_text("\n".join(lines) + "\n")
    return path


def test_metrics_cli_takes_several_baselines_either_way(tmp_path: Path) -> None:
    path = write(tmp_path / "r.jsonl", e2_records())
    runner = CliRunner()
    outs: list[Any] = []
    for args in (["--baselines", "B1,B2"], ["--baseline", "B1", "--baseline", "B2"],
                 ["--baseline", "B1,B2"]):
        res = runner.invoke(metrics_group(), ["metrics", str(path), "--json", *args])
        assert res.exit_code == 0, res.output
        outs.append(json.loads(res.stdout))
    assert outs[0] == outs[1] == outs[2]
    assert outs[0]["methods"]["M"]["rhv_vs_baseline_median"] == pytest.approx(1.3, rel=1e-9)
    assert outs[0]["methods"]["M"]["rhv_union_of_first_trials"]["1"]["1"] >= 0.0
    assert json.loads(metrics_json(compute_metrics(e2_records(), baseline=["B1", "B2"]))) \
        == outs[0]
    table = runner.invoke(metrics_group(), ["metrics", str(path), "--baselines", "B1,B2"])
    assert table.exit_code == 0, table.output
    assert "union of B1, B2 (Appendix E.2)" in table.output
    assert "first N trials (Appendix E.5" in table.output and "med rHV/B" in table.output
    bad = runner.invoke(metrics_group(), ["metrics", str(path), "--baselines", "B1,nope"])
    assert bad.exit_code == 2 and "nope" in bad.output
