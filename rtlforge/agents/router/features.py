"""The router's state: 40 structural features plus a 128-dim spec identifier (168 dims).

Everything is computed from a :class:`~rtlforge.agents.models.RouterContext` alone, so a recorded
:class:`~rtlforge.agents.models.Decision` is enough to recompute the state offline. Every value
is scaled into roughly [-1, 1] so no feature dominates the first layer by its units.

The spec identifier is a signed feature hashing of the spec's tokens into 128 buckets, L2
normalised. Buckets and signs come from BLAKE2b, not Python's ``hash()`` (salted per process),
so the same spec gives the same vector in every process and on every machine.

:data:`FEATURES` is the single list the vector is built from and the table in docs/router.md is
checked against (tests/agents/router/test_features.py).
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Callable
from dataclasses import dataclass

from rtlforge.agents.models import ROUTED_AGENTS, IterationRecord, RouterContext
from rtlforge.core.models import Verdict

__all__ = [
    "COMPLEXITY_KEYWORDS",
    "ERROR_GROUPS",
    "FEATURES",
    "SPEC_DIMS",
    "STATE_DIM",
    "STRUCTURAL_DIMS",
    "Feature",
    "complexity_score",
    "error_group",
    "last_error_category",
    "spec_id",
    "state_vector",
]

SPEC_DIMS = 128
#: The stages a candidate can pass, in pipeline order (a record's ``stages_passed`` names).
STAGE_COUNT = 4  # security, lint, simulate, synth

#: Spec words that signal a multi-component design (the decomposition tier's cue as well).
COMPLEXITY_KEYWORDS: tuple[str, ...] = (
    "fsm", "state machine", "pipeline", "fifo", "cache", "arbiter", "uart", "alu", "controller",
    "multiplier", "divider", "decoder", "encoder", "counter", "shift register", "memory", "ram",
    "interrupt", "bus", "handshake",
)
_WAVEFORM_CUES = ("waveform", "timing diagram", "determine what the circuit does")

#: Error category (a :class:`Feedback` category or a synthetic one) -> its feature group.
ERROR_GROUPS: dict[str, str] = {
    "syntax": "syntax", "unsupported": "syntax", "elaboration": "syntax", "no_code": "syntax",
    "lint": "syntax",
    "undeclared_identifier": "declaration", "port_mismatch": "declaration",
    "missing_module": "declaration",
    "width": "width", "width_mismatch": "width",
    "multiple_drivers": "structural", "latch": "structural", "comb_loop": "structural",
    "logic": "functional", "sim_mismatch": "functional", "no_verdict": "functional",
    "timeout": "functional", "output_flood": "functional",
    "timing": "timing", "timing_violation": "timing", "critical_path": "timing",
    "area": "area", "cells": "area",
}
_GROUPS = ("syntax", "declaration", "width", "structural", "functional", "timing", "area")


def error_group(category: str | None) -> str | None:
    """The feature group of an error category; None for no category or an unknown one."""
    return ERROR_GROUPS.get(category) if category else None


def last_error_category(ctx: RouterContext) -> str | None:
    """The last iteration's error category, else the first error-severity feedback's."""
    if ctx.history and ctx.history[-1].error_category:
        return ctx.history[-1].error_category
    for fb in ctx.feedback:
        if fb.severity == "error":
            return fb.category
    return None


def complexity_score(spec: str) -> int:
    """How many distinct component keywords the spec mentions."""
    text = spec.lower()
    return sum(1 for word in COMPLEXITY_KEYWORDS if word in text)


def _squash(x: float, scale: float) -> float:
    """log1p(x)/log1p(scale), clipped to 1: counts spanning orders of magnitude."""
    return min(1.0, math.log1p(max(0.0, x)) / math.log1p(scale))


def _sign(x: float) -> float:
    return 1.0 if x > 0 else -1.0 if x < 0 else 0.0


def _tristate(value: bool | None) -> float:
    return 0.5 if value is None else float(value)


def _last(ctx: RouterContext) -> IterationRecord | None:
    return ctx.history[-1] if ctx.history else None


def _prev(ctx: RouterContext) -> IterationRecord | None:
    return ctx.history[-2] if len(ctx.history) >= 2 else None


def _verdict(ctx: RouterContext, verdict: Verdict) -> float:
    last = _last(ctx)
    return float(last is not None and last.verdict is verdict)


def _stages(rec: IterationRecord | None) -> int:
    return len(rec.stages_passed) if rec is not None else 0


def _group_is(group: str) -> Callable[[RouterContext], float]:
    return lambda ctx: float(error_group(last_error_category(ctx)) == group)


def _agent_share(agent: str) -> Callable[[RouterContext], float]:
    def share(ctx: RouterContext) -> float:
        if not ctx.history:
            return 0.0
        return sum(1 for r in ctx.history if r.agent == agent) / len(ctx.history)
    return share


def _same_agent_streak(ctx: RouterContext) -> float:
    if not ctx.history:
        return 0.0
    agent, streak = ctx.history[-1].agent, 0
    for rec in reversed(ctx.history):
        if rec.agent != agent:
            break
        streak += 1
    return streak / ctx.max_iterations


def _category_repeated(ctx: RouterContext) -> float:
    last, prev = _last(ctx), _prev(ctx)
    return float(last is not None and prev is not None and last.error_category is not None
                 and last.error_category == prev.error_category)


def _error_delta(ctx: RouterContext) -> float:
    last, prev = _last(ctx), _prev(ctx)
    return _sign(last.error_count - prev.error_count) if last and prev else 0.0


def _mismatch_delta(ctx: RouterContext) -> float:
    last, prev = _last(ctx), _prev(ctx)
    if not (last and prev and last.mismatches is not None and prev.mismatches is not None):
        return 0.0
    return _sign(last.mismatches - prev.mismatches)


def _code_count(pattern: str, scale: float) -> Callable[[RouterContext], float]:
    regex = re.compile(pattern)
    return lambda ctx: _squash(len(regex.findall(ctx.code or "")), scale)


def _cells(ctx: RouterContext) -> float:
    cells = next((r.cells for r in reversed(ctx.history) if r.cells is not None), None)
    return _squash(cells, 10_000) if cells is not None else 0.0


def _timing_met(ctx: RouterContext) -> float:
    last = _last(ctx)
    return _tristate(last.timing_met if last is not None else None)


@dataclass(frozen=True)
class Feature:
    """One structural feature: its name, group, what it measures (the doc's row) and how."""

    name: str
    group: str
    description: str
    compute: Callable[[RouterContext], float]


_T, _P, _E, _C, _H, _S = ("task", "progress", "errors", "code", "history", "simulator")

FEATURES: tuple[Feature, ...] = (
    # task metadata
    Feature("spec_size", _T, "log1p(spec characters) / log1p(8000), clipped to 1",
            lambda c: _squash(len(c.spec), 8000)),
    Feature("ports", _T, "number of ports / 32, clipped to 1", lambda c: min(1.0, c.ports / 32)),
    Feature("has_testbench", _T, "1 when the task has a testbench",
            lambda c: float(c.has_testbench)),
    Feature("sequential", _T, "1 sequential, 0 combinational, 0.5 unknown",
            lambda c: _tristate(c.sequential)),
    Feature("complexity", _T, "component keywords in the spec / 5, clipped to 1",
            lambda c: min(1.0, complexity_score(c.spec) / 5)),
    Feature("waveform_cue", _T, "1 when the spec asks to read a waveform or timing diagram",
            lambda c: float(any(cue in c.spec.lower() for cue in _WAVEFORM_CUES))),
    # iteration and progress
    Feature("progress", _P, "iteration / max_iterations", lambda c: c.iteration / c.max_iterations),
    Feature("remaining", _P, "(max_iterations - iteration) / max_iterations, at least 0",
            lambda c: max(0, c.max_iterations - c.iteration) / c.max_iterations),
    Feature("first_iteration", _P, "1 when nothing has been generated yet",
            lambda c: float(not c.history)),
    Feature("best_stages", _P, "most stages any iteration passed / 4",
            lambda c: min(1.0, max((_stages(r) for r in c.history), default=0) / STAGE_COUNT)),
    Feature("last_stages", _P, "stages the last iteration passed / 4",
            lambda c: min(1.0, _stages(_last(c)) / STAGE_COUNT)),
    Feature("stage_delta", _P, "(last - previous iteration's stages) / 4, in [-1, 1]",
            lambda c: max(-1.0, min(1.0, (_stages(_last(c)) - _stages(_prev(c))) / STAGE_COUNT))
            if len(c.history) >= 2 else 0.0),
    # error signals
    Feature("verdict_fail", _E, "1 when the last verdict was fail (wrong design)",
            lambda c: _verdict(c, Verdict.FAIL)),
    Feature("verdict_error", _E, "1 when the last verdict was error (does not compile)",
            lambda c: _verdict(c, Verdict.ERROR)),
    Feature("verdict_timeout", _E, "1 when the last verdict was timeout",
            lambda c: _verdict(c, Verdict.TIMEOUT)),
    Feature("error_count", _E, "log1p(last iteration's errors) / log1p(50)",
            lambda c: _squash(_last(c).error_count, 50) if c.history else 0.0),
    Feature("error_delta", _E, "sign(last - previous error count): -1 falling, +1 rising",
            _error_delta),
    Feature("error_syntax", _E, "1 when the last error is syntax-like (syntax, unsupported, "
            "elaboration, no_code, lint)", _group_is("syntax")),
    Feature("error_declaration", _E, "1 for undeclared_identifier, port_mismatch, "
            "missing_module", _group_is("declaration")),
    Feature("error_width", _E, "1 for width / width_mismatch", _group_is("width")),
    Feature("error_structural", _E, "1 for multiple_drivers, latch, comb_loop",
            _group_is("structural")),
    Feature("error_functional", _E, "1 for logic, sim_mismatch, no_verdict, timeout, "
            "output_flood", _group_is("functional")),
    Feature("error_timing", _E, "1 for timing, timing_violation, critical_path",
            _group_is("timing")),
    Feature("error_area", _E, "1 for area, cells", _group_is("area")),
    Feature("category_repeated", _E, "1 when the last two iterations failed with the same "
            "category", _category_repeated),
    # code metrics
    Feature("has_code", _C, "1 when there is a previous design", lambda c: float(bool(c.code))),
    Feature("code_lines", _C, "log1p(design lines) / log1p(500)",
            lambda c: _squash(len((c.code or "").splitlines()), 500)),
    Feature("always_blocks", _C, "log1p(always blocks) / log1p(20)", _code_count(r"\balways", 20)),
    Feature("assigns", _C, "log1p(continuous assigns) / log1p(50)", _code_count(r"\bassign\b", 50)),
    Feature("case_statements", _C, "log1p(case statements) / log1p(10)",
            _code_count(r"\bcase[zx]?\b", 10)),
    Feature("cells", _C, "log1p(latest measured cell count) / log1p(10000); 0 unmeasured", _cells),
    # agent history
    *(Feature(f"share_{agent}", _H, f"fraction of past iterations run by {agent}",
              _agent_share(agent)) for agent in ROUTED_AGENTS),
    Feature("same_agent_streak", _H, "consecutive iterations of the last agent / max_iterations",
            _same_agent_streak),
    Feature("tokens_used", _H, "log1p(tokens spent so far) / log1p(100000)",
            lambda c: _squash(sum(r.tokens for r in c.history), 100_000)),
    # simulator signals
    Feature("mismatches", _S, "log1p(last failing checks) / log1p(100); 0 when unknown",
            lambda c: _squash(_last(c).mismatches or 0, 100) if c.history else 0.0),
    Feature("mismatch_delta", _S, "sign(last - previous failing checks), 0 when unknown",
            _mismatch_delta),
    Feature("timing_met", _S, "last iteration: 1 timing met, 0 violated, 0.5 unknown",
            _timing_met),
)

STRUCTURAL_DIMS = len(FEATURES)
STATE_DIM = STRUCTURAL_DIMS + SPEC_DIMS

_TOKEN = re.compile(r"[a-z_][a-z0-9_]*|\d+")


def spec_id(spec: str, dims: int = SPEC_DIMS) -> tuple[float, ...]:
    """Signed feature hashing of the spec's lower-cased tokens, L2 normalised (zeros if empty).

    Per token, BLAKE2b's first 8 bytes pick the bucket (modulo ``dims``) and its 9th byte's low
    bit the sign, so colliding tokens tend to cancel rather than pile up.
    """
    vec = [0.0] * dims
    for token in _TOKEN.findall(spec.lower()):
        digest = hashlib.blake2b(token.encode("utf-8"), digest_size=9).digest()
        bucket = int.from_bytes(digest[:8], "little") % dims
        vec[bucket] += 1.0 if digest[8] & 1 else -1.0
    norm = math.sqrt(sum(v * v for v in vec))
    return tuple(v / norm for v in vec) if norm else tuple(vec)


def structural_features(ctx: RouterContext) -> tuple[float, ...]:
    return tuple(float(f.compute(ctx)) for f in FEATURES)


def state_vector(ctx: RouterContext) -> tuple[float, ...]:
    """The 168-dim state: :data:`FEATURES` in order, then :func:`spec_id` of the spec."""
    return structural_features(ctx) + spec_id(ctx.spec)
