"""Area-time exploration: which of several valid microarchitectures of a task are worth building.

For a workload W at clock frequency f0 (issue 13, section 4):

- ``N_W``: clock cycles from the first input transaction offered to the last output accepted,
  both cycles counted (``last - first + 1``; one combinational transaction takes 1 cycle, and a
  design that accepts every cycle with latency L finishes N transactions in N + L cycles). It is
  read from the testbench log of one BEHAVE-Sim run of W (``C F`` and the last output line).
- ``tau_W = N_W / f0``, in ns.
- Area (um^2) and critical path (ns, OpenSTA's worst arrival) from the PPA estimator, with the
  clock period 1/f0 as its constraint; *meets timing* means critical path <= 1/f0.
- The empirical area-time Pareto front (both minimised) among the candidates that pass B* (the
  task's full BEHAVE-Sim check), complete W with the golden's outputs and meet timing at f0.
  Every other candidate carries the first criterion it misses, as a typed status and a reason.

The workload is a fixed, seeded stimulus (:class:`Workload`): one reset, then ``transactions``
back-to-back transactions of seeded random values (configuration values held), no idle gaps
and outputs always ready, so ``N_W`` measures the design's own latency and throughput and not
the testbench's pacing. Infrastructure failures are a status of their own, never a verdict.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from rtlforge.behave.base import Failure
from rtlforge.behave.sim.check import BehaveResult, check_rtl
from rtlforge.behave.sim.golden import golden_model
from rtlforge.behave.sim.stimulus import (
    Stimulus,
    StimulusConfig,
    effective_config,
    generate_stimulus,
)
from rtlforge.behave.sim.task import BehaveTask
from rtlforge.core.errors import RtlforgeError, is_infra
from rtlforge.core.interfaces import PPAResult
from rtlforge.core.models import Candidate, SourceFile
from rtlforge.pareto.hypervolume import non_dominated

if TYPE_CHECKING:
    from rtlforge.behave.model import BehaviorModel

__all__ = ["AreaTimePoint", "AreaTimeResult", "NamedDesign", "Workload", "explore_area_time",
           "render_report", "write_report"]

Status = Literal["front", "dominated", "fails_b_star", "incomplete_workload", "misses_timing",
                 "unmeasured", "infra_error"]
#: Statuses that exclude a candidate from the front (why, in the order they are tested).
EXCLUDED = ("infra_error", "fails_b_star", "incomplete_workload", "unmeasured", "misses_timing")


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Workload(_Frozen):
    """W: ``transactions`` back-to-back seeded transactions after one reset, outputs always
    ready (no idle gaps, no backpressure, no mid-stream reset)."""

    transactions: int = Field(64, ge=1, le=100_000)
    seed: int = 0

    def stimulus(self, task: BehaveTask) -> Stimulus:
        return generate_stimulus(task, StimulusConfig(
            seed=self.seed, sequences=1, transactions=self.transactions, edge_sweep=False,
            idle_probability=0.0, max_gap=0, reset_probability=0.0, continuous_fraction=0.0,
            backpressure=False))


class NamedDesign(_Frozen):
    """One candidate architecture: a name for the report and its source files."""

    name: str
    candidate: Candidate


class AreaTimePoint(_Frozen):
    """One candidate's measurements and where it stands; ``reason`` says why it is excluded."""

    name: str
    files: tuple[str, ...]
    status: Status
    reason: str | None = None
    check_verdict: str | None = None  # BEHAVE-Sim against B* on the task's stimulus
    workload_verdict: str | None = None  # the same check on W
    cycles: int | None = None  # N_W
    time_ns: float | None = None  # tau_W
    area_um2: float | None = None
    critical_path_ns: float | None = None
    slack_ns: float | None = None  # 1/f0 - critical path
    cells: int | None = None
    #: The design's source files as measured (untrusted text: the report escapes it).
    sources: tuple[SourceFile, ...] = ()

    @property
    def on_front(self) -> bool:
        return self.status == "front"


class AreaTimeResult(_Frozen):
    task: str
    freq_mhz: float
    period_ns: float
    workload: Workload
    check: StimulusConfig  # the stimulus of the B* check
    liberty: str
    candidates: tuple[AreaTimePoint, ...]

    @property
    def front(self) -> tuple[AreaTimePoint, ...]:
        """The Pareto-optimal candidates, fastest first."""
        return tuple(sorted((p for p in self.candidates if p.on_front),
                            key=lambda p: (p.time_ns or 0.0, p.area_um2 or 0.0)))


def _first_line(result: BehaveResult) -> str:
    if result.first_failure is not None:
        return result.first_failure.describe().splitlines()[0]
    return (result.message.splitlines() or [result.verdict])[0]


def _expected_outputs(task: BehaveTask, golden: BehaviorModel, stimulus: Stimulus) -> int:
    """Output transactions the golden emits on ``stimulus`` (all interfaces together)."""
    from rtlforge.behave.sim.stimulus import input_values

    instance = golden.instance()
    count = 0
    for n, txn in enumerate(stimulus.transactions):
        if txn.reset and n > 0:
            instance.reset()
        out = instance.process(input_values(task, txn))
        if not isinstance(out, Failure):
            count += sum(all(e.name in out for e in iface.endpoints) for iface in task.outputs)
    return count


@dataclass(frozen=True)
class _Measured:
    """What one candidate's runs gave; :func:`_status` decides where it stands."""

    design: NamedDesign
    check: BehaveResult
    workload: BehaveResult | None = None  # None: not run (the design does not compile, ...)
    cycles: int | None = None  # N_W, when W delivered every output
    ppa: PPAResult | None = None
    ppa_error: str | None = None
    ppa_infra: bool = False


def _measure(task: BehaveTask, design: NamedDesign, *, golden: BehaviorModel,
             expected_outputs: int, workload: Stimulus, check: StimulusConfig,
             period_ns: float, estimator: Any, runner: Any, timeout_s: float) -> _Measured:
    """Every measurement one candidate allows."""
    checked = check_rtl(task, design.candidate, runner=runner, stimulus=check,
                        golden=golden.instance(), timeout_s=timeout_s)
    if checked.verdict in ("error", "infra_error", "timeout"):
        return _Measured(design, checked)  # it does not compile, or nothing is known
    ran = check_rtl(task, design.candidate, runner=runner, stimulus=workload,
                    golden=golden.instance(), timeout_s=timeout_s)
    first, last = ran.metrics.get("first_offer_cycle"), ran.metrics.get("last_output_cycle")
    stopped = any(v.kind in ("watchdog", "early_end", "incomplete") for v in ran.violations)
    complete = ran.verdict == "pass" or (ran.verdict == "fail" and not stopped
                                         and ran.coverage.outputs == expected_outputs)
    # a wrong design that still delivered every output gets its N_W shown (never a front)
    cycles = int(last) - int(first) + 1 if complete and first is not None \
        and last is not None else None
    try:
        ppa = estimator.estimate(design.candidate, task.top, runner, clock=task.clock,
                                 period_ns=period_ns)
    except Exception as exc:  # noqa: BLE001 - classified: only a DesignError is the design's
        return _Measured(design, checked, ran, cycles,
                         ppa_error=(str(exc).splitlines() or [type(exc).__name__])[0],
                         ppa_infra=not isinstance(exc, RtlforgeError) or is_infra(exc))
    return _Measured(design, checked, ran, cycles, ppa)


def _status(m: _Measured, period_ns: float) -> tuple[Status, str | None]:
    """The first criterion the candidate misses (EXCLUDED order), or ``dominated`` for now."""
    unresolved = ("infra_error", "timeout")
    if m.check.verdict in unresolved or m.ppa_infra or (
            m.workload is not None and m.workload.verdict in unresolved):
        why = m.ppa_error if m.ppa_infra else _first_line(
            m.check if m.check.verdict != "pass" else m.workload)  # type: ignore[arg-type]
        return "infra_error", f"not measured (infrastructure or time limit): {why}"
    if m.check.verdict != "pass":
        return "fails_b_star", f"fails B* ({m.check.verdict}): {_first_line(m.check)}"
    if m.workload is None or m.workload.verdict != "pass" or m.cycles is None:
        what = m.workload.verdict if m.workload is not None else "not run"
        why = _first_line(m.workload) if m.workload is not None else ""
        return "incomplete_workload", f"does not complete W ({what}): {why}"
    if m.ppa is None:
        return "unmeasured", f"no PPA: {m.ppa_error}"
    if m.ppa.delay_ns > period_ns:
        return "misses_timing", (f"misses timing: critical path {m.ppa.delay_ns:.3f} ns "
                                 f"> period {period_ns:.3f} ns")
    return "dominated", None


def explore_area_time(task: BehaveTask, designs: Sequence[NamedDesign], *, freq_mhz: float,
                      estimator: Any, runner: Any = None, workload: Workload | None = None,
                      check: StimulusConfig | None = None,
                      timeout_s: float = 120.0) -> AreaTimeResult:
    """Measure every design on W at ``freq_mhz`` and mark the area-time Pareto front.

    ``estimator`` is a PPA estimator (e.g. ``host.create("ppa_estimator", "yosys-sta",
    liberty=...)``); ``check`` the stimulus of the B* check (default: the issue's baseline);
    ``runner`` a sandbox runner (default: one made and closed here).
    """
    if not freq_mhz > 0:
        raise ValueError(f"the frequency must be positive, not {freq_mhz!r} MHz")
    names = [d.name for d in designs]
    if len(set(names)) != len(names):
        raise ValueError(f"candidate names must be distinct: {names}")
    from rtlforge.sandbox.runner import SandboxRunner

    period_ns = 1000.0 / freq_mhz
    workload = workload or Workload()
    stim = workload.stimulus(task)
    golden = golden_model(task)  # a golden that does not load raises: the task's problem
    own = runner is None
    active = runner if runner is not None else SandboxRunner()
    try:
        expected = _expected_outputs(task, golden, stim)
        measured = [_measure(task, d, golden=golden, expected_outputs=expected, workload=stim,
                             check=check or StimulusConfig(), period_ns=period_ns,
                             estimator=estimator, runner=active, timeout_s=timeout_s)
                    for d in designs]
    finally:
        if own:
            active.close()
    points = []
    for m in measured:
        status, reason = _status(m, period_ns)
        crit = m.ppa.delay_ns if m.ppa is not None else None
        points.append(AreaTimePoint(
            name=m.design.name, files=tuple(f.name for f in m.design.candidate.files),
            status=status, reason=reason, check_verdict=m.check.verdict,
            workload_verdict=m.workload.verdict if m.workload is not None else None,
            cycles=m.cycles, time_ns=m.cycles * period_ns if m.cycles is not None else None,
            area_um2=m.ppa.area_um2 if m.ppa is not None else None, critical_path_ns=crit,
            slack_ns=period_ns - crit if crit is not None else None,
            cells=m.ppa.cells if m.ppa is not None else None,
            sources=tuple(m.design.candidate.files)))
    eligible = [i for i, p in enumerate(points) if p.status == "dominated"]
    if eligible:
        # both minimised: negate for the maximising non-dominance test
        objectives = np.array([[-points[i].area_um2, -points[i].time_ns]  # type: ignore[operator]
                               for i in eligible])
        best = non_dominated(objectives)
        on_front = [points[i] for i, b in zip(eligible, best, strict=True) if b]
        for i, b in zip(eligible, best, strict=True):
            points[i] = points[i].model_copy(update=(
                {"status": "front"} if b else {"reason": _dominated_by(points[i], on_front)}))
    liberty = next((m.ppa.liberty for m in measured if m.ppa is not None and m.ppa.liberty),
                   "not measured")
    return AreaTimeResult(task=task.id, freq_mhz=freq_mhz, period_ns=period_ns,
                          workload=workload, check=effective_config(task, check), liberty=liberty,
                          candidates=tuple(points))


def _dominated_by(point: AreaTimePoint, front: Sequence[AreaTimePoint]) -> str:
    """Which front candidates are at least as small and as fast (one of them strictly)."""
    names = [f.name for f in front
             if f.area_um2 <= point.area_um2 and f.time_ns <= point.time_ns]  # type: ignore[operator]
    return f"dominated by {', '.join(names)} (no larger, no slower)"


# ------------------------------------------------------------------------------ the report

_STYLE = {  # status -> (fill, stroke, legend text)
    "front": ("#1f6feb", "#0b3d91", "on the Pareto front"),
    "dominated": ("#ffffff", "#1f6feb", "valid, dominated"),
    "misses_timing": ("#ffffff", "#d97706", "misses timing at f0"),
    "fails_b_star": ("#ffffff", "#c62828", "fails B* (wrong)"),
    "incomplete_workload": ("#ffffff", "#c62828", "does not complete W"),
}


def _ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    span = hi - lo if hi > lo else max(abs(hi), 1.0)
    raw = span / count
    magnitude = 10 ** np.floor(np.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    start = np.floor(lo / step) * step
    return [float(start + k * step) for k in range(int(np.ceil((hi - start) / step)) + 1)]


def _svg(result: AreaTimeResult) -> str:
    """The scatter plot: tau_W across, area up; the front as a staircase; excluded points
    hollow in their status colour, each labelled with its name."""
    pts = [p for p in result.candidates if p.time_ns is not None and p.area_um2 is not None]
    width, height, left, right, top, bottom = 760, 460, 90, 210, 30, 60
    if not pts:
        return ("<p><em>No candidate has both a workload time and an area to plot.</em></p>")
    xs = [p.time_ns for p in pts]
    ys = [p.area_um2 for p in pts]
    xt = _ticks(min(xs) * 0.9, max(xs) * 1.05)  # type: ignore[type-var, operator]
    yt = _ticks(min(ys) * 0.9, max(ys) * 1.05)  # type: ignore[type-var, operator]
    x0, x1, y0, y1 = xt[0], xt[-1], yt[0], yt[-1]
    pw, ph = width - left - right, height - top - bottom

    def sx(x: float) -> float:
        return left + (x - x0) / (x1 - x0) * pw

    def sy(y: float) -> float:
        return top + ph - (y - y0) / (y1 - y0) * ph

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" style="max-width:100%;height:auto" '
           'font-family="sans-serif" font-size="12" role="img" aria-label="area-time plot">',
           f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="#fafafa" '
           'stroke="#888"/>']
    for x in xt:
        out.append(f'<line x1="{sx(x):.1f}" y1="{top}" x2="{sx(x):.1f}" y2="{top + ph}" '
                   'stroke="#e3e3e3"/>')
        out.append(f'<text x="{sx(x):.1f}" y="{top + ph + 16}" text-anchor="middle">{x:g}</text>')
    for y in yt:
        out.append(f'<line x1="{left}" y1="{sy(y):.1f}" x2="{left + pw}" y2="{sy(y):.1f}" '
                   'stroke="#e3e3e3"/>')
        out.append(f'<text x="{left - 6}" y="{sy(y) + 4:.1f}" text-anchor="end">{y:g}</text>')
    out.append(f'<text x="{left + pw / 2}" y="{height - 18}" text-anchor="middle">'
               f'workload time τ_W = N_W / f0 (ns), f0 = {result.freq_mhz:g} MHz</text>')
    out.append(f'<text transform="translate(22,{top + ph / 2}) rotate(-90)" '
               'text-anchor="middle">area (µm²)</text>')
    front = result.front
    if len(front) > 1:  # the staircase: what is attainable, fastest to smallest
        path = [f"M{sx(front[0].time_ns):.1f},{sy(front[0].area_um2):.1f}"]  # type: ignore[arg-type]
        for b in front[1:]:
            path.append(f"H{sx(b.time_ns):.1f}V{sy(b.area_um2):.1f}")  # type: ignore[arg-type]
        out.append(f'<path d="{"".join(path)}" fill="none" stroke="#1f6feb" '
                   'stroke-dasharray="5,3" stroke-width="1.5"/>')
    placed: list[tuple[float, float]] = []  # label positions, so close points stay readable
    for p in sorted(pts, key=lambda q: (q.status != "front", -(q.area_um2 or 0.0))):
        fill, stroke, _ = _STYLE.get(p.status, ("#ffffff", "#666666", p.status))
        cx, cy = sx(p.time_ns), sy(p.area_um2)  # type: ignore[arg-type]
        lx, ly = cx + 11, cy + 4
        while any(abs(lx - x) < 90 and abs(ly - y) < 14 for x, y in placed):
            ly += 14
        placed.append((lx, ly))
        tip = html.escape(f"{p.name}: {p.status}" + (f" ({p.reason})" if p.reason else ""))
        shape = (f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="7" fill="{fill}" stroke="{stroke}" '
                 f'stroke-width="2.5"><title>{tip}</title></circle>')
        if p.status in ("fails_b_star", "incomplete_workload"):
            shape = (f'<path d="M{cx - 6:.1f},{cy - 6:.1f}L{cx + 6:.1f},{cy + 6:.1f}'
                     f'M{cx - 6:.1f},{cy + 6:.1f}L{cx + 6:.1f},{cy - 6:.1f}" stroke="{stroke}" '
                     f'stroke-width="2.5"><title>{tip}</title></path>')
        out.append(shape)
        if ly - cy > 10:  # moved down past a neighbour: a leader line says whose it is
            out.append(f'<line x1="{cx + 5:.1f}" y1="{cy + 3:.1f}" x2="{lx - 2:.1f}" '
                       f'y2="{ly - 4:.1f}" stroke="{stroke}" stroke-width="0.8"/>')
        colour = "#222222" if p.status in ("front", "dominated") else stroke
        out.append(f'<text x="{lx:.1f}" y="{ly:.1f}" fill="{colour}">{html.escape(p.name)}</text>')
    ly = top + 8
    for status in ("front", "dominated", "misses_timing", "fails_b_star"):
        fill, stroke, text = _STYLE[status]
        lx = left + pw + 20
        if status == "fails_b_star":
            out.append(f'<path d="M{lx - 5},{ly - 5}L{lx + 5},{ly + 5}M{lx - 5},{ly + 5}'
                       f'L{lx + 5},{ly - 5}" stroke="{stroke}" stroke-width="2.5"/>')
        else:
            out.append(f'<circle cx="{lx}" cy="{ly}" r="6" fill="{fill}" stroke="{stroke}" '
                       'stroke-width="2.5"/>')
        out.append(f'<text x="{lx + 12}" y="{ly + 4}">{text}</text>')
        ly += 22
    out.append(f'<line x1="{left + pw + 12}" y1="{ly}" x2="{left + pw + 30}" y2="{ly}" '
               'stroke="#1f6feb" stroke-dasharray="5,3" stroke-width="1.5"/>')
    out.append(f'<text x="{left + pw + 32}" y="{ly + 4}">front (lower-left is better)</text>')
    out.append("</svg>")
    return "\n".join(out)


def _cell(value: Any, fmt: str = "{}") -> str:
    return "—" if value is None else html.escape(fmt.format(value))


#: Why a status keeps a candidate off the front, in words.
_WHY_OUT = {"fails_b_star": "fails B*", "incomplete_workload": "does not complete W",
            "misses_timing": "misses timing at f0", "unmeasured": "no PPA",
            "infra_error": "not measured: infrastructure error"}
#: Characters of one candidate's source shown in the report (area_time.json has all of it).
MAX_SOURCE_CHARS = 12_000


def _takeaway(result: AreaTimeResult) -> str:
    """The answer at a glance: which architecture to build for speed, which for area, and
    what each costs against the other; then what was left out and why."""
    front = result.front  # fastest first
    esc = html.escape
    if not front:
        lines = ["<b>No candidate is on the front</b>: none passes B*, completes W and meets "
                 f"timing at {result.freq_mhz:g} MHz."]
    elif len(front) == 1:
        only = front[0]
        lines = [f"<b>Build {esc(only.name)}</b>: the only architecture on the front, "
                 f"τ_W {only.time_ns:.1f} ns, {only.area_um2:.1f} µm²; no other valid one is "
                 "as small and as fast."]
    else:
        fast, small = front[0], front[-1]
        saved = 1 - small.area_um2 / fast.area_um2  # type: ignore[operator]
        slower = small.time_ns / fast.time_ns  # type: ignore[operator]
        lines = [f"<b>Fastest: {esc(fast.name)}</b> (τ_W {fast.time_ns:.1f} ns, "
                 f"{fast.area_um2:.1f} µm²). <b>Smallest: {esc(small.name)}</b> "
                 f"({small.area_um2:.1f} µm², {saved:.0%} less area for {slower:.1f}× the "
                 "workload time)."]
        if len(front) > 2:
            lines.append("Between them on the front: " + ", ".join(
                f"{esc(p.name)} ({p.time_ns:.1f} ns, {p.area_um2:.1f} µm²)" for p in front[1:-1])
                + ".")
    out = [p for p in result.candidates if p.status not in ("front", "dominated")]
    if out:
        lines.append("Not eligible: " + "; ".join(
            f"{esc(p.name)} ({_WHY_OUT.get(p.status, esc(p.status))})" for p in out) + ".")
    dominated = [p for p in result.candidates if p.status == "dominated"]
    if dominated:
        lines.append("Dominated: " + ", ".join(esc(p.name) for p in dominated) + ".")
    return '<div class="takeaway">' + "".join(f"<p>{x}</p>" for x in lines) + "</div>"


def _sources(result: AreaTimeResult) -> str:
    """Each candidate's source, collapsed and escaped whole (markup in it shows as text)."""
    out = []
    for n, p in enumerate(result.candidates, 1):
        if not p.sources:
            continue
        code = "\n".join(f"// {f.name}\n{f.content}" for f in p.sources)
        cut = "" if len(code) <= MAX_SOURCE_CHARS else (
            f"\n… cut after {MAX_SOURCE_CHARS} of {len(code)} characters (area_time.json has "
            "it all)")
        out.append(f'<details class="src" id="src-{n}"><summary><b>{html.escape(p.name)}</b> · '
                   f"{html.escape(', '.join(p.files))} · {html.escape(p.status)}</summary>"
                   f"<pre><code>{html.escape(code[:MAX_SOURCE_CHARS])}{html.escape(cut)}"
                   "</code></pre></details>")
    return ("<h3>Circuit sources</h3>" + "".join(out)) if out else ""


def render_report(result: AreaTimeResult) -> str:
    """A self-contained HTML page: which architecture to build and why, the plot, the
    measurements, why each point is out, and each candidate's source (escaped)."""
    def per_txn(p: AreaTimePoint) -> float | None:
        return p.cycles / result.workload.transactions if p.cycles is not None else None

    rows = []
    index = {id(p): n for n, p in enumerate(result.candidates, 1)}
    order = sorted(result.candidates, key=lambda p: (p.status != "front",
                                                      p.status != "dominated", p.name))
    for p in order:
        colour = _STYLE.get(p.status, ("", "#666666", ""))[1]
        files = html.escape(", ".join(p.files))
        if p.sources:
            files = f'<a href="#src-{index[id(p)]}">{files}</a>'
        rows.append(
            "<tr>"
            f"<td><b>{html.escape(p.name)}</b><br><small>{files}</small></td>"
            f'<td style="color:{colour};font-weight:bold">{html.escape(p.status)}</td>'
            f"<td>{_cell(p.check_verdict)}</td>"
            f"<td class=n>{_cell(p.cycles)}</td>"
            f"<td class=n>{_cell(per_txn(p), '{:.2f}')}</td>"
            f"<td class=n>{_cell(p.time_ns, '{:.1f}')}</td>"
            f"<td class=n>{_cell(p.area_um2, '{:.1f}')}</td>"
            f"<td class=n>{_cell(p.cells)}</td>"
            f"<td class=n>{_cell(p.critical_path_ns, '{:.3f}')}</td>"
            f"<td class={'neg' if (p.slack_ns or 0) < 0 else 'n'}>"
            f"{_cell(p.slack_ns, '{:+.3f}')}</td>"
            f"<td>{_cell(p.reason)}</td>"
            "</tr>")
    w, c = result.workload, result.check
    check = (f"{c.sequences} seeded random sequences of {c.transactions} transactions"
             f"{' after an edge-case sweep' if c.edge_sweep else ''} (seed {c.seed}), with idle "
             "gaps, output backpressure and resets")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>Area-time front: {html.escape(result.task)} at {result.freq_mhz:g} MHz</title>
<style>
body {{ font-family: sans-serif; margin: 24px; color: #222; max-width: 1150px; }}
table {{ border-collapse: collapse; margin-top: 12px; font-size: 13px; }}
th, td {{ border: 1px solid #ccc; padding: 4px 8px; vertical-align: top; }}
th {{ background: #f0f0f0; }}
td.n, td.neg {{ text-align: right; font-variant-numeric: tabular-nums; }}
td.neg {{ color: #c62828; font-weight: bold; }}
p.note {{ font-size: 13px; color: #444; }}
.takeaway {{ background: #eef6ff; border-left: 4px solid #1f6feb; padding: 6px 12px;
  margin: 12px 0; font-size: 15px; }}
.takeaway p {{ margin: 4px 0; }}
details.src {{ margin: 4px 0; border: 1px solid #e4e4e4; border-radius: 3px; }}
details.src > summary {{ cursor: pointer; padding: 3px 8px; background: #fafafa; }}
details.src pre {{ margin: 0; padding: 6px 10px; overflow: auto; max-height: 480px;
  font-size: 12px; }}
</style></head><body>
<h2>Area-time front: task <code>{html.escape(result.task)}</code>, f0 = {result.freq_mhz:g} MHz
(period {result.period_ns:.3f} ns)</h2>
<p class="note">Workload W: {w.transactions} back-to-back transactions (seed {w.seed}) after one
reset, outputs always ready. N_W = clock cycles from the first input offered to the last output
accepted (both counted); τ_W = N_W / f0. B*: the BEHAVE-Sim check against the task's golden
model on {html.escape(check)}. Area and critical path (worst register-to-register or I/O
arrival): yosys mapping + OpenSTA on <b>{html.escape(result.liberty)}</b>, clock constrained to
the period; slack = period − critical path. A candidate is on the front when it passes B*,
completes W and meets timing, and no other such candidate is at least as small and as fast.</p>
{_takeaway(result)}
{_svg(result)}
<table>
<tr><th>candidate</th><th>status</th><th>B*</th><th>N_W (cycles)</th><th>cycles per
transaction</th><th>τ_W (ns)</th>
<th>area (µm²)</th><th>cells</th><th>critical path (ns)</th><th>slack (ns)</th>
<th>why not on the front</th></tr>
{chr(10).join(rows)}
</table>
{_sources(result)}
</body></html>
"""


def write_report(result: AreaTimeResult, directory: Path) -> Path:
    """``index.html`` (the page) and ``area_time.json`` (the result) in ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "area_time.json").write_text(result.model_dump_json(indent=2) + "\n",
                                              encoding="utf-8")
    page = directory / "index.html"
    page.write_text(render_report(result), encoding="utf-8")
    return page
