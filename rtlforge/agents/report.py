"""The refine report: one self-contained ``report.html`` drawn from a run directory's records.

The same kind of file as the eval and explore reports (their CSS, table and line-plot helpers:
no scripts, no external assets, everything from tasks and generators escaped): pass@1 (first
attempts) and the solve rate within the budget, cost per solved problem and per tier, an
iteration-by-verdict grid with the solved fraction against the iteration budget, a per-task
table, and per task its iterations, each failing iteration's design with its feedback, router
decisions, inline trace and final design.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

from rtlforge.agents.models import SolveResult, Tier
from rtlforge.agents.run import trace_path
from rtlforge.agents.trace import ThoughtEvent, read_trace
from rtlforge.core.models import Feedback, SourceFile
from rtlforge.evaluation.report import _CSS, _esc, _fmt, _table, line_svg

__all__ = ["MAX_TRACE_EVENTS", "render_refine_html", "write_refine_report"]

#: Events of one task's trace shown inline (the whole trace is behind the link).
MAX_TRACE_EVENTS = 200
_MAX_SOURCE_CHARS = 12_000
_MAX_MESSAGE_CHARS = 300

_EXTRA_CSS = """
.grid-cell{display:inline-block;min-width:64px;text-align:center;border-radius:3px;
padding:1px 4px;font-size:12px}
.v-pass{background:#d8f0d8}.v-fail{background:#f6d5d5}.v-error{background:#f9e0c8}
.v-timeout,.v-infra_error{background:#f3eec0}
details.task{margin:6px 0;border:1px solid #e4e4e4;border-radius:3px;padding:0 6px}
details.task>summary{cursor:pointer;padding:3px 0;font-weight:600}
td.msg{font-family:monospace;font-size:12px;white-space:pre-wrap;max-width:560px}
pre{background:#fcfcfc;padding:6px 8px;overflow:auto;max-height:420px;font-size:12px}
.attempt .msg{max-width:none;margin:4px 8px}.attempt>p{margin:6px 8px 2px}
"""


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


def _verdict(value: str) -> str:
    return f'<span class="{_esc(value)}">{_esc(value)}</span>'


def _trace_href(task_id: str) -> str:
    return "traces/" + quote(trace_path(".", task_id).name)


def _trace_events(run_dir: Path, result: SolveResult) -> list[ThoughtEvent]:
    """The task's trace from the run's traces folder only: the path a stored result names is
    read only when it lies there (a tampered results.jsonl must not pull another file of the
    host into the report), and never through a symbolic link."""
    traces = (run_dir / "traces").resolve()
    for path in (trace_path(run_dir, result.task_id),
                 Path(result.trace) if result.trace else None):
        if (path is not None and path.is_file() and not path.is_symlink()
                and path.resolve().parent == traces):
            return list(read_trace(path))
    return []


def _rate(value: Any) -> str:
    return f"{value:.3f}" if isinstance(value, int | float) else "–"


def _headline(summary: Mapping[str, Any]) -> str:
    """One sentence: first-attempt pass rate, what refinement added, and at what cost."""
    judged = int(summary.get("tasks", 0)) - int(summary.get("infra_errors", 0))
    if judged <= 0:
        return ('<div class="callout"><p>No task was judged (every one ended in an '
                "infrastructure error).</p></div>")
    first, solved = int(summary.get("passed_first", 0)), int(summary.get("passed", 0))
    budget = (summary.get("run") or {}).get("max_iterations")
    within = f" within {_esc(budget)} iterations" if budget else " within the budget"
    per = summary.get("llm_calls_per_solved")
    cost = (f", {_fmt(per, 3)} LLM calls per solved task" if per is not None else "")
    gain = solved - first
    return (f'<div class="callout"><p><b>pass@1 {_rate(summary.get("pass_at_1"))}</b>: '
            f"{first} of {judged} tasks passed their first attempt. <b>Solved "
            f"{_rate(summary.get('solve_rate'))}</b>: {solved} of {judged}{within}"
            + (f", {gain} of them thanks to refinement" if gain > 0 else "")
            + f"{cost}.</p></div>")


def _overview(summary: Mapping[str, Any]) -> str:
    p1 = summary.get("pass_at_1")
    infra = " (infra errors left out)" if summary.get("infra_errors") else ""
    rows = [["tasks", _esc(summary.get("tasks", 0))],
            ["passed", _esc(summary.get("passed", 0))],
            ["pass@1 (first attempt passed)", _fmt(p1, 4) + infra],
            ["solved within the budget", _fmt(summary.get("solve_rate"), 4) + infra],
            ["infrastructure errors (not scored)", _esc(summary.get("infra_errors", 0))],
            ["verdicts", ", ".join(f"{_esc(k)} {_esc(v)}"
                                   for k, v in (summary.get("verdicts") or {}).items())],
            ["iterations", _esc(summary.get("iterations", 0))],
            ["LLM calls", _esc(summary.get("llm_calls", 0))],
            ["tokens", _esc(summary.get("tokens", 0))],
            ["LLM calls per solved problem", _fmt(summary.get("llm_calls_per_solved"))],
            ["tokens per solved problem", _fmt(summary.get("tokens_per_solved"))],
            ["wall time (s)", _fmt(summary.get("seconds"))]]
    return ("<h2>Results</h2>" + _table(["", "value"], rows, {1})
            + "<p>pass@1: the fraction of tasks whose first iteration passed (with several "
              "candidates per iteration, the best of the first iteration's); solved: the "
              "fraction that passed within the iteration budget, after refinement.</p>")


def _tiers(summary: Mapping[str, Any]) -> str:
    tiers: Mapping[str, Any] = summary.get("tiers") or {}
    rows = [[_esc(name), str(t.get("solved", 0)), str(t.get("iterations", 0)),
             str(t.get("llm_calls", 0)), str(t.get("tokens", 0)),
             _fmt(t.get("llm_calls_per_solved")), _fmt(t.get("tokens_per_solved"))]
            for name, t in tiers.items()]
    return ("<h2>Cost per tier</h2>" + _table(
        ["tier", "tasks solved", "iterations", "LLM calls", "tokens", "calls per solved",
         "tokens per solved"], rows, set(range(1, 7)))
        + "<p>Calls and tokens are those spent in the tier's iterations, on every task; "
          "per solved: divided by the tasks that tier solved.</p>")


def _iteration_view(results: Sequence[SolveResult], budget: int) -> str:
    """Each task's verdict at each iteration, and the fraction solved within i iterations."""
    width = max([budget, *(len(r.records) for r in results)], default=0)
    if not width or not results:
        return ""
    judged = [r for r in results if r.verdict.value != "infra_error"]  # pass@1's denominator
    solved_at = [next((i for i, rec in enumerate(r.records, 1) if rec.verdict.value == "pass"),
                      None) if r.passed else None for r in judged]
    label = "solved within i iterations"
    series = {label: [
        (float(i), sum(1 for s in solved_at if s is not None and s <= i) / len(judged)
         if judged else None) for i in range(1, width + 1)]}
    plot = line_svg(series, {label: "#2ca02c"}, xlabel="iteration",
                    ylabel="fraction solved", better="↑ higher is better")
    rows = []
    for r in results:
        cells = []
        for i in range(width):
            if i < len(r.records):
                rec = r.records[i]
                cells.append(f'<span class="grid-cell v-{_esc(rec.verdict.value)}" '
                             f'title="{_esc(rec.tier.value)} · {_esc(rec.agent)}">'
                             f"{_esc(rec.agent)}<br>{_esc(rec.verdict.value)}</span>")
            else:
                cells.append("")
        rows.append([_esc(r.task_id), *cells])
    return ("<h2>Iterations and verdicts</h2>" + f'<div class="plots">{plot}</div>'
            + "<p>The fraction of tasks solved within <i>i</i> iterations; at iteration 1 it "
              "is pass@1.</p>"
            + _table(["task", *(str(i) for i in range(1, width + 1))], rows))


def _task_table(results: Sequence[SolveResult]) -> str:
    rows = [[f'<a href="#task-{_esc(quote(r.task_id))}">{_esc(r.task_id)}</a>',
             _verdict(r.verdict.value), str(r.iterations), _esc(" → ".join(r.agents)),
             _esc(", ".join(t.value for t in r.tiers)),
             _esc(r.solved_by.value if r.solved_by else "–"), _esc(r.judge), str(r.llm_calls),
             str(r.tokens), _fmt(r.seconds, 3),
             f'<a href="{_esc(_trace_href(r.task_id))}">trace</a>']
            for r in results]
    return "<h2>Tasks</h2>" + _table(
        ["task", "verdict", "iterations", "agents", "tiers", "solved by", "judge", "LLM calls",
         "tokens", "seconds", "trace"], rows, {2, 7, 8, 9}) + (
        "<p>judge: whose testbench gave the verdict: the task's own (real), one the "
        "testbench agent wrote because the task had none (generated), or none (lint and "
        "synthesis only).</p>")


def _records_html(result: SolveResult) -> str:
    rows = []
    for rec in result.records:
        action = rec.action
        rows.append([str(rec.iteration + 1), _esc(rec.tier.value), _esc(rec.agent),
                     _esc(action.focus.value if action else "–"), str(rec.candidates),
                     _verdict(rec.verdict.value), _esc(rec.failed_stage or "–"),
                     str(rec.error_count), _esc(rec.error_category or "–"),
                     _esc("–" if rec.mismatches is None else rec.mismatches),
                     str(rec.llm_calls), str(rec.tokens), _fmt(rec.seconds, 3)])
    return "<h4>Iterations</h4>" + _table(
        ["iter", "tier", "agent", "focus", "candidates", "verdict", "failed stage", "errors",
         "category", "mismatches", "LLM calls", "tokens", "seconds"], rows,
        {0, 4, 7, 9, 10, 11, 12})


def _decisions_html(decisions: Sequence[Mapping[str, Any]]) -> str:
    if not decisions:
        return "<h4>Router decisions</h4><p class=\"note\">none (no router iteration)</p>"
    rows = []
    for d in sorted(decisions, key=lambda d: d.get("iteration") or 0):
        action = d.get("action") or {}
        outcome = d.get("outcome") or {}
        state = d.get("state")
        knobs = ", ".join(f"{k} {action[k]}" for k in ("temperature", "max_tokens", "retrieval_k",
                                                       "retry_budget")
                          if action.get(k) is not None)
        flags = ", ".join(k.removesuffix("_focus") for k in ("lint_focus", "timing_focus",
                                                             "area_focus") if action.get(k))
        rows.append([_esc((d.get("iteration") or 0) + 1), _esc(d.get("router", "")),
                     _esc(action.get("agent", "")), _esc(action.get("focus", "")),
                     _esc(knobs or "–"), _esc(flags or "–"), _esc(action.get("reason", "")),
                     _verdict(str(outcome.get("verdict", "–"))),
                     _esc(f"{len(state)} dims" if isinstance(state, list) else "–")])
    return "<h4>Router decisions</h4>" + _table(
        ["iter", "router", "agent", "focus", "parameters", "flags", "reason", "outcome",
         "state"], rows, {0})


def _trace_html(events: Sequence[ThoughtEvent], href: str) -> str:
    if not events:
        return '<h4>Trace</h4><p class="note">no trace recorded</p>'
    start = events[0].timestamp
    shown = events[:MAX_TRACE_EVENTS]
    rows = [[f"{e.timestamp - start:.3f}", _esc(e.kind.value),
             _esc("–" if e.iteration is None else e.iteration + 1), _esc(e.agent or "–"),
             _fmt(e.confidence, 2), _esc(_cut(e.message, _MAX_MESSAGE_CHARS))
             + ("".join(f"<br>· {_esc(_cut(x, _MAX_MESSAGE_CHARS))}" for x in e.evidence))]
            for e in shown]
    note = (f"<p class=\"warn\">Showing {len(shown)} of {len(events)} events; the whole trace "
            f'is in <a href="{_esc(href)}">the file</a>.</p>' if len(shown) < len(events) else
            f'<p><a href="{_esc(href)}">trace file</a></p>')
    return "<h4>Trace</h4>" + note + _table(
        ["t (s)", "kind", "iter", "agent", "confidence", "message"], rows, {0, 4})


def _code_text(files: Sequence[SourceFile]) -> str:
    code = "\n".join(f"// {f.name}\n{f.content}" for f in files)
    cut = "" if len(code) <= _MAX_SOURCE_CHARS else (
        f"\n… cut after {_MAX_SOURCE_CHARS} of {len(code)} characters (results.jsonl has it)")
    return f"<pre><code>{_esc(code[:_MAX_SOURCE_CHARS])}{_esc(cut)}</code></pre>"


def _feedback_text(items: Sequence[Feedback]) -> str:
    lines = []
    for f in items:
        where = f"{f.file}:{f.line} " if f.file and f.line else (f"{f.file} " if f.file else "")
        lines.append(f"[{f.category}] {where}{_cut(f.message, 600)}"
                     + (f"\n  hint: {_cut(f.hint, 300)}" if f.hint else ""))
        lines += [f"  · {_cut(m.raw, 200)}" for m in f.mismatches[:3] if m.raw]
    return "\n".join(lines)


def _attempts_html(result: SolveResult) -> str:
    """Each failing iteration's design, collapsed, with the feedback it got."""
    if not result.attempts:
        return ""
    agents = {rec.iteration: rec for rec in result.records}
    out = ["<h4>Failing iterations</h4>"]
    for attempt in result.attempts:
        rec = agents.get(attempt.iteration)
        who = f" · {_esc(rec.agent)} ({_esc(rec.tier.value)})" if rec is not None else ""
        first = " ".join(attempt.feedback[0].message.split()) if attempt.feedback else ""
        head = (f"iteration {attempt.iteration + 1}{who} · {_verdict(attempt.verdict.value)}"
                + (f" · {_esc(_cut(first, 120))}" if first else ""))
        feedback = (f'<div class="msg">{_esc(_feedback_text(attempt.feedback))}</div>'
                    if attempt.feedback else '<p class="note">no feedback recorded</p>')
        out.append(f'<details class="circuit attempt"><summary>{head}</summary>'
                   f"<p>Feedback it got (the next iteration's prompt carried it):</p>{feedback}"
                   f"{_code_text(attempt.candidate.files)}</details>")
    return "".join(out)


def _candidate_html(result: SolveResult) -> str:
    if result.candidate is None:
        return ""
    label = "passing design" if result.passed else "best design"
    return (f'<details class="circuit"><summary>{label}</summary>'
            f"{_code_text(result.candidate.files)}</details>")


def _task_section(result: SolveResult, decisions: Sequence[Mapping[str, Any]],
                  events: Sequence[ThoughtEvent]) -> str:
    head = (f"{_esc(result.task_id)} · {_verdict(result.verdict.value)} · "
            f"{result.iterations} iterations · {result.llm_calls} LLM calls")
    error = (f'<p class="warn">infrastructure error: {_esc(result.error)}</p>'
             if result.error else "")
    message = ""
    if result.report is not None and not result.passed and result.report.feedback:
        text = "\n".join(f"[{f.category}] {f.message}" for f in result.report.feedback[:5])
        message = f'<div class="msg">{_esc(_cut(text, 1000))}</div>'
    return (f'<details class="task" id="task-{_esc(quote(result.task_id))}"><summary>{head}'
            f"</summary>{error}{message}{_records_html(result)}{_attempts_html(result)}"
            f"{_decisions_html(decisions)}{_trace_html(events, _trace_href(result.task_id))}"
            f"{_candidate_html(result)}</details>")


def render_refine_html(summary: Mapping[str, Any], results: Sequence[SolveResult],
                       decisions: Sequence[Mapping[str, Any]], *,
                       traces: Mapping[str, Sequence[ThoughtEvent]] | None = None,
                       title: str = "rtlforge refine report", generated: str | None = None
                       ) -> str:
    """The whole report as one HTML string (no scripts, no external resources)."""
    traces = traces or {}
    by_task: dict[str, list[Mapping[str, Any]]] = {}
    for d in decisions:
        by_task.setdefault(str(d.get("task_id")), []).append(d)
    out = ["<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">",
           f"<title>{_esc(title)}</title><style>{_CSS}{_EXTRA_CSS}</style></head><body>",
           f"<h1>{_esc(title)}</h1>"]
    out.append(_headline(summary))
    run = dict(summary.get("run") or {})
    if generated:
        run["report generated"] = generated
    if run:
        out.append(_table(["setting", "value"], [[_esc(k), _esc("–" if v is None else v)]
                                                 for k, v in run.items()]))
    out.append(_overview(summary))
    out.append(_tiers(summary))
    budget = int(run.get("max_iterations") or 0)
    out.append(_iteration_view(results, budget))
    out.append(_task_table(results))
    out.append("<h2>Per task</h2><p>Each task's iterations, every failing iteration's design "
               "with the feedback it got, the router's decisions (agent, focus, parameters, "
               "with the outcome), its reasoning trace and its final design. Tiers: "
               f"{', '.join(t.value for t in Tier)}.</p>")
    for r in results:
        out.append(_task_section(r, by_task.get(r.task_id, []), traces.get(r.task_id, ())))
    out.append("</body></html>\n")
    return "".join(out)


def write_refine_report(run_dir: str | Path, results: Sequence[SolveResult],
                        summary: Mapping[str, Any], decisions: Sequence[Mapping[str, Any]],
                        *, title: str = "rtlforge refine report") -> Path:
    """Write ``run_dir/report.html`` (traces are read from ``run_dir/traces``)."""
    run_dir = Path(run_dir)
    traces = {r.task_id: _trace_events(run_dir, r) for r in results}
    html_text = render_refine_html(summary, results, decisions, traces=traces, title=title,
                                   generated=datetime.now(UTC).isoformat(timespec="seconds"))
    path = run_dir / "report.html"
    path.write_text(html_text, encoding="utf-8")
    return path
