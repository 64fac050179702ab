"""Structured feedback for the next agent call: what failed, where, and whether it is improving.

A refinement agent fixes a design from concrete facts, so a
:class:`~rtlforge.core.models.ValidationReport` is rendered item by item (issue 12, section 1):
the category, ``file:line``, the numbered source context, the failing checks with their expected
and observed values, the category hint, and the error trend across the iterations so far
(:func:`error_trend`, from the :class:`~rtlforge.agents.models.IterationRecord` list). The
helpers that reduce a report to numbers (:func:`mismatch_count`, :func:`mismatch_ratio`) serve
the records and the multi-candidate ranking too. Everything here is a pure function.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from enum import StrEnum

from rtlforge.agents.models import IterationRecord
from rtlforge.core.models import Feedback, Mismatch, ValidationReport, Verdict

__all__ = [
    "Trend",
    "error_magnitude",
    "error_trend",
    "mismatch_count",
    "mismatch_ratio",
    "render_feedback",
    "render_item",
    "render_mismatch",
    "render_trend",
]

#: Feedback items rendered per report; the rest are summarised in one line.
MAX_ITEMS = 5
#: Failing checks rendered per item.
MAX_CHECKS = 5

#: "Mismatches: 3 in 100 samples" (VerilogEval and the bundled testbenches).
_SAMPLES = re.compile(r"\bMismatches:\s*(\d+)\s+in\s+(\d+)\s+samples\b", re.IGNORECASE)


class Trend(StrEnum):
    """How the errors moved between the last two iterations."""

    NONE = "none"  # fewer than two iterations: nothing to compare
    RISING = "rising"  # same kind of error, more of it
    FALLING = "falling"  # same kind of error, less of it
    FLAT = "flat"  # same kind, same amount: the last change did not help
    CHANGING = "changing type"  # a different category than before (often progress: syntax fixed)


def _samples(report: ValidationReport) -> tuple[int, int] | None:
    """``(mismatches, samples)`` from a "Mismatches: N in M samples" line, when printed."""
    for item in report.feedback:
        found = _SAMPLES.search(item.message)
        if found:
            return int(found[1]), int(found[2])
    return None


def mismatch_count(report: ValidationReport) -> int | None:
    """Failing checks the simulation reported: the testbench's own total when it prints one,
    else the structured checks (each weighted by its ``count`` when known); None when the
    simulation reported none (it passed, or never ran)."""
    samples = _samples(report)
    if samples is not None:
        return samples[0]
    checks = [m for item in report.feedback for m in item.mismatches]
    if not checks:
        return None
    return sum(m.count if m.count is not None else 1 for m in checks)


def mismatch_ratio(report: ValidationReport) -> float:
    """The normalised mismatch count in [0, 1]: 0 for a pass, ``N / M`` when the testbench
    prints "Mismatches: N in M samples", and 1 (the worst) when a failure cannot be counted."""
    if report.verdict is Verdict.PASS:
        return 0.0
    samples = _samples(report)
    if samples is not None and samples[1] > 0:
        return min(1.0, samples[0] / samples[1])
    return 1.0


def error_magnitude(record: IterationRecord) -> int:
    """The amount compared by :func:`error_trend`: failing checks when known, else errors."""
    return record.mismatches if record.mismatches is not None else record.error_count


def error_trend(records: Sequence[IterationRecord]) -> Trend:
    """The trend between the last two iterations that reached validation.

    A different error category is :attr:`Trend.CHANGING`, whatever the amounts; otherwise the
    amounts (:func:`error_magnitude`) decide rising, falling or flat.
    """
    if len(records) < 2:
        return Trend.NONE
    before, last = records[-2], records[-1]
    if (before.error_category or last.error_category) and \
            before.error_category != last.error_category:
        return Trend.CHANGING
    old, new = error_magnitude(before), error_magnitude(last)
    if new > old:
        return Trend.RISING
    if new < old:
        return Trend.FALLING
    return Trend.FLAT


def render_trend(records: Sequence[IterationRecord]) -> str:
    """``Error trend: falling (sim_mismatch 12 -> sim_mismatch 3)``, or "" before two rounds."""
    trend = error_trend(records)
    if trend is Trend.NONE:
        return ""
    steps = " -> ".join(
        f"{r.error_category or r.verdict.value} {error_magnitude(r)}" for r in records[-4:])
    return f"Error trend: {trend.value} ({steps})"


def render_mismatch(check: Mismatch) -> str:
    """One failing check as a sentence: signal, when, expected vs observed, the inputs."""
    parts: list[str] = [check.signal or "a check"]
    when = [f"time {check.time}"] if check.time is not None else []
    if check.cycle is not None:
        when.append(f"cycle {check.cycle}")
    if when:
        parts.append(f"at {', '.join(when)}")
    values = []
    if check.expected is not None:
        values.append(f"expected {check.expected}")
    if check.observed is not None:
        values.append(f"observed {check.observed}")
    text = " ".join(parts) + (": " + ", ".join(values) if values else "")
    if check.inputs:
        text += " (inputs " + " ".join(f"{k}={v}" for k, v in check.inputs.items()) + ")"
    if check.count is not None:
        text += f" [{check.count} failures]"
    if not values and check.raw:
        text += f": {check.raw.strip()}"
    return text


def render_item(item: Feedback) -> str:
    """One feedback item: ``[category] file:line (stage): message`` and its details."""
    where = ""
    if item.file is not None:
        where = f" {item.file}" + (f":{item.line}" if item.line is not None else "")
    elif item.line is not None:
        where = f" line {item.line}"
    stage = f" ({item.stage})" if item.stage else ""
    lines = [f"[{item.category}]{where}{stage}: {item.message.strip()}"]
    if item.context:
        lines.append("  source:")
        lines.extend(f"    {row}" for row in item.context.splitlines())
    if item.mismatches:
        lines.append("  failing checks:")
        lines.extend(f"    - {render_mismatch(m)}" for m in item.mismatches[:MAX_CHECKS])
        if len(item.mismatches) > MAX_CHECKS:
            lines.append(f"    ... and {len(item.mismatches) - MAX_CHECKS} more")
    if item.hint:
        lines.append(f"  hint: {item.hint.strip()}")
    return "\n".join(lines)


def render_feedback(report: ValidationReport, records: Sequence[IterationRecord] = (), *,
                    max_items: int = MAX_ITEMS) -> str:
    """The feedback block of a prompt: the verdict and stage, then each error item (warnings
    after errors), then the trend over ``records`` (the iterations so far, oldest first).

    A passing report with no items renders as a one-line verdict, so an optimize prompt still
    says the design is correct.
    """
    failed = next((s.name for s in report.stages if s.verdict is not Verdict.PASS), None)
    head = f"Validation verdict: {report.verdict.value}"
    if failed is not None:
        head += f" (at stage {failed})"
    items = sorted(report.feedback, key=lambda f: f.severity != "error")
    lines = [head + "."]
    lines.extend(render_item(item) for item in items[:max_items])
    if len(items) > max_items:
        lines.append(f"... and {len(items) - max_items} more finding(s)")
    trend = render_trend(records)
    if trend:
        lines.append(trend)
    return "\n".join(lines)
