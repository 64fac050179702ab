"""Evaluation metrics for multi-objective RTL generation: rHV, win rate, diversity, bootstrap.

Everything follows Appendix A of "Pareto-Optimal RTL Code Generation via Multi-Objective RL" and
is computed in *objective space* (the maximised PPA ratio vectors of
:func:`~rtlforge.pareto.hypervolume.objective_vector`), never on raw PPA, so "bigger is
better" holds for every coordinate. Per problem ``i``:

- ``U_i``: union over all methods and trials of the passing solutions up to the final iteration;
  ``Pi_i = ND(U_i)`` is the reference front;
- each objective is normalised by ``(f - min_U f) / (max_U f - min_U f + EPS_NORM)``;
- ``rHV(S) = HV(S~; r) / HV(Pi~; r)`` with ``r = (-DELTA, ..., -DELTA)``.

A constant objective normalises to 0 for every point, so each box has thickness ``DELTA`` in it
and the ratio reduces to the lower-dimensional rHV (the paper's Proposition 1). Edge cases are
defined in ``docs/pareto.md`` and in the docstrings below.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from rtlforge.core.errors import ConfigError
from rtlforge.core.models import PPA_KEYS, PPAResult
from rtlforge.evaluation.protocol import UNION_ITERATIONS, UNION_TRIALS
from rtlforge.pareto.hypervolume import Backend, hypervolume, non_dominated, objective_vector

EPS_NORM = 1e-20
DELTA = 1e-12
#: relative tolerance under which two hypervolumes count as a tie in the win rate
TIE_RTOL = 1e-12
#: What the win rate compares per cell (see :func:`compute_metrics`).
WinBasis = Literal["hv", "normalised"]


# --------------------------------------------------------------------------------------------
# records
# --------------------------------------------------------------------------------------------


class RecordsError(ConfigError, ValueError):
    """A records file is unreadable or a line does not match the record schema."""

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None) -> None:
        super().__init__(message)
        self.path = path
        self.line = line


class _Strict(BaseModel):
    # strict: "1" is not a number and 1 is not a bool; forbid: a misspelt key is an error, not a
    # silently missing measurement.
    model_config = ConfigDict(strict=True, frozen=True, extra="forbid")


class Record(_Strict):
    """One generated circuit of one method, task, trial and iteration, with its raw PPA.

    The records file keeps its flat shape (``power``, ``delay``, ``area`` beside the labels,
    ``golden`` a ``{power, delay, area}`` mapping); ``ppa`` is None unless all three are given.
    """

    method: str
    task: str
    trial: int
    iteration: int
    passed: bool
    ppa: PPAResult | None = None
    golden: PPAResult | None = None

    @model_validator(mode="before")
    @classmethod
    def _flat_ppa(cls, value: Any) -> Any:
        if not isinstance(value, Mapping) or "ppa" in value:
            return value
        row = {k: v for k, v in value.items() if k not in PPA_KEYS}
        numbers = {k: value[k] for k in PPA_KEYS if k in value}
        row["ppa"] = None if any(numbers.get(k) is None for k in PPA_KEYS) else numbers
        return row

    def objectives(self) -> NDArray[np.float64] | None:
        """Objective vector of a passing circuit with valid PPA; None otherwise."""
        if not self.passed:
            return None
        return objective_vector(self.ppa, self.golden)

    def raw_triple(self) -> tuple[float, float, float] | None:
        """(power, delay, area) when all are present and finite (NaN would never compare equal)."""
        if self.ppa is None or not self.ppa.finite:
            return None
        return self.ppa.power_mw, self.ppa.delay_ns, self.ppa.area_um2


def load_records(path: str | Path) -> list[Record]:
    """Read a JSONL records file; blank lines are skipped, any bad line raises RecordsError."""
    path = Path(path)
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise RecordsError(f"cannot read {path}: {exc}", path=str(path)) from exc
    records: list[Record] = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            # strict down into the PPA too: "1" is not a number there either
            records.append(Record.model_validate_json(line, strict=True))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "record"
            raise RecordsError(
                f"{path}:{lineno}: {where}: {first['msg']}", path=str(path), line=lineno
            ) from exc
    return records


# --------------------------------------------------------------------------------------------
# rHV
# --------------------------------------------------------------------------------------------


def _points(points: ArrayLike, dim: int | None = None) -> NDArray[np.float64]:
    arr = np.asarray(points, dtype=np.float64)
    if arr.size == 0:
        return np.empty((0, dim or (arr.shape[-1] if arr.ndim == 2 else 0)))
    return arr[None, :] if arr.ndim == 1 else arr


@dataclass(frozen=True)
class Normaliser:
    """Min-max normalisation over a problem's union set ``U_i`` plus the shifted reference."""

    lo: NDArray[np.float64]
    hi: NDArray[np.float64]
    eps: float = EPS_NORM
    delta: float = DELTA

    @classmethod
    def fit(cls, union: ArrayLike, *, eps: float = EPS_NORM, delta: float = DELTA) -> Normaliser:
        u = _points(union)
        if len(u) == 0:
            raise ValueError("cannot normalise over an empty union set")
        return cls(lo=u.min(axis=0), hi=u.max(axis=0), eps=eps, delta=delta)

    def transform(self, points: ArrayLike) -> NDArray[np.float64]:
        return (_points(points, len(self.lo)) - self.lo) / (self.hi - self.lo + self.eps)

    def hv(self, points: ArrayLike, *, backend: Backend = "moocore") -> float:
        """HV of the normalised points w.r.t. ``r = -delta``: shift by +delta, origin reference."""
        pts = _points(points, len(self.lo))
        if len(pts) == 0:
            return 0.0
        return hypervolume(self.transform(pts) + self.delta, backend=backend)


def _coverage(solution: NDArray[np.float64], front: NDArray[np.float64]) -> float:
    """Fraction of ``front`` weakly dominated by some point of ``solution``."""
    hit = np.any(np.all(solution[:, None, :] >= front[None, :, :], axis=2), axis=0)
    return float(np.mean(hit))


def relative_hypervolume(
    solution: ArrayLike,
    union: ArrayLike,
    *,
    reference: ArrayLike | None = None,
    eps: float = EPS_NORM,
    delta: float = DELTA,
    backend: Backend = "moocore",
) -> float:
    """``HV(S~; r) / HV(Pi~; r)``: normalisation over ``union`` (``solution`` is added to it).

    ``reference`` is the set whose front is the denominator (default: ``union``); passing a
    baseline's solutions gives rHV against a baseline-only archive, which may exceed 1.

    Edge cases: an empty ``solution`` scores 0.0. ``HV(Pi~) = 0`` with the default
    ``delta > 0`` happens only when the reference set is empty; then the score is 0.0. With
    ``delta = 0`` (or underflow in very high dimension) a non-empty reference can have zero
    volume; the score then falls back to the coverage of ``Pi`` by ``S`` (1.0 when ``S``
    attains the whole reference front), the set indicator that rHV degenerates to.
    """
    sol = _points(solution)
    ref_pts = _points(union if reference is None else reference, sol.shape[1] if sol.size else None)
    if len(sol) == 0 or len(ref_pts) == 0:
        return 0.0
    base = _points(union, sol.shape[1])
    norm = Normaliser.fit(np.vstack([x for x in (base, sol, ref_pts) if len(x)]),
                          eps=eps, delta=delta)
    front = ref_pts[non_dominated(ref_pts)]
    denom = norm.hv(front, backend=backend)
    if denom <= 0.0:
        return _coverage(norm.transform(sol), norm.transform(front))
    return norm.hv(sol, backend=backend) / denom


# --------------------------------------------------------------------------------------------
# win rate, diversity, bootstrap
# --------------------------------------------------------------------------------------------


def win_shares(hvs: Mapping[str, float], *, rtol: float = TIE_RTOL) -> dict[str, float]:
    """One comparison: the best HV wins 1; k tied winners get 1/k each; all-zero is an M-way tie."""
    if not hvs:
        return {}
    best = max(hvs.values())
    if best <= 0.0:
        return {m: 1.0 / len(hvs) for m in hvs}
    winners = [m for m, v in hvs.items() if v >= best * (1.0 - rtol)]
    return {m: (1.0 / len(winners) if m in winners else 0.0) for m in hvs}


def circuit_diversity(records: Iterable[Record]) -> int:
    """Unique raw (power, delay, area) triples among passing circuits (invalid PPA skipped)."""
    return len({t for r in records if r.passed and (t := r.raw_triple()) is not None})


def nested_bootstrap_ci(
    groups: Sequence[Sequence[float]],
    *,
    n_boot: int = 10_000,
    seed: int | None = 0,
    level: float = 0.95,
) -> dict[str, float] | None:
    """Percentile CI of the mean of per-problem means, resampling problems then trials.

    Two-stage (nested) resampling keeps both sources of variance: which problems were drawn and
    which trials each run produced. ``groups[i]`` holds the paired per-trial differences of
    problem ``i``. None when there is nothing to resample.
    """
    arrays = [np.asarray(g, dtype=np.float64) for g in groups if len(g)]
    if not arrays:
        return None
    rng = np.random.default_rng(seed)
    n = len(arrays)
    pick = rng.integers(0, n, size=(n_boot, n)).ravel()
    order = np.argsort(pick, kind="stable")
    bounds = np.searchsorted(pick[order], np.arange(n + 1))
    stats = np.zeros(n_boot)
    for p, vals in enumerate(arrays):
        slots = order[bounds[p] : bounds[p + 1]]  # flat (replicate, slot) indices choosing p
        if len(slots) == 0:
            continue
        draws = rng.integers(0, len(vals), size=(len(slots), len(vals)))
        np.add.at(stats, slots // n, vals[draws].mean(axis=1))
    stats /= n
    alpha = (1.0 - level) / 2.0
    lo, hi = np.quantile(stats, [alpha, 1.0 - alpha])
    return {"mean": float(np.mean([a.mean() for a in arrays])), "lo": float(lo), "hi": float(hi)}


# --------------------------------------------------------------------------------------------
# the full report
# --------------------------------------------------------------------------------------------

Cell = tuple[str, int]  # (task, trial)


@dataclass
class _Run:
    """The passing, valid objective vectors of one method on one (task, trial), by iteration."""

    iters: NDArray[np.int64]
    points: NDArray[np.float64]

    def upto(self, iteration: int) -> NDArray[np.float64]:
        return self.points[self.iters <= iteration]


def _mean(values: Sequence[float]) -> float:
    return float(np.mean(values)) if len(values) else 0.0


def compute_metrics(
    records: Sequence[Record],
    *,
    baseline: str | Sequence[str] | None = None,
    seed: int | None = 0,
    n_boot: int = 10_000,
    backend: Backend = "moocore",
    win_basis: WinBasis = "hv",
    union_trials: Sequence[int] = UNION_TRIALS,
    union_iterations: Sequence[int] = UNION_ITERATIONS,
) -> dict[str, Any]:
    """All metrics of a set of runs; the shape ``rtlforge metrics --json`` prints.

    The evaluation grid is every (task, trial) seen in any record; a method with no passing
    circuit in a cell scores rHV 0 and diversity 0 there. Iterations are all those present.

    ``win_basis`` is what the win rate compares in each cell: ``"hv"`` (the paper's Eq. 6) is the
    hypervolume of the cumulative objective vectors *without normalisation*, against the origin;
    ``"normalised"`` compares the min-max normalised HV that rHV is built on. The two can pick
    different winners: (2,1,1) has HV 2.0 and (1.2,1.2,1.2) has 1.728, but once each objective is
    rescaled to the range the methods span, the second wins.

    ``baseline``: one method or several (Appendix E.2: the paper's four baselines). The
    reference archive of ``rhv_vs_baseline_median`` is then the front of the *union* of their
    solutions; with one baseline it is that method's front, as before. Bootstrap comparisons pair
    every other method with each baseline.

    ``union_trials`` / ``union_iterations`` (Appendix E.5): per method, the rHV of the union of
    its solutions in the first ``N`` trials (the ``N`` lowest trial ids of each problem, so the
    choice is deterministic) up to iteration ``l``, mean over problems; only the ``N`` that every
    problem has trials for and the ``l`` present in the records are reported.
    """
    if win_basis not in ("hv", "normalised"):
        raise ValueError(f"win_basis must be 'hv' or 'normalised', not {win_basis!r}")
    methods = sorted({r.method for r in records})
    baselines = [baseline] if isinstance(baseline, str) else list(dict.fromkeys(baseline or ()))
    for name in baselines:
        if name not in methods:
            raise ValueError(f"baseline method {name!r} not in records (methods: {methods})")
    iterations = sorted({r.iteration for r in records})
    cells: list[Cell] = sorted({(r.task, r.trial) for r in records})
    tasks = sorted({t for t, _ in cells})
    if not records:
        return {"methods": {}, "iterations": [], "tasks": 0, "cells": 0}

    collected: dict[tuple[str, str, int], list[tuple[int, NDArray[np.float64]]]] = defaultdict(list)
    by_run: dict[tuple[str, str, int], list[Record]] = defaultdict(list)
    for r in records:
        by_run[(r.method, r.task, r.trial)].append(r)
        vec = r.objectives()
        if vec is not None:
            collected[(r.method, r.task, r.trial)].append((r.iteration, vec))
    dim = next((len(v) for vs in collected.values() for _, v in vs), 3)

    def run_of(m: str, cell: Cell) -> _Run:
        items = collected.get((m, *cell), [])
        return _Run(np.array([i for i, _ in items], dtype=np.int64),
                    np.array([v for _, v in items]).reshape(len(items), dim))

    runs = {(m, cell): run_of(m, cell) for m in methods for cell in cells}
    norms: dict[str, Normaliser | None] = {}
    ref_hv: dict[str, float] = {}
    for task in tasks:
        union = [runs[(m, c)].points for m in methods for c in cells if c[0] == task]
        u = np.vstack(union) if union else np.empty((0, dim))
        norms[task] = Normaliser.fit(u) if len(u) else None
        ref_hv[task] = norms[task].hv(u[non_dominated(u)], backend=backend) if len(u) else 0.0

    def rhv(points: NDArray[np.float64], task: str, denom: float | None = None) -> float:
        norm, d = norms[task], ref_hv[task] if denom is None else denom
        if norm is None or len(points) == 0 or d <= 0.0:
            return 0.0  # nothing passed anywhere on this problem (HV(Pi~) = 0 only then)
        return norm.hv(points, backend=backend) / d

    # per (method, cell, iteration): normalised HV of the cumulative set
    hv: dict[tuple[str, Cell], list[float]] = {}
    for (m, cell), run in runs.items():
        norm, values, last = norms[cell[0]], [], -1
        for it in iterations:
            pts = run.upto(it)
            if len(pts) != last:  # cumulative set changed
                value = norm.hv(pts, backend=backend) if norm is not None and len(pts) else 0.0
                last = len(pts)
            values.append(value)
        hv[(m, cell)] = values

    if win_basis == "hv":
        compared = {key: [hypervolume(run.upto(it), backend=backend) for it in iterations]
                    for key, run in runs.items()}
    else:
        compared = hv
    out: dict[str, Any] = {"methods": {}}
    win: dict[str, list[list[float]]] = {m: [[] for _ in iterations] for m in methods}
    for cell in cells:
        for k in range(len(iterations)):
            shares = win_shares({m: compared[(m, cell)][k] for m in methods})
            for m, share in shares.items():
                win[m][k].append(share)

    final_rhv: dict[str, dict[Cell, float]] = {}
    for m in methods:
        per_iter = {
            it: _mean([
                hv[(m, c)][k] / ref_hv[c[0]] if ref_hv[c[0]] > 0 else 0.0 for c in cells
            ])
            for k, it in enumerate(iterations)
        }
        final_rhv[m] = {
            c: hv[(m, c)][-1] / ref_hv[c[0]] if ref_hv[c[0]] > 0 else 0.0 for c in cells
        }
        union_scores = [
            rhv(np.vstack([runs[(m, c)].points for c in cells if c[0] == t]), t) for t in tasks
        ]
        out["methods"][m] = {
            "rhv": per_iter,
            "win_rate": {it: _mean(win[m][k]) for k, it in enumerate(iterations)},
            "diversity": _mean([circuit_diversity(by_run.get((m, *c), [])) for c in cells]),
            "rhv_union": _mean(union_scores),
        }

    if baselines:
        denoms: dict[str, float] = {}
        for task in tasks:
            base_pts = np.vstack([runs[(b, c)].points for b in baselines for c in cells
                                  if c[0] == task])
            norm = norms[task]
            if norm is not None and len(base_pts):  # else no finite ratio exists: left out
                denoms[task] = norm.hv(base_pts[non_dominated(base_pts)], backend=backend)
        for m in methods:
            scores = [rhv(runs[(m, c)].points, c[0], denoms[c[0]])
                      for c in cells if c[0] in denoms]
            out["methods"][m]["rhv_vs_baseline_median"] = (
                float(np.median(scores)) if scores else None
            )

    # Appendix E.5: union of the first N trials (lowest trial ids) at iterations l
    trial_ids = {t: sorted(trial for task, trial in cells if task == t) for t in tasks}
    fewest = min(len(ids) for ids in trial_ids.values())
    ns = sorted({n for n in union_trials if 1 <= n <= fewest})
    ls = sorted({it for it in union_iterations if it in set(iterations)})
    for m in methods:
        table: dict[int, dict[int, float]] = {}
        for n in ns:
            table[n] = {}
            for it in ls:
                per_task = [rhv(np.vstack([runs[(m, (t, trial))].upto(it)
                                           for trial in trial_ids[t][:n]]), t) for t in tasks]
                table[n][it] = _mean(per_task)
        out["methods"][m]["rhv_union_of_first_trials"] = table

    pairs: list[tuple[str, str]] = []
    if baselines:
        pairs = [(m, b) for b in baselines for m in methods if m not in baselines]
    elif len(methods) == 2:
        pairs = [(methods[0], methods[1])]
    comparisons = []
    for a, b in pairs:
        groups = [[final_rhv[a][c] - final_rhv[b][c] for c in cells if c[0] == t] for t in tasks]
        ci = nested_bootstrap_ci(groups, n_boot=n_boot, seed=seed)
        if ci is not None:
            comparisons.append({
                "method": a, "versus": b, "rhv_diff": ci["mean"],
                "ci95": [ci["lo"], ci["hi"]], "n_boot": n_boot, "seed": seed,
            })
    out["iterations"] = iterations
    out["tasks"] = len(tasks)
    out["cells"] = len(cells)
    out["union_of_first_trials"] = {"trials": ns, "iterations": ls}
    if pairs:
        out["comparisons"] = comparisons
    if baselines:
        out["baselines"] = baselines
        if len(baselines) == 1:
            out["baseline"] = baselines[0]
    return out


def metrics_json(report: Mapping[str, Any]) -> str:
    """Strict JSON (no NaN/Infinity); integer iteration keys become strings."""
    return json.dumps(report, allow_nan=False)
