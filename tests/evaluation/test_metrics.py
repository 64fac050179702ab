"""rHV (Appendix A), win rate, diversity, bootstrap CIs, records loading and the metrics CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import click
import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

import rtlforge.plugins.archives.pareto as pareto_plugin
from rtlforge.evaluation.metrics import (
    DELTA,
    Normaliser,
    Record,
    RecordsError,
    circuit_diversity,
    compute_metrics,
    load_records,
    metrics_json,
    nested_bootstrap_ci,
    relative_hypervolume,
    win_shares,
)

D = DELTA


def staircase_hv(points: np.ndarray, ref: float) -> float:
    """Exact 2-D HV (maximisation) w.r.t. (ref, ref), the independent numpy reference."""
    pts = sorted((tuple(p) for p in np.asarray(points) if np.all(p > ref)), reverse=True)
    total, best_y = 0.0, ref
    for x, y in pts:  # descending x: each point adds the strip above the best y so far
        if y > best_y:
            total += (x - ref) * (y - best_y)
            best_y = y
    return total


# ------------------------------------------------------------------ rHV


def test_rhv_hand_cases() -> None:
    union = [[1.0, 1.0], [3.0, 3.0], [2.0, 3.0]]
    # normalised: (0,0), (1,1), (.5,1); Pi = {(1,1)}; with r = -delta
    assert relative_hypervolume([[2.0, 3.0]], union) == pytest.approx(
        (0.5 + D) * (1 + D) / (1 + D) ** 2, rel=1e-15)
    assert relative_hypervolume([[3.0, 3.0]], union) == 1.0
    assert relative_hypervolume([[1.0, 1.0]], union) == pytest.approx(D**2 / (1 + D) ** 2)
    union3 = [[1.0, 1.0, 1.0], [3.0, 3.0, 3.0]]
    assert relative_hypervolume([[2.0, 3.0, 2.0]], [*union3, [2.0, 3.0, 2.0]]) == pytest.approx(
        0.25, rel=1e-11)


def test_rhv_matches_independent_2d_reference() -> None:
    rng = np.random.default_rng(7)
    union = rng.uniform(0.2, 3.0, (40, 2))
    sol = union[:15]
    norm = (union - union.min(0)) / (union.max(0) - union.min(0) + 1e-20)
    want = staircase_hv(norm[:15], -D) / staircase_hv(norm, -D)
    assert relative_hypervolume(sol, union) == pytest.approx(want, rel=1e-12)


def test_normaliser_formula() -> None:
    norm = Normaliser.fit([[1.0, 5.0], [3.0, 5.0]])
    np.testing.assert_array_equal(norm.transform([[2.0, 5.0]]), [[0.5, 0.0]])


pts2 = st.lists(
    st.tuples(st.floats(0.1, 10.0), st.floats(0.1, 10.0)), min_size=1, max_size=12
)


@settings(max_examples=80, deadline=None)
@given(pts2, st.data(), st.floats(0.01, 1e3))
def test_proposition_1_constant_objective_reduces_to_2d(
    union: list[tuple[float, float]], data: st.DataObject, const: float
) -> None:
    """A constant third objective normalises to 0: every box is delta thick there, so it cancels."""
    k = data.draw(st.integers(1, len(union)))
    u2 = np.array(union)
    u3 = np.column_stack([u2, np.full(len(u2), const)])
    want = relative_hypervolume(u2[:k], u2)
    got = relative_hypervolume(u3[:k], u3)
    assert got == pytest.approx(want, rel=1e-9, abs=1e-20)
    # and the 2-D value itself matches the independent staircase reference
    norm = (u2 - u2.min(0)) / (u2.max(0) - u2.min(0) + 1e-20)
    front = staircase_hv(norm, -D)
    assert want == pytest.approx(staircase_hv(norm[:k], -D) / front, rel=1e-9, abs=1e-20)


@settings(max_examples=60, deadline=None)
@given(pts2, st.data())
def test_rhv_is_in_unit_interval_for_subsets(union: list, data: st.DataObject) -> None:
    k = data.draw(st.integers(0, len(union)))
    value = relative_hypervolume(union[:k], union)
    assert 0.0 <= value <= 1.0 + 1e-12
    assert relative_hypervolume(union, union) == pytest.approx(1.0)


def test_rhv_zero_reference_cases() -> None:
    # empty solution / empty union: nothing passed anywhere -> 0
    assert relative_hypervolume([], []) == 0.0
    assert relative_hypervolume(np.empty((0, 3)), [[1.0, 1.0, 1.0]]) == 0.0
    # a single point is its own front: volume delta^3 > 0, rHV 1
    assert relative_hypervolume([[2.0, 2.0, 2.0]], [[2.0, 2.0, 2.0]]) == 1.0
    # delta = 0 makes HV(Pi~) = 0 here: rHV falls back to the coverage of Pi by S
    union = [[1.0, 2.0], [2.0, 1.0]]
    assert relative_hypervolume([[1.0, 2.0]], union, delta=0.0) == 0.5
    assert relative_hypervolume(union, union, delta=0.0) == 1.0


def test_rhv_against_a_baseline_reference_may_exceed_one() -> None:
    union = [[1.0, 1.0], [3.0, 3.0], [2.0, 2.0]]
    assert relative_hypervolume([[3.0, 3.0]], union, reference=[[2.0, 2.0]]) == pytest.approx(
        ((1 + D) / (0.5 + D)) ** 2)


# ------------------------------------------------------------------ win rate, diversity


def test_win_shares() -> None:
    assert win_shares({"a": 2.0, "b": 1.0}) == {"a": 1.0, "b": 0.0}
    assert win_shares({"a": 1.0, "b": 1.0}) == {"a": 0.5, "b": 0.5}
    assert win_shares({"a": 1.0, "b": 1.0, "c": 0.5}) == {"a": 0.5, "b": 0.5, "c": 0.0}
    assert win_shares({"a": 0.0, "b": 0.0, "c": 0.0}) == pytest.approx(
        {"a": 1 / 3, "b": 1 / 3, "c": 1 / 3})
    assert win_shares({}) == {}


def rec(method: str, trial: int, iteration: int, power: float | None = 1.0,
        passed: bool = True, task: str = "t", delay: float = 1.0, area: float = 1.0,
        **extra: Any) -> dict[str, Any]:
    return {"method": method, "task": task, "trial": trial, "iteration": iteration,
            "passed": passed, "power": power, "delay": delay, "area": area,
            "golden": {"power": 1.0, "delay": 1.0, "area": 1.0}, **extra}


def test_circuit_diversity() -> None:
    rows = [rec("a", 0, 0), rec("a", 0, 1), rec("a", 0, 2, power=0.5),
            rec("a", 0, 3, power=0.25, passed=False), rec("a", 0, 4, power=None),
            rec("a", 0, 5, power=float("nan")), rec("a", 0, 6, power=0.0)]
    # (1,1,1) twice counts once; failing, missing and NaN PPA are skipped; 0.0 is a raw triple
    assert circuit_diversity(Record.model_validate(r) for r in rows) == 3


# ------------------------------------------------------------------ bootstrap


def test_bootstrap_is_seeded_and_sane() -> None:
    rng = np.random.default_rng(0)
    groups = [list(rng.normal(0.1, 0.2, 5)) for _ in range(20)]
    a = nested_bootstrap_ci(groups, seed=3, n_boot=2000)
    assert a == nested_bootstrap_ci(groups, seed=3, n_boot=2000)
    assert a != nested_bootstrap_ci(groups, seed=4, n_boot=2000)
    assert a is not None and a["lo"] < a["mean"] < a["hi"]
    assert a["mean"] == pytest.approx(np.mean([np.mean(g) for g in groups]))
    const = nested_bootstrap_ci([[0.5, 0.5], [0.5]], seed=0, n_boot=100)
    assert const == {"mean": 0.5, "lo": 0.5, "hi": 0.5}
    assert nested_bootstrap_ci([]) is None


# ------------------------------------------------------------------ the full report

HAND = [
    # trial 0: A finds (1,1,1) then the better (2,1,1); B finds (2,1,1) at once, then fails
    rec("A", 0, 0), rec("A", 0, 1, power=0.5), rec("B", 0, 0, power=0.5),
    rec("B", 0, 1, power=None, passed=False),
    # trial 1: A finds (1,1,1) twice, B never passes
    rec("A", 1, 0), rec("A", 1, 1), rec("B", 1, 0, passed=False), rec("B", 1, 1, passed=False),
]


def hand_report(**kwargs: Any) -> dict[str, Any]:
    return compute_metrics([Record.model_validate(r) for r in HAND], **kwargs)


def test_compute_metrics_hand_case() -> None:
    """Objectives 2, 3 are constant, objective 1 is 0 or 1 after normalisation: Pi~ = {(1,0,0)}.

    A point normalised to (0,0,0) has volume delta^3 against (1+delta) delta^2, i.e. rHV ~ 1e-12.
    """
    out = hand_report()
    low = D / (1 + D)
    a, b = out["methods"]["A"], out["methods"]["B"]
    assert out["iterations"] == [0, 1] and out["tasks"] == 1 and out["cells"] == 2
    assert a["rhv"] == pytest.approx({0: low, 1: (1 + low) / 2}, rel=1e-9)
    assert b["rhv"] == pytest.approx({0: 0.5, 1: 0.5}, rel=1e-9)
    # iteration 0: B wins trial 0 (HV 2 > 1), A wins trial 1 (HV 1 > 0); iteration 1: tie, A
    assert a["win_rate"] == {0: 0.5, 1: 0.75}
    assert b["win_rate"] == {0: 0.5, 1: 0.25}
    assert a["diversity"] == 1.5 and b["diversity"] == 0.5
    assert a["rhv_union"] == pytest.approx(1.0) and b["rhv_union"] == pytest.approx(1.0)
    (comp,) = out["comparisons"]
    assert (comp["method"], comp["versus"]) == ("A", "B")
    assert comp["rhv_diff"] == pytest.approx(low / 2)
    assert "baseline" not in out


def test_win_rate_compares_unnormalised_hypervolume_as_eq6_says() -> None:
    """Eq. 6: the win goes to the highest HV, without normalisation. In golden-normalised
    objective space with the origin as reference, A = (2,1,1) has HV 2 and B = (1.2,1.2,1.2)
    has 1.2^3 = 1.728, so A wins. Min-max normalised over {A, B}, A becomes (1,0,0) and B
    (0,1,1): B's box (delta (1+delta)^2) outweighs A's ((1+delta) delta^2), and B would win."""
    rows = [rec("A", 0, 0, power=0.5),
            rec("B", 0, 0, power=1 / 1.2, delay=1 / 1.2, area=1 / 1.2)]
    records = [Record.model_validate(r) for r in rows]
    paper = compute_metrics(records)
    assert paper["methods"]["A"]["win_rate"] == {0: 1.0}
    assert paper["methods"]["B"]["win_rate"] == {0: 0.0}
    normalised = compute_metrics(records, win_basis="normalised")
    assert normalised["methods"]["A"]["win_rate"] == {0: 0.0}
    assert normalised["methods"]["B"]["win_rate"] == {0: 1.0}
    assert paper["methods"]["A"]["rhv"] == normalised["methods"]["A"]["rhv"]  # rHV unchanged
    with pytest.raises(ValueError, match="win_basis"):
        compute_metrics(records, win_basis="rhv")  # type: ignore[arg-type]


def test_compute_metrics_with_baseline() -> None:
    out = hand_report(baseline="B", seed=1, n_boot=500)
    assert out["baseline"] == "B"
    assert [(c["method"], c["versus"]) for c in out["comparisons"]] == [("A", "B")]
    # baseline front = {(2,1,1)} = Pi: A scores 1 (trial 0) and ~1e-12 (trial 1)
    assert out["methods"]["A"]["rhv_vs_baseline_median"] == pytest.approx(0.5, rel=1e-9)
    assert out["methods"]["B"]["rhv_vs_baseline_median"] == pytest.approx(0.5)
    assert hand_report(baseline="B", seed=1, n_boot=500) == out
    with pytest.raises(ValueError, match="baseline"):
        hand_report(baseline="nope")


def test_task_where_nothing_passed_is_zero_and_a_tie() -> None:
    rows = [rec("A", 0, 0, passed=False), rec("B", 0, 0, power=0.0)]  # zero power: invalid PPA
    out = compute_metrics([Record.model_validate(r) for r in rows])
    for m in ("A", "B"):
        assert out["methods"][m]["rhv"] == {0: 0.0}
        assert out["methods"][m]["win_rate"] == {0: 0.5}
        assert out["methods"][m]["rhv_union"] == 0.0
    assert out["methods"]["B"]["diversity"] == 1.0  # a raw triple, even with invalid PPA
    assert compute_metrics([]) == {"methods": {}, "iterations": [], "tasks": 0, "cells": 0}


def test_rhv_is_cumulative_and_averaged_over_tasks() -> None:
    rows = [rec("A", 0, 0, task="x"), rec("A", 0, 3, power=0.5, task="x"),
            rec("A", 0, 1, task="y")]
    out = compute_metrics([Record.model_validate(r) for r in rows])
    # task y: a single point is its own front (1.0 from iteration 1); task x: 1 from iteration 3
    low = D / (1 + D)
    assert out["methods"]["A"]["rhv"] == pytest.approx(
        {0: low / 2, 1: (low + 1) / 2, 3: 1.0}, rel=1e-9)
    assert "comparisons" not in out


# ------------------------------------------------------------------ records


def write(path: Path, rows: list[Any]) -> Path:
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n")
    return path


def test_load_records(tmp_path: Path) -> None:
    path = write(tmp_path / "r.jsonl", [*HAND[:2], ""])
    got = load_records(path)
    assert len(got) == 2 and got[1].ppa is not None and got[1].ppa.power_mw == 0.5
    assert got[0].golden is not None


@pytest.mark.parametrize(("bad", "where"), [
    ({"passed": "yes"}, "passed"),
    ({"trial": "0"}, "trial"),
    ({"pwr": 1.0}, "pwr"),
    ({"golden": {"power": 1.0, "delay": 1.0}}, "golden.area"),
])
def test_load_records_names_the_bad_line(tmp_path: Path, bad: dict, where: str) -> None:
    path = write(tmp_path / "r.jsonl", [HAND[0], HAND[1], {**HAND[2], **bad}])
    with pytest.raises(RecordsError) as info:
        load_records(path)
    assert info.value.line == 3 and f"r.jsonl:3: {where}" in str(info.value)


def test_load_records_rejects_broken_json_and_missing_files(tmp_path: Path) -> None:
    with pytest.raises(RecordsError, match=":2:"):
        load_records(write(tmp_path / "r.jsonl", [HAND[0], "{not json"]))
    with pytest.raises(RecordsError):
        load_records(tmp_path / "missing.jsonl")


# ------------------------------------------------------------------ CLI


def metrics_group() -> click.Group:
    group = click.Group()
    pareto_plugin.register_commands(cli=group)
    return group


def test_metrics_cli_json_contract(tmp_path: Path) -> None:
    path = write(tmp_path / "r.jsonl", HAND)
    result = CliRunner().invoke(metrics_group(), ["metrics", str(path), "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)  # exactly one JSON object, nothing else
    assert set(out["methods"]) == {"A", "B"}
    for m in ("A", "B"):
        assert set(out["methods"][m]["rhv"]) == {"0", "1"}
        assert set(out["methods"][m]["win_rate"]) == {"0", "1"}
        assert isinstance(out["methods"][m]["diversity"], float)
    assert out["methods"]["A"]["win_rate"] == {"0": 0.5, "1": 0.75}
    assert out == json.loads(metrics_json(hand_report()))


def test_metrics_cli_table_baseline_and_errors(tmp_path: Path) -> None:
    path = write(tmp_path / "r.jsonl", HAND)
    runner = CliRunner()
    table = runner.invoke(metrics_group(), ["metrics", str(path), "--baseline", "B", "--seed", "2"])
    assert table.exit_code == 0, table.output
    assert "rHV" in table.output and "win rate" in table.output and "A - B" in table.output
    bad = runner.invoke(metrics_group(), ["metrics", str(path), "--baseline", "C"])
    assert bad.exit_code == 2 and "baseline" in bad.output
    broken = write(tmp_path / "b.jsonl", [HAND[0], {"oops": 1}])
    res = runner.invoke(metrics_group(), ["metrics", str(broken), "--json"])
    assert res.exit_code == 2 and "b.jsonl:2" in res.output


def test_installed_cli_prints_only_json(tmp_path: Path) -> None:
    path = write(tmp_path / "r.jsonl", HAND)
    exe = Path(sys.executable).with_name("rtlforge")
    proc = subprocess.run([str(exe), "metrics", str(path), "--json"], capture_output=True,
                          text=True, timeout=120, env={**os.environ}, check=False)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["methods"]["A"]["diversity"] == 1.5


def test_objective_vector_has_no_epsilon() -> None:
    r = Record.model_validate(rec("A", 0, 0, power=2.0))
    vec = r.objectives()
    assert vec is not None and vec.tolist() == [0.5, 1.0, 1.0]
    assert Record.model_validate(rec("A", 0, 0, passed=False)).objectives() is None
