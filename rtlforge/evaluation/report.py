"""The eval report: ``summary.json``, ``records.jsonl`` and one self-contained ``report.html``.

The HTML has no scripts and no external assets: plots are inline SVG drawn here (no plotting
dependency), so a report can be mailed, archived or opened offline years later. Everything
that comes from samples or tasks (task ids, method names, file names, tool messages) is
untrusted and goes through :func:`_esc`, which also drops the control characters that XML
forbids, so each SVG stays well-formed XML whatever a completion contained.
"""

from __future__ import annotations

import html
import json
import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np

from rtlforge.evaluation.evaluate import DetailedEval, PPAMeasure, SampleDetail
from rtlforge.evaluation.findings import (
    OBJECTIVES,
    SIGNIFICANT_DIGITS,
    TIGHT_SPREAD,
    PPAGroup,
    TaskFindings,
    find,
    relative,
    same_value,
)
from rtlforge.pareto.hypervolume import non_dominated

__all__ = ["GOLDEN_WIDEN", "MAX_CIRCUITS_PER_TASK", "MIN_AXIS_SPAN", "MIN_CI_CELLS",
           "OBJECTIVE_PAIRS", "environment", "line_svg", "render_html", "scatter_svg",
           "summarise", "write_report"]

#: (x, y) raw PPA axes plotted per task; every objective is minimised on these axes.
OBJECTIVE_PAIRS: tuple[tuple[str, str], ...] = (
    ("power", "delay"), ("power", "area"), ("delay", "area"),
)
_UNITS = {"power": "mW", "delay": "ns", "area": "µm²"}
_PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b",
            "#e377c2", "#7f7f7f", "#bcbd22")
_XML_BAD = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ufffe\uffff]")
_MESSAGE_CHARS = 240
#: Circuits whose source the report shows per task (round robin over methods); every circuit
#: stays in results.jsonl / candidates.jsonl. Keeps a 30-trial run's report a few MB.
MAX_CIRCUITS_PER_TASK = 24
#: Characters of one circuit's source shown (the rest is cut, and the cut is said).
MAX_SOURCE_CHARS = 12_000
#: A bootstrap CI resting on fewer (task, trial) cells than this is flagged in the report:
#: the nested bootstrap resamples tasks then trials, and with under ~10 cells the interval
#: is a handful of distinct resamples, not a confidence statement.
MIN_CI_CELLS = 10
#: The golden is drawn inside a scatter plot when that widens an axis to at most this many
#: times the circuits' spread; farther away it is pinned to the edge with an arrow.
GOLDEN_WIDEN = 4.0
#: A scatter axis spans at least this fraction of its largest value: circuits 0.5 % apart are
#: drawn close together, not at the two ends of the frame.
MIN_AXIS_SPAN = 0.03


def _esc(value: object) -> str:
    """HTML/XML-escaped text with XML-illegal control characters replaced."""
    return html.escape(_XML_BAD.sub("\ufffd", str(value)), quote=True)


def _fmt(value: float | None, digits: int = 4) -> str:
    if value is None or not math.isfinite(value):
        return "–"
    return f"{value:.{digits}g}"


# --------------------------------------------------------------------------------------------
# summary.json
# --------------------------------------------------------------------------------------------


def _json_safe(value: Any) -> Any:
    """Plain JSON: numpy scalars unwrapped, NaN/inf as None, keys as strings."""
    if isinstance(value, Mapping):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def summarise(evaluation: DetailedEval, *, extra: Mapping[str, Any] | None = None,
              baseline: str | Sequence[str] | None = None) -> dict[str, Any]:
    """The summary.json object: pass@k, per-method verdicts, golden PPA and, with PPA, metrics.

    Metrics (rHV, win rate, diversity, union of trials; with ``baseline``, one method or
    several, the bootstrap comparisons and the rHV against the baselines' archive) are computed
    only when some method has a measured circuit: without PPA every rHV would be a meaningless 0.
    """
    from rtlforge.evaluation.metrics import Record, compute_metrics

    per_method = evaluation.per_method()
    summary: dict[str, Any] = {**evaluation.result.summary(), "methods": per_method}
    if evaluation.golden:
        summary["golden_ppa"] = {tid: g.model_dump() for tid, g in evaluation.golden.items()}
    if any(m["measured"] for m in per_method.values()):
        records = [Record.model_validate(r) for r in evaluation.records()]
        summary["metrics"] = compute_metrics(records, baseline=baseline or None)
    hvcs = [d.hvc for d in evaluation.details if d.hvc is not None]
    if hvcs:
        summary["hvc"] = {"measured": len(hvcs), "mean": float(np.mean(hvcs))}
    sims = [d.ast_similarity for d in evaluation.details if d.ast_similarity is not None]
    if sims:
        summary["ast_similarity"] = {"scored": len(sims), "mean": float(np.mean(sims))}
    summary["environment"] = environment(evaluation)
    return _json_safe({**summary, **(extra or {})})


def environment(evaluation: DetailedEval) -> dict[str, Any]:
    """What produced the numbers, read off the results: liberty, clock period, estimator and
    the version of every tool that validated or measured a circuit (first seen wins)."""
    tools: dict[str, str] = {}
    for sample in evaluation.result.samples:
        for tool in sample.report.tools:
            tools.setdefault(tool.name, tool.version or "unknown")
    liberties: set[str] = set()
    periods: set[float] = set()
    estimators: set[str] = set()
    for measure in [*(d.ppa for d in evaluation.details), *evaluation.golden.values()]:
        if measure is None or measure.ppa is None:
            continue
        result = measure.ppa
        for tool in result.tools:
            tools.setdefault(tool.name, tool.version or "unknown")
        if result.liberty:
            liberties.add(result.liberty)
        if isinstance(period := result.details.get("period_ns"), int | float):
            periods.add(float(period))
        if isinstance(name := result.details.get("estimator"), str):
            estimators.add(name)
    env: dict[str, Any] = {}
    if estimators:
        env["estimator"] = ", ".join(sorted(estimators))
    if liberties:
        env["liberty"] = ", ".join(sorted(liberties))
    if periods:
        env["clock_period_ns"] = sorted(periods)
    env["tools"] = dict(sorted(tools.items()))
    return env


# --------------------------------------------------------------------------------------------
# SVG scatter plots
# --------------------------------------------------------------------------------------------


def _ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    span = hi - lo
    raw = span / max(count - 1, 1)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step) * step
    return [first + i * step for i in range(int((hi - first) / step + 1e-9) + 1)]


def _range(values: Sequence[float]) -> tuple[float, float]:
    """An axis over ``values``, at least :data:`MIN_AXIS_SPAN` of their magnitude wide (so a
    sub-percent difference is drawn small, not blown up to the whole frame), padded 8 %."""
    lo, hi = min(values), max(values)
    floor = MIN_AXIS_SPAN * max(abs(lo), abs(hi))
    if hi - lo < floor:
        mid = (lo + hi) / 2
        lo, hi = mid - floor / 2, mid + floor / 2
    if hi - lo <= abs(hi) * 1e-12:
        pad = abs(hi) * 0.1 or 1.0
        return lo - pad, hi + pad
    pad = (hi - lo) * 0.08
    return lo - pad, hi + pad


def _legend_svg(x: float, y: float, entries: Sequence[tuple[str, str]], width: float) -> tuple[
        str, float]:
    """Legend rows at (x, y): ``entries`` are (marker SVG at the origin, escaped label).

    Returns the SVG and the height it took, wrapping to a new row when ``width`` is full."""
    parts, cx, cy, row = ['<g class="legend">'], x, y, 16
    for marker, label in entries:
        need = 18 + 6.6 * len(html.unescape(label)) + 10
        if cx > x and cx + need > x + width:
            cx, cy = x, cy + row
        parts.append(f'<g transform="translate({cx + 5:.1f} {cy:.1f})">{marker}</g>'
                     f'<text x="{cx + 14:.1f}" y="{cy + 4:.1f}" class="tick">{label}</text>')
        cx += need
    parts.append("</g>")
    return "".join(parts), cy - y + row


def _golden_marker(x: float, y: float, size: float = 7.0) -> str:
    """The golden's marker path: a diamond, the one shape no method uses."""
    return (f"M{x:.1f},{y - size:.1f}L{x + size:.1f},{y:.1f}L{x:.1f},{y + size:.1f}"
            f"L{x - size:.1f},{y:.1f}Z")


def _axis_range(values: Sequence[float], golden: float | None) -> tuple[float, float, bool]:
    """(lo, hi, golden_inside): the axis spans the circuits; the golden joins it only when
    that widens the axis to at most :data:`GOLDEN_WIDEN` times the circuits' spread."""
    if not values:
        lo, hi = _range([golden] if golden is not None else [0.0])
        return lo, hi, golden is not None
    lo, hi = min(values), max(values)
    spread = max(hi - lo, MIN_AXIS_SPAN * max(abs(lo), abs(hi)))
    if spread <= abs(hi) * 1e-12:
        spread = abs(hi) * 0.2 or 1.0
    inside = golden is not None and (max(hi, golden) - min(lo, golden)) <= GOLDEN_WIDEN * spread
    lo, hi = _range([*values, *([golden] if inside and golden is not None else [])])
    return lo, hi, inside


def scatter_svg(points: Sequence[tuple[float, float, str, str]], colours: Mapping[str, str], *,
                xlabel: str, ylabel: str, golden: tuple[float, float] | None = None,
                width: int = 420, height: int = 300) -> str:
    """One scatter plot; ``points`` are ``(x, y, method, tooltip)``, both axes minimised.

    Circles carry class ``pt`` (``pt front`` on the non-dominated front of all methods
    together, which is also drawn as a staircase); the golden is a diamond of class
    ``golden``, drawn last so equal circuits never hide it. The axes span the circuits: a
    golden far outside them is pinned to the frame's edge (class ``golden off``) with an
    arrow towards it and its value, instead of squeezing the circuits into a corner.
    A legend (the methods present, golden, front) and "lower is better" are in the plot.

    Circuits whose values agree to :data:`~rtlforge.evaluation.findings.SIGNIFICANT_DIGITS`
    significant digits share one position (each keeps its own circle and tooltip;
    several methods there sit on a small ring around it) and a ``×N`` badge (class ``count``)
    says how many are there, so identical designs, also those equal to the golden, are never
    hidden. An axis spans at least :data:`MIN_AXIS_SPAN` of its values' magnitude.
    """
    left, right, top, bottom = 62, 18, 20, 44
    methods = list(dict.fromkeys(p[2] for p in points))
    entries = [(f'<circle r="4" fill="{colours.get(m, "#444")}"/>', _esc(m)) for m in methods]
    if golden is not None:
        entries.append((f'<path d="{_golden_marker(0, 0, 5)}" class="lg-golden"/>', "golden"))
    if points:
        entries.append(('<path d="M-6,0H6" class="stairs"/><circle r="3" class="lg-front" '
                        'fill="#fff"/>', "non-dominated front"))
    legend, legend_h = _legend_svg(left - 50, 0, entries, width - left + 40)
    pw, ph = width - left - right, height - top - bottom
    total_h = height + legend_h + 4
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{total_h:.0f}" '
             f'viewBox="0 0 {width} {total_h:.0f}" role="img" '
             f'aria-label="{_esc(xlabel)} versus {_esc(ylabel)}">',
             f'<text x="{left + pw}" y="{top - 5}" text-anchor="end" class="better">'
             "↙ lower is better on both axes</text>",
             f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" class="frame"/>']
    if not points and golden is None:
        parts.append(f'<text x="{left + pw / 2}" y="{top + ph / 2}" text-anchor="middle" '
                     'class="note">no measured circuits</text></svg>')
        return "".join(parts)
    x0, x1, gx_in = _axis_range([p[0] for p in points], golden[0] if golden else None)
    y0, y1, gy_in = _axis_range([p[1] for p in points], golden[1] if golden else None)

    def sx(v: float) -> float:
        return left + (v - x0) / (x1 - x0) * pw

    def sy(v: float) -> float:
        return top + ph - (v - y0) / (y1 - y0) * ph

    for t in _ticks(x0, x1):
        parts.append(f'<line x1="{sx(t):.1f}" y1="{top + ph}" x2="{sx(t):.1f}" '
                     f'y2="{top + ph + 4}" class="axis"/>'
                     f'<text x="{sx(t):.1f}" y="{top + ph + 16}" text-anchor="middle" '
                     f'class="tick">{_fmt(t, 4)}</text>')
    for t in _ticks(y0, y1):
        parts.append(f'<line x1="{left - 4}" y1="{sy(t):.1f}" x2="{left}" y2="{sy(t):.1f}" '
                     f'class="axis"/><text x="{left - 6}" y="{sy(t) + 4:.1f}" '
                     f'text-anchor="end" class="tick">{_fmt(t, 4)}</text>')
    parts.append(f'<text x="{left + pw / 2}" y="{height - 8}" text-anchor="middle" '
                 f'class="label">{_esc(xlabel)}</text>'
                 f'<text transform="translate(13 {top + ph / 2}) rotate(-90)" '
                 f'text-anchor="middle" class="label">{_esc(ylabel)}</text>')
    front = np.zeros(len(points), dtype=bool)
    if points:
        front = non_dominated(-np.array([(p[0], p[1]) for p in points], dtype=np.float64))
        stairs = sorted((points[i][0], points[i][1]) for i in np.flatnonzero(front))
        path = [f"M{sx(stairs[0][0]):.1f},{sy(stairs[0][1]):.1f}"]
        for (_, ya), (xb, yb) in pairwise(stairs):
            path.append(f"L{sx(xb):.1f},{sy(ya):.1f}L{sx(xb):.1f},{sy(yb):.1f}")
        parts.append(f'<path d="{"".join(path)}" class="stairs"/>')
    stacks: dict[tuple[float, float], list[int]] = {}
    for i, (x, y, _, _) in enumerate(points):
        stacks.setdefault((same_value(x), same_value(y)), []).append(i)
    badges = []
    for members in stacks.values():
        x, y = points[members[0]][0], points[members[0]][1]
        on_front = any(front[i] for i in members)  # duplicates of a front point are on it too
        ring = list(dict.fromkeys(points[i][2] for i in members))
        for i in members:
            method, tip = points[i][2], points[i][3]
            dx = dy = 0.0
            if len(ring) > 1:  # one position per method around the shared point
                angle = 2 * math.pi * ring.index(method) / len(ring) - math.pi / 2
                dx, dy = 5 * math.cos(angle), 5 * math.sin(angle)
            cls = "pt front" if on_front else "pt"
            parts.append(f'<circle cx="{sx(x) + dx:.1f}" cy="{sy(y) + dy:.1f}" r="4" '
                         f'class="{cls}" fill="{colours.get(method, "#444")}">'
                         f"<title>{_esc(tip)}</title></circle>")
        if len(members) > 1:
            badges.append(f'<text x="{sx(x) + 8:.1f}" y="{sy(y) - 7:.1f}" class="count">'
                          f"×{len(members)}<title>{len(members)} circuits measure the same "
                          "here</title></text>")
    if golden is not None:
        tip = f"golden: {_fmt(golden[0])}, {_fmt(golden[1])}"
        gx = sx(golden[0]) if gx_in else (left + pw if golden[0] > x1 else left)
        gy = sy(golden[1]) if gy_in else (top if golden[1] > y1 else top + ph)
        if gx_in and gy_in:
            parts.append(f'<path d="{_golden_marker(gx, gy)}" class="golden">'
                         f"<title>{tip}</title></path>")
        else:
            # an arrow from inside the frame to the pinned marker, pointing where the golden is
            dx = 0 if gx_in else (1 if golden[0] > x1 else -1)
            dy = 0 if gy_in else (-1 if golden[1] > y1 else 1)
            ax, ay = gx - 22 * dx, gy - 22 * dy
            parts.append(f'<line x1="{ax:.1f}" y1="{ay:.1f}" x2="{gx - 8 * dx:.1f}" '
                         f'y2="{gy - 8 * dy:.1f}" class="golden-arrow"/>'
                         f'<path d="{_golden_marker(gx, gy)}" class="golden off">'
                         f"<title>{tip} (off the axes)</title></path>")
            anchor = "end" if gx > left + pw / 2 else "start"
            lx = gx - 10 if anchor == "end" else gx + 10
            ly = gy + 16 if gy < top + ph / 2 else gy - 10
            parts.append(f'<text x="{lx:.1f}" y="{ly:.1f}" text-anchor="{anchor}" '
                         f'class="gold-label">golden off scale ({_fmt(golden[0], 3)}, '
                         f"{_fmt(golden[1], 3)})</text>")
    parts.extend(badges)  # over the golden: a golden with equal circuits shows their count
    parts.append(f'<g transform="translate(0 {height + 2})">{legend}</g>')
    parts.append("</svg>")
    return "".join(parts)


def line_svg(series: Mapping[str, Sequence[tuple[float, float | None]]],
             colours: Mapping[str, str], *, xlabel: str, ylabel: str, better: str,
             y_floor: float = 0.0, y_ceiling: float | None = 1.0,
             width: int = 400, height: int = 260) -> str:
    """Lines of ``(x, y)`` per method (class ``series``, one circle ``lp`` per point), a legend
    and ``better`` ("higher is better"...) in the plot. The y axis starts at ``y_floor`` and
    reaches at least ``y_ceiling`` so methods compare on one fixed scale."""
    left, right, top, bottom = 50, 12, 18, 40
    pw, ph = width - left - right, height - top - bottom
    entries = [(f'<path d="M-6,0H6" stroke="{colours.get(m, "#444")}" class="series"/>'
                f'<circle r="3" fill="{colours.get(m, "#444")}"/>', _esc(m)) for m in series]
    legend, legend_h = _legend_svg(left - 40, 0, entries, width - left + 30)
    total_h = height + legend_h + 4
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{total_h:.0f}" '
             f'viewBox="0 0 {width} {total_h:.0f}" role="img" '
             f'aria-label="{_esc(ylabel)} against {_esc(xlabel)}">',
             f'<text x="{left + pw}" y="{top - 5}" text-anchor="end" class="better">'
             f"{_esc(better)}</text>",
             f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" class="frame"/>']
    xs = [x for pts in series.values() for x, y in pts if y is not None]
    ys = [y for pts in series.values() for _, y in pts if y is not None and math.isfinite(y)]
    if not xs or not ys:
        parts.append(f'<text x="{left + pw / 2}" y="{top + ph / 2}" text-anchor="middle" '
                     'class="note">no data</text></svg>')
        return "".join(parts)
    x0, x1 = min(xs), max(xs)
    if x1 == x0:
        x0, x1 = x0 - 0.5, x1 + 0.5
    else:
        pad = (x1 - x0) * 0.04
        x0, x1 = x0 - pad, x1 + pad
    y0 = min(y_floor, *ys)
    y1 = max(y_ceiling if y_ceiling is not None else y0, *ys)
    if y1 - y0 <= 1e-12:
        y1 = y0 + 1.0
    y1 += (y1 - y0) * 0.05

    def sx(v: float) -> float:
        return left + (v - x0) / (x1 - x0) * pw

    def sy(v: float) -> float:
        return top + ph - (v - y0) / (y1 - y0) * ph

    xticks = sorted(set(xs)) if len(set(xs)) <= 12 else _ticks(x0, x1)
    for t in xticks:
        parts.append(f'<line x1="{sx(t):.1f}" y1="{top + ph}" x2="{sx(t):.1f}" '
                     f'y2="{top + ph + 4}" class="axis"/>'
                     f'<text x="{sx(t):.1f}" y="{top + ph + 15}" text-anchor="middle" '
                     f'class="tick">{_fmt(t, 3)}</text>')
    for t in _ticks(y0, y1):
        parts.append(f'<line x1="{left}" y1="{sy(t):.1f}" x2="{left + pw}" y2="{sy(t):.1f}" '
                     f'class="grid"/><text x="{left - 6}" y="{sy(t) + 3:.1f}" '
                     f'text-anchor="end" class="tick">{_fmt(t, 3)}</text>')
    parts.append(f'<text x="{left + pw / 2}" y="{height - 6}" text-anchor="middle" '
                 f'class="label">{_esc(xlabel)}</text>'
                 f'<text transform="translate(12 {top + ph / 2}) rotate(-90)" '
                 f'text-anchor="middle" class="label">{_esc(ylabel)}</text>')
    for method, pts in series.items():
        colour = colours.get(method, "#444")
        good = [(x, y) for x, y in pts if y is not None and math.isfinite(y)]
        if len(good) > 1:
            d = "".join(f"{'M' if i == 0 else 'L'}{sx(x):.1f},{sy(y):.1f}"
                        for i, (x, y) in enumerate(good))
            parts.append(f'<path d="{d}" stroke="{colour}" class="series"/>')
        for x, y in good:
            parts.append(f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="3" class="lp" '
                         f'fill="{colour}"><title>{_esc(method)} @{_fmt(x)}: {_fmt(y)}'
                         "</title></circle>")
    parts.append(f'<g transform="translate(0 {height + 2})">{legend}</g>')
    parts.append("</svg>")
    return "".join(parts)


# --------------------------------------------------------------------------------------------
# HTML
# --------------------------------------------------------------------------------------------

_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1320px}
h1{font-size:22px}h2{font-size:18px;margin-top:32px;border-bottom:1px solid #ccc}
h3{font-size:16px;margin:24px 0 4px}
table{border-collapse:collapse;margin:6px 0 12px}td,th{border:1px solid #ddd;padding:2px 6px;
text-align:left;vertical-align:top}th{background:#f4f4f4}td.n{text-align:right}
.plots{display:grid;grid-template-columns:repeat(auto-fill,minmax(360px,1fr));gap:12px}
.plots>svg{width:100%;height:auto}.frame{fill:#fff;stroke:#999}
.axis{stroke:#999}.tick{font-size:11px;fill:#444}.label{font-size:12.5px;fill:#222}
.note{font-size:12px;fill:#888}.stairs{fill:none;stroke:#000;stroke-width:1;stroke-dasharray:3 2}
.pt{stroke:#fff;stroke-width:1;opacity:.85}.pt.front{stroke:#000;stroke-width:2;opacity:1}
.golden,.lg-golden{fill:#ffd700;fill-opacity:.45;stroke:#7a5c00;stroke-width:1.5}
.legend span{display:inline-block;margin-right:14px}
.count{font-size:12px;font-weight:700;fill:#000;paint-order:stroke;stroke:#fff;stroke-width:3px}
.sw{display:inline-block;width:10px;height:10px;border-radius:5px;margin-right:4px}
.pass{color:#176317}.fail,.error{color:#a31515}.timeout,.infra_error{color:#8a6d00}
.msg{font-family:monospace;font-size:12px;white-space:pre-wrap;max-width:420px}
.golden.off{stroke-width:1.5}.golden-arrow{stroke:#b8860b;stroke-width:2}
.gold-label{font-size:11px;fill:#7a5c00}.better{font-size:11px;fill:#555;font-style:italic}
.lg-front{stroke:#000;stroke-width:2}.grid{stroke:#eee}
.series{fill:none;stroke-width:2}.lp{stroke:#fff;stroke-width:1}
.warn{background:#fff4ce;border-left:4px solid #e0a800;padding:4px 8px}
.callout{background:#eef6ff;border-left:4px solid #1f6feb;padding:6px 10px;margin:8px 0}
.callout p{margin:4px 0}.callout ul{margin:4px 0;padding-left:20px}
.collapse{background:#fff4ce;border-left:4px solid #e0a800;padding:6px 10px;margin:8px 0}
.better-v{color:#176317}.worse-v{color:#a31515}
details.circuit{margin:2px 0;border:1px solid #e4e4e4;border-radius:3px}
details.circuit>summary{cursor:pointer;padding:2px 6px;background:#fafafa;font-size:13px}
details.circuit pre{margin:0;padding:6px 8px;overflow:auto;max-height:420px;font-size:12px;
background:#fcfcfc}
"""


def _table(head: Sequence[str], rows: Sequence[Sequence[str]], numeric: set[int] | None = None
           ) -> str:
    """A table from already-escaped cells (callers escape; headers are escaped here)."""
    numeric = numeric or set()
    out = ["<table><tr>", *(f"<th>{_esc(h)}</th>" for h in head), "</tr>"]
    for row in rows:
        out.append("<tr>" + "".join(
            f'<td class="n">{c}</td>' if i in numeric else f"<td>{c}</td>"
            for i, c in enumerate(row)) + "</tr>")
    out.append("</table>")
    return "".join(out)


def _rhv_plots(methods: Mapping[str, Any], iters: Sequence[str],
               colours: Mapping[str, str]) -> str:
    """rHV and win rate against iteration per method: the paper's main figures."""
    plots = []
    for key, label in (("rhv", "rHV"), ("win_rate", "win rate")):
        series = {name: [(float(i), m.get(key, {}).get(i)) for i in iters]
                  for name, m in methods.items()}
        plots.append(line_svg(series, colours, xlabel="iteration", ylabel=label,
                              better="↑ higher is better"))
    return ('<div class="plots">' + "".join(plots) + "</div><p>Mean over (task, trial) cells "
            "at each iteration, against the front of all methods together.</p>")


def _metrics_html(metrics: Mapping[str, Any], colours: Mapping[str, str]) -> str:
    methods: Mapping[str, Any] = metrics.get("methods", {})
    if not methods:
        return "<p>No metrics (no method has a measured circuit).</p>"
    iters = [str(i) for i in metrics.get("iterations", [])]
    baselines = metrics.get("baselines") or []
    head = ["method", *(f"rHV@{i}" for i in iters), *(f"win rate@{i}" for i in iters),
            "diversity", "rHV (union of trials)"]
    if baselines:
        head.append("median rHV vs baselines' archive")
    rows = []
    for name, m in methods.items():
        rhv, win = m.get("rhv", {}), m.get("win_rate", {})
        row = [_esc(name), *(_fmt(rhv.get(i)) for i in iters),
               *(_fmt(win.get(i)) for i in iters), _fmt(m.get("diversity")),
               _fmt(m.get("rhv_union"))]
        if baselines:
            row.append(_fmt(m.get("rhv_vs_baseline_median")))
        rows.append(row)
    out = _rhv_plots(methods, iters, colours) + _table(head, rows, set(range(1, len(head))))
    if baselines:
        out += ("<p>Appendix E.2: the reference archive is the front of the union of the "
                "baselines " + ", ".join(_esc(b) for b in baselines) + " (all trials, final "
                "iteration); each method's rHV against it, median over (task, trial) cells. "
                "It may exceed 1.</p>")
    union = metrics.get("union_of_first_trials") or {}
    ns, ls = union.get("trials") or [], union.get("iterations") or []
    if ns and ls:
        cols = [(n, it) for n in ns for it in ls]
        out += ("<h3>Union of the first N trials (Appendix E.5)</h3>" + _table(
            ["method", *(f"N={n} @{it}" for n, it in cols)],
            [[_esc(name), *(_fmt(m.get("rhv_union_of_first_trials", {}).get(str(n), {})
                                 .get(str(it))) for n, it in cols)]
             for name, m in methods.items()], set(range(1, 1 + len(cols))))
                + "<p>rHV of the union of each method's solutions in its first N trials "
                "(lowest trial ids) up to the iteration shown, mean over tasks.</p>")
    comps = metrics.get("comparisons") or []
    if comps:
        cells = int(metrics.get("cells") or 0)
        few = cells < MIN_CI_CELLS
        flag = f' <span class="warn">⚠ {cells} cells</span>' if few else ""
        out += _table(["method", "versus", "mean rHV difference", "95% CI (nested bootstrap)",
                       "(task, trial) cells"],
                      [[_esc(c["method"]), _esc(c["versus"]), _fmt(c["rhv_diff"]),
                        f"[{_fmt(c['ci95'][0])}, {_fmt(c['ci95'][1])}]{flag}", str(cells)]
                       for c in comps], {2, 4})
        if few:
            out += (f'<p class="warn">⚠ These intervals rest on {cells} (task, trial) cells, '
                    f"fewer than {MIN_CI_CELLS}: the bootstrap has only a few distinct "
                    "resamples, so read them as a rough range, not a 95% confidence "
                    "interval. Run more trials or tasks for a CI to rely on.</p>")
    out += (f"<p>{_esc(metrics.get('tasks', 0))} tasks, {_esc(metrics.get('cells', 0))} "
            "(task, trial) cells. rHV and win rate are computed in objective space (golden / "
            "generated PPA ratios) against the front of all methods together.</p>")
    return out


def _task_section(task_id: str, details: Sequence[SampleDetail], golden: PPAMeasure | None,
                  colours: Mapping[str, str], methods: Sequence[str]) -> str:
    out = [f"<h3>{_esc(task_id)}</h3>"]
    if golden is not None:
        out.append("<p>golden: " + (
            f"power {_fmt(golden.power)} mW, delay {_fmt(golden.delay)} ns, "
            f"area {_fmt(golden.area)} µm², {_esc(golden.cells)} cells"
            if golden.ok else f"not measured ({_esc(golden.error)})") + "</p>")
    verdicts = ("pass", "fail", "error", "timeout", "infra_error")
    rows = []
    for m in methods:
        mine = Counter(d.verdict for d in details if d.method == m)
        if mine:
            rows.append([_esc(m), str(sum(mine.values())), *(str(mine[v]) for v in verdicts)])
    out.append(_table(["method", "samples", *verdicts], rows, set(range(1, 7))))
    findings = find(details, golden)
    out.append(_best_html(findings) + _collapse_html(findings))
    measured = [d for d in details if d.passed and d.ppa is not None and d.ppa.ok]
    if measured:
        out.append('<div class="plots">')
        for xa, ya in OBJECTIVE_PAIRS:
            pts = [(getattr(d.ppa, xa), getattr(d.ppa, ya), d.method,
                    f"{d.method} trial {d.trial} iteration {d.iteration}: {xa} "
                    f"{_fmt(getattr(d.ppa, xa))}, {ya} {_fmt(getattr(d.ppa, ya))}")
                   for d in measured]
            gold = ((getattr(golden, xa), getattr(golden, ya))
                    if golden is not None and golden.ok else None)
            out.append(scatter_svg(pts, colours, xlabel=f"{xa} ({_UNITS[xa]})",
                                   ylabel=f"{ya} ({_UNITS[ya]})", golden=gold))
        out.append("</div>")
        out.append(_groups_html(findings))
    rows = []
    for d in sorted(details, key=lambda d: (d.method, d.trial, d.iteration, d.index)):
        ppa = d.ppa
        ppa_cells = ([_fmt(ppa.power), _fmt(ppa.delay), _fmt(ppa.area)]
                     if ppa is not None and ppa.ok else
                     [f'<span title="{_esc(ppa.error)}">error</span>' if ppa else "–", "–", "–"])
        note = d.message or ""
        if len(note) > _MESSAGE_CHARS:
            note = note[:_MESSAGE_CHARS] + "…"
        rows.append([
            _esc(d.method), str(d.trial), str(d.iteration),
            f'<span class="{_esc(d.verdict)}">{_esc(d.verdict)}</span>', *ppa_cells,
            _fmt(d.hvc), _fmt(d.ast_similarity, 3),
            _esc(d.source or ""), f'<div class="msg">{_esc(note)}</div>',
        ])
    out.append(_table(["method", "trial", "iter", "verdict", "power (mW)", "delay (ns)",
                       "area (µm²)", "HVC", "AST sim", "source", "first message"],
                      rows, {1, 2, 4, 5, 6, 7, 8}))
    out.append(_circuits_html(details))
    return "".join(out)



# --------------------------------------------------------------------------------------------
# findings: the best design, synthesis collapse, identical measurements
# --------------------------------------------------------------------------------------------

#: Circuits named per measurement in the grouping table and the notes (the rest are counted).
_MAX_NAMED = 6


def _label(d: SampleDetail) -> str:
    return f"{_esc(d.method)} · trial {d.trial} · iteration {d.iteration}"


def _labels(group: PPAGroup, limit: int = _MAX_NAMED) -> str:
    named = [_label(d) for d in group.members[:limit]]
    rest = len(group.members) - len(named)
    return "; ".join(named) + (f"; and {rest} more" if rest > 0 else "")


def _pct(value: float | None) -> str:
    """A signed percentage, green when lower (better), red when higher."""
    if value is None or not math.isfinite(value):
        return "–"
    pct = value * 100
    if abs(pct) < 0.05:
        return "±0 %"
    cls = "better-v" if pct < 0 else "worse-v"
    text = f"{pct:+.1f} %".replace("-", "−")
    return f'<span class="{cls}">{text}</span>'


def _ppa_text(group: PPAGroup) -> str:
    return (f"power {_fmt(group.power)} mW, delay {_fmt(group.delay)} ns, "
            f"area {_fmt(group.area)} µm²")


def _versus(group: PPAGroup, reference: PPAGroup | PPAMeasure) -> str:
    return ", ".join(f"{o} {_pct(relative(group.value(o), float(getattr(reference, o))))}"
                     for o in OBJECTIVES)


def _golden_relation(group: PPAGroup, golden: PPAMeasure) -> str:
    diffs = [group.value(o) - float(getattr(golden, o)) for o in OBJECTIVES]
    if group.golden_equal:
        return "the same PPA as the golden"
    if all(d <= 0 for d in diffs):
        return "dominates the golden (no worse on any objective)"
    if all(d >= 0 for d in diffs):
        return "dominated by the golden"
    return "trades with the golden (better on some objectives, worse on others)"


def _spread_text(findings: TaskFindings) -> str:
    parts = []
    for o in OBJECTIVES:
        v = findings.spread.get(o)
        if v is None or not math.isfinite(v):
            continue
        if v < TIGHT_SPREAD:
            parts.append(f"{o} all within {v * 100:.2g} %")
        else:
            parts.append(f"{o} {v * 100:.1f} %")
    return ", ".join(parts)


def _best_html(findings: TaskFindings) -> str:
    """The callout: which design is best, its PPA against the golden, and why."""
    best = findings.best
    if best is None:
        return ""
    g = best.group
    same = (f" (and {len(g.members) - 1} more circuit{'s' if len(g.members) > 2 else ''} "
            "with the same PPA)" if len(g.members) > 1 else "")
    out = ['<div class="callout">',
           f"<p><b>Best design: {_label(g.members[0])}</b>{same}: {_ppa_text(g)}.</p>"]
    gold = findings.golden
    if gold is not None:
        out.append(f"<p>Against the golden: {_versus(g, gold)}; "
                   f"{_golden_relation(g, gold)}.</p>")
    reference = "the golden" if best.against == "golden" else "the front's best value of each"
    lowest = (", and the lowest " + " and ".join(best.lowest) + " of all") if best.lowest else ""
    if len(findings.groups) == 1:
        why = (f"all {findings.measured} passing circuits measure the same PPA" if
               findings.measured > 1 else "it is the only passing circuit with PPA")
    elif best.dominates_all:
        why = ("it dominates every other passing design: none is better on power, delay or "
               "area")
    else:
        why = (f"the front holds {len(findings.front)} distinct measurements that trade "
               "against each other; this one has the lowest geometric mean of power, delay and "
               f"area relative to {reference} ({best.score:.3f}×){lowest}")
    out.append(f"<p>Why: {why}.</p>")
    others = [f for f in findings.front if f is not g]
    if others:
        out.append("<p>What the rest of the front trades against it:</p><ul>" + "".join(
            f"<li>{_labels(f, 2)}: {_versus(f, g)}</li>" for f in others) + "</ul>")
    spread = _spread_text(findings)
    if spread and len(findings.groups) > 1:
        out.append(f"<p>Spread over the {findings.measured} passing circuits "
                   f"(max − min, relative to min): {spread}.</p>")
    out.append("</div>")
    return "".join(out)


def _collapse_html(findings: TaskFindings) -> str:
    """A note for every measurement that several distinct designs share."""
    notes = []
    for g in findings.collapsed:
        gold = ", the golden's too" if g.golden_equal else ""
        notes.append(
            "<p><b>Same metrics from different RTL.</b> "
            f"Synthesis mapped {g.sources} different designs to the same netlist "
            f"metrics ({_ppa_text(g)}{gold}, to {SIGNIFICANT_DIGITS} significant digits); "
            f"the {len(g.members)} circuits: {_labels(g)}. Their RTL differs, but after "
            "mapping on this liberty they measure alike, so they are one point of the front, "
            "not several.</p>")
    return f'<div class="collapse">{"".join(notes)}</div>' if notes else ""


def _groups_html(findings: TaskFindings) -> str:
    """The passing circuits grouped by identical PPA (one row per plotted position)."""
    if not findings.groups:
        return ""
    gold = findings.golden
    best = findings.best.group if findings.best is not None else None
    rows = []
    for n, g in enumerate(findings.groups, 1):
        mark = ("★ best" if g is best else "front") if g.on_front else "dominated"
        vs = ([_pct(relative(g.value(o), float(getattr(gold, o)))) for o in OBJECTIVES]
              if gold is not None else ["–"] * 3)
        rows.append([str(n), _fmt(g.power), _fmt(g.delay), _fmt(g.area), *vs,
                     str(len(g.members)), str(g.sources) + (" · collapsed" if g.collapsed else ""),
                     mark + (" · = golden" if g.golden_equal else ""), _labels(g)])
    return ("<h4>Distinct measurements</h4>" + _table(
        ["#", "power (mW)", "delay (ns)", "area (µm²)", "power vs golden", "delay vs golden",
         "area vs golden", "circuits", "distinct designs", "front", "which"], rows,
        set(range(0, 9))) + "<p>Passing circuits with the same power, delay and area "
        f"(to {SIGNIFICANT_DIGITS} significant digits, as shown) are one row and one plotted "
        "position (its ×N badge). "
        "Distinct designs: their sources differ beyond comments and whitespace; "
        "<i>collapsed</i>: synthesis gave different designs the same metrics.</p>")


def _shown_circuits(details: Sequence[SampleDetail]) -> list[SampleDetail]:
    """At most :data:`MAX_CIRCUITS_PER_TASK`, taken round robin over methods (each in trial,
    iteration order) so a capped task still shows every method's early and late circuits."""
    queues: dict[str, list[SampleDetail]] = {}
    for d in sorted(details, key=lambda d: (d.method, d.trial, d.iteration, d.index)):
        queues.setdefault(d.method, []).append(d)
    picked: list[SampleDetail] = []
    while len(picked) < MAX_CIRCUITS_PER_TASK and any(queues.values()):
        for queue in queues.values():
            if queue and len(picked) < MAX_CIRCUITS_PER_TASK:
                picked.append(queue.pop(0))
    return sorted(picked, key=lambda d: (d.method, d.trial, d.iteration, d.index))


def _circuits_html(details: Sequence[SampleDetail]) -> str:
    """Each circuit's source in a collapsed ``<details>`` headed by its verdict, PPA and HVC.
    The source is untrusted text: escaped whole, so markup in it (``</details><script>``)
    shows as text and cannot close the element or run."""
    shown = _shown_circuits(details)
    if not shown:
        return ""
    out = ["<h4>Circuits</h4>"]
    if len(shown) < len(details):
        out.append(f'<p class="warn">Showing {len(shown)} of {len(details)} circuits (at most '
                   f"{MAX_CIRCUITS_PER_TASK} per task, shared over the methods); every circuit "
                   "is in results.jsonl / candidates.jsonl.</p>")
    for d in shown:
        ppa = d.ppa
        if ppa is not None and ppa.ok:
            ppa_text = (f"power {_fmt(ppa.power)} mW · delay {_fmt(ppa.delay)} ns · "
                        f"area {_fmt(ppa.area)} µm²")
        elif ppa is not None:
            ppa_text = "PPA error"
        else:
            ppa_text = "no PPA"
        head = (f"{_esc(d.method)} · trial {d.trial} · iteration {d.iteration} · "
                f'<span class="{_esc(d.verdict)}">{_esc(d.verdict)}</span> · {ppa_text} · '
                f"HVC {_fmt(d.hvc)}" + (f" · {_esc(d.source)}" if d.source else ""))
        code = d.code
        if code is None or not code.strip():
            body = '<p class="note">no Verilog was extracted from this completion</p>'
        else:
            cut = ""
            if len(code) > MAX_SOURCE_CHARS:
                cut = (f"\n… cut after {MAX_SOURCE_CHARS} of {len(code)} characters "
                       "(the whole text is in the JSONL files)")
                code = code[:MAX_SOURCE_CHARS]
            body = f"<pre><code>{_esc(code)}{_esc(cut)}</code></pre>"
        if d.message and not d.passed:
            note = d.message[:_MESSAGE_CHARS] + ("…" if len(d.message) > _MESSAGE_CHARS else "")
            body = f'<div class="msg">{_esc(note)}</div>' + body
        out.append(f'<details class="circuit"><summary>{head}</summary>{body}</details>')
    return "".join(out)


def _environment_rows(env: Mapping[str, Any], generated: str | None) -> list[list[str]]:
    rows = []
    for key, label in (("estimator", "PPA estimator"), ("liberty", "liberty")):
        if env.get(key):
            rows.append([label, _esc(env[key])])
    periods = env.get("clock_period_ns") or []
    if periods:
        rows.append(["clock period (ns)", _esc(", ".join(_fmt(float(p)) for p in periods))])
    tools = env.get("tools") or {}
    if tools:
        rows.append(["tools", "<br>".join(f"{_esc(n)} {_esc(v)}" for n, v in tools.items())])
    if generated:
        rows.append(["report generated", _esc(generated)])
    return rows


def render_html(summary: Mapping[str, Any], details: Sequence[SampleDetail],
                golden: Mapping[str, PPAMeasure], *, title: str = "rtlforge eval report",
                generated: str | None = None) -> str:
    """The whole report as one HTML string (no scripts, no external resources).

    ``generated`` (a timestamp) is shown with the environment; it is not in summary.json,
    which stays the same when a finished run is reported again."""
    methods = sorted({d.method for d in details})
    colours = {m: _PALETTE[i % len(_PALETTE)] for i, m in enumerate(methods)}
    out = ["<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">",
           f"<title>{_esc(title)}</title><style>{_CSS}</style></head><body>",
           f"<h1>{_esc(title)}</h1>"]
    info = summary.get("run", {})
    if info:
        out.append(_table(["setting", "value"],
                          [[_esc(k), _esc(", ".join(map(str, v)) if isinstance(v, list) else v)]
                           for k, v in info.items()]))
    env_rows = _environment_rows(summary.get("environment") or {}, generated)
    if env_rows:
        out.append("<h2>Environment</h2>" + _table(["", "value"], env_rows))
    verdicts = summary.get("verdicts", {})
    out.append(f"<p>{_esc(summary.get('samples', len(details)))} samples over "
               f"{_esc(summary.get('tasks', 0))} tasks. Verdicts: "
               + ", ".join(f"{_esc(k)} {_esc(v)}" for k, v in sorted(verdicts.items()))
               + "</p>")
    out.append("<h2>Methods</h2>")
    per_method: Mapping[str, Any] = summary.get("methods", {})
    ks = sorted({k for m in per_method.values() for k in m.get("pass_at_k", {})},
                key=lambda k: int(k.split("@")[1]))
    rows = [[_esc(name), str(m["samples"]), str(m["passed"]), _fmt(m["pass_rate"], 3),
             *(_fmt(m["pass_at_k"].get(k)) for k in ks), str(m["measured"]),
             ", ".join(f"{_esc(v)} {_esc(c)}" for v, c in m["verdicts"].items())]
            for name, m in per_method.items()]
    out.append(_table(["method", "samples", "passed", "pass rate", *ks, "PPA measured",
                       "verdicts"], rows, set(range(1, 5 + len(ks)))))
    gold_icon = ('<svg width="14" height="14" viewBox="-7 -7 14 14" class="sw-svg">'
                 f'<path d="{_golden_marker(0, 0, 6)}" class="lg-golden"/></svg>')
    out.append('<p class="legend">' + "".join(
        f'<span><i class="sw" style="background:{colours[m]}"></i>{_esc(m)}</span>'
        for m in methods) + f"<span>{gold_icon} golden</span>"
        "<span>black ring / dashed line: non-dominated front</span></p>")
    if "metrics" in summary:
        out.append("<h2>Pareto metrics</h2>" + _metrics_html(summary["metrics"], colours))
    files = summary.get("unmatched_files") or []
    if files:
        out.append("<h2>Unmatched sample files</h2>" + _table(
            ["method", "file", "reason"],
            [[_esc(f.get("method")), _esc(f.get("path")), _esc(f.get("reason"))] for f in files]))
    aliased = summary.get("aliased_files") or []
    if aliased:
        out.append("<h2>Files matched under another name</h2>" + _table(
            ["method", "file", "task", "how"],
            [[_esc(f.get("method")), _esc(f.get("path")), _esc(f.get("task_id")),
              _esc(f.get("how"))] for f in aliased]))
    out.append("<h2>Tasks</h2><p>Scatter axes span the measured circuits, at least "
               f"{MIN_AXIS_SPAN:.0%} of the values (small differences look small); the golden "
               f"joins them when that widens an axis at most {GOLDEN_WIDEN:g}-fold, otherwise "
               "it is pinned to the plot's edge with an arrow and its value. Circuits with the "
               "same values share a position marked ×N. Every circuit's source is under "
               f"<i>Circuits</i> (at most {MAX_CIRCUITS_PER_TASK} per task).</p>")
    by_task: dict[str, list[SampleDetail]] = {}
    for d in details:
        by_task.setdefault(d.task_id, []).append(d)
    for task_id in sorted(by_task):
        out.append(_task_section(task_id, by_task[task_id], golden.get(task_id), colours,
                                 methods))
    out.append("</body></html>\n")
    return "".join(out)


def write_report(directory: str | Path, evaluation: DetailedEval,
                 summary: Mapping[str, Any], *, title: str = "rtlforge eval report"
                 ) -> dict[str, Path]:
    """Write summary.json, records.jsonl (metrics format) and report.html into ``directory``."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    paths = {name: directory / name for name in ("summary.json", "records.jsonl", "report.html")}
    paths["summary.json"].write_text(json.dumps(_json_safe(summary), indent=2,
                                                allow_nan=False) + "\n")
    with paths["records.jsonl"].open("w") as fh:
        for record in evaluation.records():
            fh.write(json.dumps(_json_safe(record), allow_nan=False) + "\n")
    generated = datetime.now(UTC).isoformat(timespec="seconds")
    paths["report.html"].write_text(
        render_html(summary, evaluation.details, evaluation.golden, title=title,
                    generated=generated), encoding="utf-8")
    return paths
