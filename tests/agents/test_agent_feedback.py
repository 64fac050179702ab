"""Feedback rendering for prompts and the error trend, on hand-made reports.

The oracle is the issue's list: category, file:line, the 5-line source context, the failing
checks with expected/observed values, category hints, and the error trend across iterations
(rising, falling, changing type).
"""

from __future__ import annotations

from rtlforge.agents.feedback import (
    Trend,
    error_trend,
    mismatch_count,
    mismatch_ratio,
    render_feedback,
    render_mismatch,
    render_trend,
)
from rtlforge.agents.models import IterationRecord, Tier
from rtlforge.core.models import Feedback, Mismatch, StageResult, ValidationReport, Verdict

CONTEXT = ("  3 |   wire t;\n  4 |   assign t = a & b\n> 5 |   assign y = t;\n"
           "  6 | endmodule\n  7 |")


def _report(verdict: Verdict, *items: Feedback, stage: str = "lint") -> ValidationReport:
    return ValidationReport(verdict=verdict, stages=(
        StageResult(name="security", verdict=Verdict.PASS),
        StageResult(name=stage, verdict=verdict, feedback=items)))


def _record(i: int, category: str | None, errors: int = 1, mismatches: int | None = None,
            verdict: Verdict = Verdict.FAIL) -> IterationRecord:
    return IterationRecord(iteration=i, tier=Tier.ROUTER, agent="debug", verdict=verdict,
                           error_count=errors, error_category=category, mismatches=mismatches)


def test_a_syntax_item_shows_category_location_context_and_hint() -> None:
    item = Feedback(category="syntax", message="syntax error", file="design.v", line=5,
                    context=CONTEXT, hint="Add the missing ';'.", stage="iverilog-lint")
    text = render_feedback(_report(Verdict.ERROR, item, stage="iverilog-lint"))
    lines = text.splitlines()
    assert lines[0] == "Validation verdict: error (at stage iverilog-lint)."
    assert lines[1] == "[syntax] design.v:5 (iverilog-lint): syntax error"
    # all five numbered context lines, in order, marker kept
    assert [line.strip() for line in lines[3:8]] == [row.strip() for row in
                                                     CONTEXT.splitlines()]
    assert "hint: Add the missing ';'." in text


def test_failing_checks_carry_expected_and_observed_values() -> None:
    checks = tuple(Mismatch(signal="y", cycle=k, expected="1", observed="0",
                            inputs={"a": "1", "b": str(k)}) for k in range(7))
    item = Feedback(category="sim_mismatch", message="3 checks failed", mismatches=checks,
                    stage="sim", hint="Compare with the spec.")
    text = render_feedback(_report(Verdict.FAIL, item, stage="sim"))
    assert "- y at cycle 0: expected 1, observed 0 (inputs a=1 b=0)" in text
    assert "- y at cycle 4: expected 1, observed 0 (inputs a=1 b=4)" in text
    assert "cycle 5" not in text and "... and 2 more" in text  # five checks shown
    assert "[sim_mismatch] (sim): 3 checks failed" in text


def test_a_check_with_time_and_count_and_one_without_values() -> None:
    assert render_mismatch(Mismatch(signal="q", time="40 ns", count=12, expected="8'h0f",
                                    observed="8'h00")) == (
        "q at time 40 ns: expected 8'h0f, observed 8'h00 [12 failures]")
    assert render_mismatch(Mismatch(raw="ERROR at 40: bad q")) == "a check: ERROR at 40: bad q"


def test_errors_come_before_warnings_and_extra_items_are_summarised() -> None:
    warning = Feedback(category="lint_warning", message="unused wire", severity="warning")
    errors = [Feedback(category="elaboration", message=f"error {k}") for k in range(6)]
    text = render_feedback(_report(Verdict.ERROR, warning, *errors), max_items=3)
    assert text.index("error 0") < text.index("error 2")
    assert "unused wire" not in text and "... and 4 more finding(s)" in text


def test_a_pass_renders_as_one_line() -> None:
    assert render_feedback(_report(Verdict.PASS)) == "Validation verdict: pass."


def test_trend_rising_falling_flat_and_changing_type() -> None:
    assert error_trend([]) is Trend.NONE
    assert error_trend([_record(0, "syntax")]) is Trend.NONE
    assert error_trend([_record(0, "syntax"), _record(1, "syntax", errors=3)]) is Trend.RISING
    assert error_trend([_record(0, "syntax", errors=3), _record(1, "syntax")]) is Trend.FALLING
    assert error_trend([_record(0, "syntax"), _record(1, "syntax")]) is Trend.FLAT
    assert error_trend([_record(0, "syntax"), _record(1, "sim_mismatch", mismatches=40)]
                       ) is Trend.CHANGING
    # within simulation mismatches, the failing-check counts decide (not the item count)
    sims = [_record(0, "sim_mismatch", mismatches=40), _record(1, "sim_mismatch",
                                                               mismatches=3)]
    assert error_trend(sims) is Trend.FALLING
    # only the last two iterations count
    assert error_trend([_record(0, "syntax"), *sims]) is Trend.FALLING


def test_the_trend_line_appears_in_the_feedback_once_there_are_two_iterations() -> None:
    records = [_record(0, "syntax"), _record(1, "sim_mismatch", mismatches=12),
               _record(2, "sim_mismatch", mismatches=3)]
    assert render_trend(records) == (
        "Error trend: falling (syntax 1 -> sim_mismatch 12 -> sim_mismatch 3)")
    text = render_feedback(_report(Verdict.FAIL, Feedback(category="sim_mismatch",
                                                          message="wrong")), records)
    assert text.endswith("Error trend: falling (syntax 1 -> sim_mismatch 12 -> sim_mismatch 3)")
    assert render_trend(records[:1]) == ""


def test_mismatch_counts_and_the_normalised_ratio() -> None:
    printed = _report(Verdict.FAIL, Feedback(
        category="sim_mismatch", message="the testbench reported a failure:\n"
                                         "Mismatches: 25 in 100 samples"))
    assert mismatch_count(printed) == 25 and mismatch_ratio(printed) == 0.25
    structured = _report(Verdict.FAIL, Feedback(category="sim_mismatch", message="bad", mismatches=(
        Mismatch(signal="y", count=4), Mismatch(signal="z"))))
    assert mismatch_count(structured) == 5
    assert mismatch_ratio(structured) == 1.0  # no sample count: the worst
    assert mismatch_count(_report(Verdict.ERROR, Feedback(category="syntax", message="x"))
                          ) is None
    assert mismatch_ratio(_report(Verdict.PASS)) == 0.0
