"""Failing checks read from testbench lines, the VCD reader, and that only testbench lines count.

Every line here was written for these tests in the style of a testbench family; the expected
values are the ones written into the line.
"""

from __future__ import annotations

import pytest

from rtlforge.core.models import (
    Feedback,
    Mismatch,
    PassRule,
    StageResult,
    ValidationReport,
    Verdict,
)
from rtlforge.eda.mismatches import (
    MAX_MISMATCHES,
    failing_checks,
    fill_from_dump,
    parse_mismatch,
    timescale_unit,
)
from rtlforge.eda.vcd import format_value, snapshot, unit_fs
from rtlforge.eda.verdicts import end_marker, judge, marker

NONCE = "feedbacknonce01"


def tb(*lines: str) -> str:
    return "".join(f"{marker(NONCE)}{line}{end_marker(NONCE)}\n" for line in lines)


# ------------------------------------------------------------------------ one line per style


def test_verilog_eval_hint_names_signal_count_and_time_with_the_testbench_unit() -> None:
    line = "Hint: Output 'zero' has 17 mismatches. First mismatch occurred at time 130."
    m = parse_mismatch(line, time_unit="1ps")
    assert m == Mismatch(signal="zero", count=17, time="130 ps", raw=line)
    assert parse_mismatch(line).time == "130"  # no timescale known: as printed
    assert parse_mismatch("Hint: Output 'zero' has no mismatches.") is None
    assert parse_mismatch("Hint: Total mismatched samples is 17 out of 200 samples") is None


def test_rtlforge_vector_testbench_line() -> None:
    m = parse_mismatch("FAIL vector 4: a=3, b=9 gives sum=2, expected 5'd12")
    assert m is not None
    assert (m.signal, m.cycle, m.observed, m.expected) == ("sum", 4, "2", "5'd12")
    assert m.inputs == {"a": "3", "b": "9"}


@pytest.mark.parametrize(("line", "signal", "expected", "observed", "inputs"), [
    # RTLLM v2 styles (%d pads with spaces)
    ("Failed at i=          6, out=0110, expected=1001", "out", "1001", "0110", {}),
    ("Failed at fetch operation 1: clk=          1, ad1=00001111 (expected          12)",
     "ad1", "12", "00001111", {"clk": "1"}),
    ("Test failed: A =         20, B =          7, Expected Product =        140, Got =    "
     "     141", "product", "140", "141", {"A": "20", "B": "7"}),
    ("Test failed: a = 0011, b = 0001, c = 0101, expected_result = 0100", "c", "0100", "0101",
     {"a": "0011", "b": "0001"}),
    ("Error: dividend=        100, divisor=          7, expected=000e, got=000f", None,
     "000e", "000f", {"dividend": "100", "divisor": "7"}),
    ("Failed at          2: clk=          1, clk_div=          1 (expected           0)",
     "clk_div", "0", "1", {"clk": "1"}),
    # generic forms
    ("mismatch at time 85: q=1 expected 0", "q", "0", "1", {}),
    ("ERROR: expected 12, got 13.", None, "12", "13", {}),
    ("carry: expected=1 actual=0", "carry", "1", "0", {}),
    ("check 3 failed: exp 8'h3c obs 8'h3d", None, "8'h3c", "8'h3d", {}),
    ("sel=2 data_exp=7 data_obs=5", "data", "7", "5", {"sel": "2"}),
])
def test_value_lists_and_phrases(line: str, signal: str | None, expected: str, observed: str,
                                 inputs: dict[str, str]) -> None:
    m = parse_mismatch(line)
    assert m is not None, line
    assert (m.signal, m.expected, m.observed, m.inputs) == (signal, expected, observed, inputs)
    assert m.raw == line.strip()


def test_index_and_time_fields() -> None:
    assert parse_mismatch("Failed at i=          6, out=0110, expected=1001").cycle == 6  # type: ignore[union-attr]
    m = parse_mismatch("mismatch at time 85 ns: q=1 expected 0")
    assert m is not None and m.time == "85 ns"


def test_the_names_of_the_design_outputs_pick_the_checked_signal() -> None:
    line = "Failed: x=1, y=0, en=1 (expected 1)"
    assert parse_mismatch(line).signal == "en"  # type: ignore[union-attr]  # the last one before
    m = parse_mismatch(line, outputs={"y"})
    assert m is not None and (m.signal, m.observed, m.inputs) == ("y", "0", {"x": "1", "en": "1"})


@pytest.mark.parametrize("line", [
    "=========== Test completed with           3 /100 failures ===========",
    "===========Error===========",
    "Error: Data read from address 2 is incorrect",
    "Mismatches: 3 in 100 samples",
])
def test_summary_and_bare_failure_lines_are_not_checks(line: str) -> None:
    assert parse_mismatch(line) is None


def test_failing_checks_keeps_the_first_few() -> None:
    lines = [f"FAIL vector {i}: a=0 gives y=1, expected 1'd0" for i in range(9)]
    found = failing_checks(["Mismatches: 9 in 9 samples", *lines])
    assert len(found) == MAX_MISMATCHES and [m.cycle for m in found] == [0, 1, 2, 3, 4]
    assert len(failing_checks(lines, limit=2)) == 2


def test_timescale_unit_of_a_testbench() -> None:
    assert timescale_unit("`timescale 1 ps/1 ps\nmodule tb;") == "1ps"
    assert timescale_unit("// x\n`timescale 10ns / 1ps\n") == "10ns"
    assert timescale_unit("module tb; endmodule") is None


# ------------------------------------------------------------------------------- VCD reader

VCD = """$date today $end
$timescale
  1ps
$end
$scope module tb $end
$var reg 1 ! clk $end
$var reg 4 " a [3:0] $end
$var wire 12 # y_ref [11:0] $end
$var wire 12 $ y_dut [11:0] $end
$var integer 32 % errors [31:0] $end
$scope module dut $end
$var wire 4 & a [3:0] $end
$upscope $end
$upscope $end
$enddefinitions $end
#0
$dumpvars
0!
b0 "
b0 #
b0 $
b0 %
b0 &
$end
#10
1!
b101 "
b1010 #
bx1 $
#20
0!
b1 %
b0 "
"""


def test_snapshot_gives_the_values_just_before_the_moment() -> None:
    snap = snapshot(VCD, 20 * 1000, "tb")  # 20 ps in femtoseconds
    assert snap.complete and snap.timescale_fs == 1000
    # The values from #10, not the updates at #20; integers are bookkeeping, not signals; the
    # design's own 'a' (scope tb.dut) is not the testbench's.
    assert snap.values == {"clk": "1", "a": "4'b0101", "y_ref": "12'h00a",
                           "y_dut": "12'bxxxxxxxxxxx1"}


def test_snapshot_at_the_first_time_stamp_takes_its_values() -> None:
    assert snapshot(VCD, 0, None).values["a"] == "4'b0000"


def test_snapshot_past_the_end_of_a_cut_dump_is_incomplete() -> None:
    snap = snapshot(VCD, 500 * 1000, "tb")
    assert not snap.complete and snap.values["a"] == "4'b0000"


def test_format_value_and_units() -> None:
    assert format_value("1", 1) == "1"
    assert format_value("z", 3) == "3'bzzz"
    assert format_value("11111111", 16) == "16'h00ff"
    assert unit_fs("10 ns") == 10**7 and unit_fs("3ps") is None


def test_fill_from_dump_takes_ref_and_dut_values_at_the_first_mismatch() -> None:
    hint = parse_mismatch("Hint: Output 'y' has 2 mismatches. First mismatch occurred at time 20.",
                          time_unit="1ps")
    assert hint is not None
    (filled,) = fill_from_dump([hint], VCD, time_unit="1ps", scope="tb")
    assert (filled.expected, filled.observed) == ("12'h00a", "12'bxxxxxxxxxxx1")
    assert filled.inputs == {"a": "4'b0101", "clk": "1"}
    assert (filled.signal, filled.count, filled.time) == ("y", 2, "20 ps")
    # A check that already has values, or no time, is left as it is.
    other = Mismatch(signal="y", expected="1", observed="0")
    assert fill_from_dump([other], VCD, time_unit="1ps", scope="tb") == (other,)


# ----------------------------------------------------------- judge: testbench lines only


def test_judge_attaches_checks_from_testbench_lines() -> None:
    out = tb("FAIL vector 2: a=1 gives y=0, expected 1'd1", "Mismatches: 1 in 3 samples")
    (fb,) = judge(out, PassRule(), nonce=NONCE).feedback
    assert [(m.signal, m.cycle, m.expected, m.observed) for m in fb.mismatches] == [
        ("y", 2, "1'd1", "0")]


def test_a_design_cannot_forge_a_check() -> None:
    forged = ("Hint: Output 'y' has 1 mismatches. First mismatch occurred at time 5.\n"
              "FAIL vector 0: a=0 gives y=1, expected 1'd1\n")
    # Printed before and after the testbench's line, and glued onto it without a newline.
    out = forged + "FAIL vector 7: a=1 gives y=0, expected 1'd1 " + tb(
        "Mismatches: 4 in 8 samples") + forged
    (fb,) = judge(out, PassRule(), nonce=NONCE).feedback
    assert fb.mismatches == ()
    assert "FAIL vector" not in fb.message and "Hint" not in fb.message


def test_feedback_and_the_summary_carry_checks() -> None:
    assert Feedback(category="x", message="m").mismatches == ()
    check = Mismatch(signal="y", expected="1", observed="0", raw="y: expected 1 got 0")
    stage = StageResult(name="iverilog-sim", verdict=Verdict.FAIL,
                        feedback=(Feedback(category="sim_mismatch", message="m",
                                           mismatches=(check,)),))
    summary = ValidationReport(verdict=Verdict.FAIL, stages=(stage,)).to_summary()
    assert summary["feedback"][0]["mismatches"] == [check.model_dump()]
    assert ValidationReport.model_validate_json(
        ValidationReport(verdict=Verdict.FAIL, stages=(stage,)).model_dump_json()
    ).stages[0].feedback[0].mismatches == (check,)
