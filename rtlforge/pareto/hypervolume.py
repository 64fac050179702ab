"""Pareto geometry for PPA-driven RL: objective vectors, hypervolume, hypervolume contribution.

Conventions (see ``docs/pareto.md``): every objective is *maximised* and the hypervolume
reference point is the origin. The objective vector of a design is its PPA improvement ratio
over the golden reference, ``o = (P_gold/P_gen, D_gold/D_gen, A_gold/A_gen)``. No ``eps`` is
added to the denominators: a zero measurement is refused (below) before any division, and an
``eps`` added in the measured unit (mW) biased every ratio (the golden scored 0.999997).

Guards. The hypervolume backends are C/C++ extensions that trust their input: ``+inf`` or NaN
coordinates crash the interpreter with SIGSEGV, which no ``try`` can catch. So every vector is
validated in Python first: :func:`objective_vector` returns ``None`` unless every measurement and
every ratio is finite and strictly positive (a zero power/delay/area is a broken report, not an
infinitely good design), and :func:`hypervolume` raises :class:`InvalidObjectivesError` on
non-finite input before any backend is called.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from rtlforge.core.errors import ConfigError
from rtlforge.core.models import Objectives, PPAResult

Backend = Literal["moocore", "pygmo"]
BACKENDS: tuple[str, ...] = ("moocore", "pygmo")

class InvalidObjectivesError(ConfigError, ValueError):
    """Objective vectors that no hypervolume backend may see (NaN, inf, wrong shape)."""


# --------------------------------------------------------------------------------------------
# objective vectors
# --------------------------------------------------------------------------------------------


def _ppa(value: PPAResult | Mapping[str, Any] | None) -> PPAResult | None:
    """The PPA through its one way in; anything unreadable (a string or bool for a number, a
    missing key) is no PPA here: an objective vector is None for it, never an error."""
    if isinstance(value, Mapping) and any(isinstance(v, bool | str) for v in value.values()):
        return None
    try:
        return PPAResult.from_flat(value) if isinstance(value, Mapping | PPAResult) else None
    except ValueError:
        return None


def objective_vector(ppa: PPAResult | Mapping[str, Any] | None,
                     golden: PPAResult | Mapping[str, Any] | None) -> NDArray[np.float64] | None:
    """The maximised PPA ratio vector of ``ppa`` over ``golden``
    (:meth:`~rtlforge.core.models.Objectives.of` as an array), or None when it is invalid.

    Every input and every ratio must be finite and > 0: a zero or negative measurement is a
    broken report, not an infinitely good design, and must never earn reward. Because zero is
    refused, the ratio needs no ``eps``: the golden scores exactly ``(1, 1, 1)``.
    """
    vec = Objectives.of(_ppa(ppa), _ppa(golden))
    return None if vec is None else np.array(vec, dtype=np.float64)


# --------------------------------------------------------------------------------------------
# validation
# --------------------------------------------------------------------------------------------


def _as_points(points: ArrayLike, dim: int | None = None) -> NDArray[np.float64]:
    """A 2-D float array of points; raises on NaN/inf so nothing undefined reaches a backend."""
    try:
        arr = np.asarray(points, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InvalidObjectivesError(f"objective vectors are not numeric: {exc}") from exc
    if arr.size == 0:
        return np.empty((0, dim or 0), dtype=np.float64)
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2:
        raise InvalidObjectivesError(f"expected an (n, d) array of points, got shape {arr.shape}")
    if dim is not None and arr.shape[1] != dim:
        raise InvalidObjectivesError(f"expected {dim} objectives, got {arr.shape[1]}")
    if not np.all(np.isfinite(arr)):
        raise InvalidObjectivesError("objective vectors must be finite (found NaN or inf)")
    return arr


def _positive(arr: NDArray[np.float64]) -> NDArray[np.float64]:
    """Rows strictly inside the positive orthant: the others add no volume above the origin."""
    return arr[np.all(arr > 0.0, axis=1)] if len(arr) else arr


# --------------------------------------------------------------------------------------------
# hypervolume
# --------------------------------------------------------------------------------------------


def _backend_hv(pts: NDArray[np.float64], backend: str) -> float:
    """HV of validated points; an overflowing volume raises instead of becoming an inf reward."""
    value = _raw_backend_hv(pts, backend)
    if not math.isfinite(value):
        raise InvalidObjectivesError(f"hypervolume overflowed ({value}); objectives too large")
    return value


def _raw_backend_hv(pts: NDArray[np.float64], backend: str) -> float:
    """HV of already validated, finite, strictly positive points (maximisation, ref = 0)."""
    if len(pts) == 0:
        return 0.0
    if len(pts) == 1:  # the box of one point; also skips a backend call on the hot path
        return float(math.prod(pts[0].tolist()))
    if backend == "moocore":
        import moocore

        return float(moocore.hypervolume(pts, ref=np.zeros(pts.shape[1]), maximise=True))
    if backend == "pygmo":
        try:
            import pygmo
        except ImportError as exc:  # optional extra
            raise ImportError(
                "the pygmo hypervolume backend needs pygmo: pip install 'rtlforge[pareto]'"
            ) from exc
        # pygmo minimises: negate, so the origin is dominated by every (negative) point.
        return float(pygmo.hypervolume(-pts).compute(np.zeros(pts.shape[1])))
    raise ValueError(f"unknown hypervolume backend {backend!r}; one of {BACKENDS}")


def _check_backend(backend: str) -> None:
    if backend not in BACKENDS:
        raise ValueError(f"unknown hypervolume backend {backend!r}; one of {BACKENDS}")


def hypervolume(points: ArrayLike, *, backend: Backend = "moocore") -> float:
    """Hypervolume dominated by ``points`` above the origin (all objectives maximised).

    Empty input is 0.0. Points with a coordinate <= 0 bound no volume above the origin and are
    dropped; NaN or inf raise :class:`InvalidObjectivesError` (they would crash the backend).
    """
    _check_backend(backend)
    return _backend_hv(_positive(_as_points(points)), backend)


# --------------------------------------------------------------------------------------------
# dominance
# --------------------------------------------------------------------------------------------


def dominates(a: ArrayLike, b: ArrayLike) -> bool:
    """Strict Pareto dominance under maximisation: ``a >= b`` everywhere and ``>`` somewhere."""
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if x.shape != y.shape:
        raise InvalidObjectivesError(f"cannot compare shapes {x.shape} and {y.shape}")
    return bool(np.all(x >= y) and np.any(x > y))


_CHUNK = 512


def _non_dominated_numpy(arr: NDArray[np.float64]) -> NDArray[np.bool_]:
    """Exact O(n^2 d) mask, chunked to bound memory; works with +-inf (no backend involved)."""
    n = len(arr)
    keep = np.ones(n, dtype=bool)
    idx = np.arange(n)
    for start in range(0, n, _CHUNK):
        block = arr[start : start + _CHUNK]  # candidates that might be dominated
        ge = np.all(arr[:, None, :] >= block[None, :, :], axis=2)  # ge[i, j]: i >= block j
        gt = np.any(arr[:, None, :] > block[None, :, :], axis=2)
        eq = ge & ~gt
        earlier = idx[:, None] < (idx[start : start + _CHUNK])[None, :]
        # dominated by someone, or an exact duplicate of an earlier row (keep the first)
        keep[start : start + _CHUNK] = ~np.any((ge & gt) | (eq & earlier), axis=0)
    return keep


def non_dominated(points: ArrayLike) -> NDArray[np.bool_]:
    """Boolean mask of the Pareto-optimal rows (maximisation); of exact duplicates, the first.

    NaN raises (it is neither better nor worse than anything); +-inf is allowed here because no
    hypervolume is computed.
    """
    try:
        arr = np.asarray(points, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InvalidObjectivesError(f"objective vectors are not numeric: {exc}") from exc
    if arr.size == 0:
        return np.zeros(len(arr) if arr.ndim else 0, dtype=bool)
    if arr.ndim != 2:
        raise InvalidObjectivesError(f"expected an (n, d) array of points, got shape {arr.shape}")
    if np.any(np.isnan(arr)):
        raise InvalidObjectivesError("objective vectors contain NaN")
    if np.all(np.isfinite(arr)) and len(arr) > _CHUNK:
        import moocore  # O(n log n) sweep for large finite sets

        return np.asarray(moocore.is_nondominated(arr, maximise=True, keep_weakly=False))
    return _non_dominated_numpy(arr)


# --------------------------------------------------------------------------------------------
# hypervolume contribution
# --------------------------------------------------------------------------------------------


def _history_array(history: ArrayLike | Sequence[ArrayLike | None]) -> NDArray[np.float64]:
    """History as validated points; ``None`` entries (failed designs) are skipped."""
    if isinstance(history, np.ndarray):
        return _as_points(history)
    rows = [h for h in history if h is not None] if isinstance(history, Sequence) else history
    return _as_points(rows)


def hvc_group(
    history: ArrayLike | Sequence[ArrayLike | None],
    candidates: Sequence[ArrayLike | None],
    *,
    backend: Backend = "moocore",
) -> NDArray[np.float64]:
    """``HVC(c) = HV(history + {c}) - HV(history)`` for every candidate of a GRPO group.

    HV(history) is computed once. A candidate that is None (invalid PPA), has a coordinate
    <= 0, or is weakly dominated by a history point (this covers duplicates) gets exactly 0.0;
    otherwise float noise below zero is clamped to 0. Candidates are scored independently
    against the history, never against each other.
    """
    _check_backend(backend)
    hist = _positive(_history_array(history))
    out = np.zeros(len(candidates), dtype=np.float64)
    cand_idx = [i for i, c in enumerate(candidates) if c is not None]
    if not cand_idx:
        return out
    dim = hist.shape[1] if len(hist) else None
    cands = _as_points([candidates[i] for i in cand_idx], dim)
    if len(hist) == 0:  # HV of a single box; identical to the general formula below
        for j in np.flatnonzero(np.all(cands > 0.0, axis=1)):
            out[cand_idx[j]] = _backend_hv(cands[j : j + 1], backend)
        return out
    valid = np.all(cands > 0.0, axis=1)
    # weakly dominated by some history point (includes exact duplicates): exactly zero
    covered = np.any(np.all(hist[None, :, :] >= cands[:, None, :], axis=2), axis=1)
    todo = valid & ~covered
    if not np.any(todo):
        return out
    base = _backend_hv(hist, backend)
    for j in np.flatnonzero(todo):
        total = _backend_hv(np.vstack([hist, cands[j]]), backend)
        out[cand_idx[j]] = max(total - base, 0.0)
    return out


def hvc(
    history: ArrayLike | Sequence[ArrayLike | None],
    candidate: ArrayLike | None,
    *,
    backend: Backend = "moocore",
) -> float:
    """Hypervolume contribution of one candidate over ``history`` (see :func:`hvc_group`)."""
    return float(hvc_group(history, [candidate], backend=backend)[0])


__all__ = [
    "BACKENDS",
    "Backend",
    "InvalidObjectivesError",
    "dominates",
    "hvc",
    "hvc_group",
    "hypervolume",
    "non_dominated",
    "objective_vector",
]
