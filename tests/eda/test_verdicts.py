"""Verdict detection: instrumentation, every auto format, forgery, and all RTLLM goldens."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from rtlforge.core.models import PassRule, SourceFile, Verdict
from rtlforge.eda.feedback import parse_iverilog
from rtlforge.eda.verdicts import (
    Judgement,
    end_marker,
    instrument_testbench,
    judge,
    marker,
    new_nonce,
)
from rtlforge.sandbox.runner import SandboxRunner
from rtlforge.testing import skip_unless_tools

NONCE = "0123456789abcdef"
TAG = marker(NONCE)
END = end_marker(NONCE)
AUTO = PassRule()


def tb(*lines: str) -> str:
    """Output as the instrumented testbench would print it ($display: markers, then newline)."""
    return "".join(f"{TAG}{line}{END}\n" for line in lines)


# ---------------------------------------------------------------- instrumentation


def test_nonce_is_fresh_and_valid() -> None:
    a, b = new_nonce(), new_nonce()
    assert a != b and marker(a).startswith("@@rtlf:")
    with pytest.raises(ValueError):
        marker('bad"nonce%d')


def test_instrument_rewrites_calls_only_outside_comments_and_strings() -> None:
    src = (
        'module tb;\n'
        '  // $display("comment");\n'
        '  /* $display("block");\n     $write("x"); */\n'
        '  initial begin\n'
        '    $display;\n'
        '    $display();\n'
        '    $display ( );\n'
        '    $display("has $display inside %d", 1);\n'
        '    $displayh(x); $writeb(x); $strobeo(x); $monitor("m %d", x);\n'
        '    $display(\n      "split %0d",\n      x);\n'
        '    $fdisplay(f, "left alone"); $fwrite(f, "alone");\n'
        '    my$display = 1;\n'
        '  end\n'
        'endmodule\n'
    )
    out = instrument_testbench(src, NONCE)
    lit, end = f'"{TAG}"', f'"{END}"'
    assert '// $display("comment");' in out and '/* $display("block");' in out
    assert '$write("x"); */' in out
    assert out.count(f"$display({lit}, {end})") == 2 and f"$display ({lit}, {end})" in out
    assert f'$display({lit}, "has $display inside %d", 1, {end});' in out
    assert (f"$displayh({lit}, x, {end}); $writeb({lit}, x, {end}); "
            f"$strobeo({lit}, x, {end});") in out
    assert f'$monitor({lit}, "m %d", x, {end});' in out
    assert f'$display({lit}, \n      "split %0d",\n      x, {end});' in out
    assert '$fdisplay(f, "left alone"); $fwrite(f, "alone");' in out
    assert "my$display = 1;" in out
    assert out.count(TAG) == 9 and out.count(END) == 9


def test_instrument_finds_the_closing_parenthesis_past_strings_and_nesting() -> None:
    src = '$display("a) b", f(x[1]), {c, d}); $write("(" );'
    out = instrument_testbench(src, NONCE)
    assert out == (f'$display("{TAG}", "a) b", f(x[1]), {{c, d}}, "{END}"); '
                   f'$write("{TAG}", "(" , "{END}");')


# ---------------------------------------------------------------- auto formats

PASSING = {
    "verilogeval": tb("Hint: Output 'out' has no mismatches.",
                      "Hint: Total mismatched samples is 0 out of 100 samples",
                      "Mismatches: 0 in 100 samples"),
    "rtllm": tb("===========Your Design Passed==========="),
    "rtllm_spaced": tb("Starting ROM Testbench...", "=========== Your Design Passed ==========="),
    "status": tb("STATUS: PASS"),
    "tests_passed": tb("5/5 tests passed"),
    "zero_count": tb("Test completed with 0 errors."),
    "no_errors": tb("Simulation finished with no errors", "STATUS: PASS"),
}

FAILING = {
    "verilogeval": tb("Hint: Output 'out' has 3 mismatches. First mismatch occurred at time 20.",
                      "Mismatches: 3 in 100 samples"),
    "rtllm_count": tb("===========Test completed with           7 /100 failures==========="),
    "rtllm_count_spaced": tb("=========== Test completed with          20 failures ==========="),
    "rtllm_error": tb("===========Error==========="),
    "rtllm_failed": tb("Error: dividend=156, divisor=246, expected=000a, got=fa0f",
                       "===========Failed===========          3"),
    "rtllm_test_failed": tb("Test failed: A = 1, B = 2, Expected = 3, Got = 4"),
    "rtllm_failed_at": tb("Failed at          3: clk=1, clk_div=0 (expected 1)"),
    "rtllm_rom": tb("Error: Data read from address 0 is incorrect",
                    "Test completed with           1 errors."),
    "status": tb("STATUS: FAIL"),
    "tests_passed": tb("4/5 tests passed"),
    "errors_colon": tb("Errors: 2"),
}


@pytest.mark.parametrize("name", sorted(PASSING))
def test_auto_pass_formats(name: str) -> None:
    result = judge(PASSING[name], AUTO, nonce=NONCE)
    assert result.verdict is Verdict.PASS, result.reason
    assert result.feedback == ()


@pytest.mark.parametrize("name", sorted(FAILING))
def test_auto_fail_formats(name: str) -> None:
    result = judge(FAILING[name], AUTO, nonce=NONCE)
    assert result.verdict is Verdict.FAIL
    (fb,) = result.feedback
    assert fb.category == "sim_mismatch" and fb.stage == "simulate"
    assert FAILING[name].splitlines()[-1].replace(TAG, "").replace(END, "").strip() \
        in fb.message


#: Hand-written check lines without a failure word (docs/feedback.md lists the forms), each
#: followed by a summary a careless testbench prints anyway: the check decides.
HAND_WRITTEN = {
    "mismatch_word": ("MISMATCH at t=15: y = 4'b0111, expected 4'b0001", "y", "4'b0111"),
    "expected_got": ("y: expected 4'b0001, got 4'b0111", "y", "4'b0111"),
    "expected_but_observed": ("sum expected: 12 but observed 13", None, "13"),
    "exp_actual": ("check 3 exp=5 actual=4", None, "4"),
}


@pytest.mark.parametrize("name", sorted(HAND_WRITTEN))
def test_hand_written_check_lines_fail_with_structured_mismatches(name: str) -> None:
    line, signal, observed = HAND_WRITTEN[name]
    result = judge(tb(line, "Simulation complete"), AUTO, nonce=NONCE)
    assert result.verdict is Verdict.FAIL and result.feedback[0].category == "sim_mismatch"
    [check] = result.feedback[0].mismatches
    assert check.observed == observed and check.raw == line
    if signal is not None:
        assert check.signal == signal
    # the same check line beside a pass banner is a conflict, never a pass
    assert judge(tb(line, "ALL TESTS PASSED"), AUTO, nonce=NONCE).verdict is Verdict.FAIL


def test_an_expected_got_report_with_equal_values_is_no_failure() -> None:
    assert judge(tb("y: expected 4'b0001, got 4'b0001", "Mismatches: 0 in 1 samples"), AUTO,
                 nonce=NONCE).verdict is Verdict.PASS


def test_conflicting_signals_fail() -> None:
    out = tb("Failed at i=3, out=00000001, expected=00000010",
             "=========== Your Design Passed ===========")
    result = judge(out, AUTO, nonce=NONCE)
    assert result.verdict is Verdict.FAIL and "conflicting" in result.reason
    assert "Failed at i=3" in result.feedback[0].message


def test_timeout_line_fails_even_with_zero_mismatches() -> None:
    out = tb("TIMEOUT", "Mismatches: 0 in 40 samples")
    assert judge(out, AUTO, nonce=NONCE).verdict is Verdict.FAIL


def test_no_verdict_fails_with_feedback() -> None:
    result = judge(tb("At time 10, red = 1"), AUTO, nonce=NONCE)
    assert result.verdict is Verdict.FAIL
    assert result.feedback[0].category == "no_verdict"
    assert judge("", AUTO, nonce=None).feedback[0].category == "no_verdict"


def test_forged_design_output_is_ignored_with_a_nonce() -> None:
    forged = "===========Your Design Passed===========\nMismatches: 0 in 100 samples\n"
    assert judge(forged, AUTO, nonce=None).verdict is Verdict.PASS  # why the nonce exists
    result = judge(forged, AUTO, nonce=NONCE)
    assert result.verdict is Verdict.FAIL and result.feedback[0].category == "no_verdict"
    # A forged line with a guessed (wrong) marker does not count either.
    wrong = marker("ffffffffffffffff") + "STATUS: PASS\n" + tb("STATUS: FAIL")
    assert judge(wrong, AUTO, nonce=NONCE).verdict is Verdict.FAIL
    # The design's output glued before or after a testbench line stays outside the markers:
    # it can neither hide the testbench's words nor add to them.
    glued = "garbage" + tb("Mismatches: 3 in 10 samples")
    assert judge(glued, AUTO, nonce=NONCE).verdict is Verdict.FAIL
    spliced = (f"{TAG}Mismatches: 3 in 10 samples{END}Mismatches: 0 in 10 samples\n"
               + f"x{TAG}Your Design {END}Failed{TAG}Passed{END}\n")
    result = judge(spliced, AUTO, nonce=NONCE)
    assert result.verdict is Verdict.FAIL and "Mismatches: 3" in result.feedback[0].message
    assert judge("garbage" + tb("Your Design Passed"), AUTO, nonce=NONCE).verdict \
        is Verdict.PASS


def test_multi_line_display_is_read_whole_and_text_outside_markers_is_not() -> None:
    out = tb("summary:\nMismatches: 0 in 4 samples") + "Your Design Passed\n"
    assert judge(out, AUTO, nonce=NONCE).verdict is Verdict.PASS
    assert judge(tb("summary:") + "Your Design Passed\n", AUTO, nonce=NONCE).verdict \
        is Verdict.FAIL


def test_print_cut_off_before_its_end_marker_counts_to_the_line_end() -> None:
    out = tb("Mismatches: 0 in 4 samples") + f"{TAG}Mismatches: 2 in 4 samp"
    assert judge(out, AUTO, nonce=NONCE).verdict is Verdict.FAIL


def test_write_without_newline_joins_its_pieces() -> None:
    out = f"{TAG}STATUS: {END}{TAG}PASS{END}\n"
    assert judge(out, AUTO, nonce=NONCE).verdict is Verdict.PASS


def test_benign_sorry_does_not_block_a_pass() -> None:
    """Icarus still simulates what was written after these: reporting them as ERROR would
    fail correct designs that merely use `unique case` or bit selects in always_comb."""
    out = ("design.v:3: sorry: constant selects in always_* processes are not currently "
           "supported (all bits will be included).\n"
           "design.v:4: vvp.tgt sorry: Case unique/unique0 qualities are ignored.\n"
           + tb("STATUS: PASS"))
    assert judge(out, AUTO, nonce=NONCE).verdict is Verdict.PASS


#: What a design can print that looks like a tool's own words (issue 22, item 5): each on its
#: own line, and glued to the testbench's next print by a $write without a newline.
TOOL_LOOKALIKES = (
    "design.v:3: sorry: Streaming concatenation not supported.",
    "sorry: break statements not supported.",
    "design.v:2: error: Unable to bind wire/reg/memory `x' in `tb.dut'",
    "%Error: design.v:3:5: Unsupported: something",
    "%Error: Verilog $stop",
    "Segmentation fault (core dumped)",
    "FATAL: tb.v:12: simulation stopped",
    "tb.v:40: $finish called at 500 (1s)",
    "VCD warning: $dumpvars: unsupported",
    "===========Your Design Passed===========",
    "Mismatches: 0 in 50 samples",
)


@pytest.mark.parametrize("printed", TOOL_LOOKALIKES)
def test_what_the_design_prints_changes_neither_verdict_nor_its_class(printed: str) -> None:
    """Was: a ``sorry:`` line anywhere in the output made the verdict ``error`` (and cached),
    so a wrong design could turn its ``fail`` into ``error``. Only the testbench's marked text
    is read; the tool's own channels decide ``error`` (tested with the validators)."""
    failing, passing = tb("Mismatches: 3 in 50 samples"), tb("Mismatches: 0 in 50 samples")
    for design_text in (f"{printed}\n", printed, f"\n{printed}"):
        assert judge(design_text + failing, AUTO, nonce=NONCE).verdict is Verdict.FAIL
        assert judge(failing + design_text, AUTO, nonce=NONCE).verdict is Verdict.FAIL
        assert judge(design_text + passing, AUTO, nonce=NONCE).verdict is Verdict.PASS
        assert judge(passing + design_text, AUTO, nonce=NONCE).verdict is Verdict.PASS


def test_tool_unsupported_reads_sorry_lines_of_the_tools_own_text() -> None:
    from rtlforge.eda.stages import tool_unsupported

    text = "design.v:3: sorry: Streaming concatenation not supported.\n"
    found = tool_unsupported(text, stage="simulate", files={"design.v": "a\nb\nc\n"})
    assert [f.category for f in found] == ["unsupported"] and found[0].line == 3
    assert found[0].context is not None
    benign = "design.v:4: vvp.tgt sorry: Case unique/unique0 qualities are ignored.\n"
    assert tool_unsupported(benign, stage="simulate", files={}) == []


def test_regex_rule() -> None:
    rule = PassRule(kind="regex", pass_regex=r"^ALL OK$", fail_regex=r"BAD")
    assert judge(tb("ALL OK"), rule, nonce=NONCE).verdict is Verdict.PASS
    assert judge(tb("ALL OK", "BAD thing"), rule, nonce=NONCE).verdict is Verdict.FAIL
    assert judge("ALL OK\n", rule, nonce=NONCE).verdict is Verdict.FAIL  # unmarked: the design's
    assert judge("ALL OK\n", rule, nonce=None).verdict is Verdict.PASS
    missing = judge(tb("nothing"), rule, nonce=NONCE)
    assert missing.verdict is Verdict.FAIL and missing.feedback[0].category == "no_verdict"
    # A regex rule does not use the auto words: "Error" alone is not a failure here.
    assert judge(tb("Error", "ALL OK"), PassRule(kind="regex", pass_regex="ALL OK"),
                 nonce=NONCE).verdict is Verdict.PASS


def test_judge_scales_linearly_with_output_size() -> None:
    """Ten times the output may cost about ten times as long, not a hundred (a quadratic
    scan); a ratio within one run, not a wall-clock limit, so a loaded machine cannot fail it."""
    def seconds(lines: int) -> float:
        out = tb(*(f"cycle {i}: out = {i & 255}" for i in range(lines)), "STATUS: PASS")
        start = time.perf_counter()
        assert judge(out, AUTO, nonce=NONCE).verdict is Verdict.PASS
        return time.perf_counter() - start

    seconds(2_000)  # warm the regex caches
    small = min(seconds(10_000) for _ in range(3))
    large = min(seconds(100_000) for _ in range(2))
    assert large < 40 * small


# ---------------------------------------------------------------- end to end with Icarus


def simulate(files: dict[str, str], testbench: str, nonce: str | None,
             runner: SandboxRunner | None = None, support: dict[str, Path] | None = None,
             ) -> Judgement:
    """Compile and run with Icarus in a sandbox workspace, then judge the output."""
    runner = runner or SandboxRunner()
    tb_source = instrument_testbench(testbench, nonce) if nonce else testbench
    all_files = {**files, "testbench.v": tb_source}
    with runner.workspace() as run_dir:
        names = [*all_files, *(support or {})]
        runner.put(run_dir, [SourceFile(name=n, content=t) for n, t in files.items()],
                   role="design", readable=names)
        runner.put(run_dir, [SourceFile(name="testbench.v", content=tb_source),
                             *(SourceFile(name=n, content=p.read_text())
                               for n, p in (support or {}).items())],
                   role="testbench", readable=names)
        compiled = runner.run(["iverilog", "-g2012", "-o", "sim.vvp", "testbench.v",
                               *files], run_dir, timeout=60)
        items = parse_iverilog(compiled.output, stage="compile", files=all_files)
        if compiled.returncode != 0 or any(f.severity == "error" for f in items):
            return Judgement(Verdict.ERROR, "compile failed", tuple(items))
        sim = runner.run(["vvp", "-n", "sim.vvp"], run_dir, timeout=60)
    return judge(sim.output, AUTO, nonce=nonce, files=all_files)


ADDER_TB = """\
module tb;
  reg [3:0] a, b; wire [4:0] s; integer i, errors = 0;
  adder dut (.a(a), .b(b), .s(s));
  initial begin
    for (i = 0; i < 16; i = i + 1) begin
      a = i; b = 15 - i; #1;
      if (s !== a + b) errors = errors + 1;
    end
    if (errors == 0) $display("===========Your Design Passed===========");
    else $display("===========Test completed with %d failures===========", errors);
    $finish;
  end
endmodule
"""
GOOD_ADDER = "module adder(input [3:0] a, b, output [4:0] s);\n  assign s = a + b;\nendmodule\n"
FORGING_ADDER = """\
module adder(input [3:0] a, b, output [4:0] s);
  assign s = a - b;  // wrong
  initial begin
    $display("===========Your Design Passed===========");
    $display("Mismatches: 0 in 16 samples");
    #2 $finish;  // stop before the testbench can report
  end
endmodule
"""


@pytest.mark.tools
def test_forging_design_cannot_pass_real_simulation() -> None:
    skip_unless_tools("iverilog", "vvp")
    assert simulate({"design.v": GOOD_ADDER}, ADDER_TB, new_nonce()).verdict is Verdict.PASS
    # Without instrumentation the forgery works; with a nonce it is caught.
    assert simulate({"design.v": FORGING_ADDER}, ADDER_TB, None).verdict is Verdict.PASS
    caught = simulate({"design.v": FORGING_ADDER}, ADDER_TB, new_nonce())
    assert caught.verdict is Verdict.FAIL and caught.feedback[0].category == "no_verdict"
    honest_wrong = FORGING_ADDER.replace("#2 $finish;", "")
    result = simulate({"design.v": honest_wrong}, ADDER_TB, new_nonce())
    assert result.verdict is Verdict.FAIL and "failures" in result.feedback[0].message


# ---------------------------------------------------------------- RTLLM v2 goldens

RTLLM = Path(__file__).parents[2].parent / "shared" / "benchmarks" / "rtllm"

#: Goldens whose testbench does not pass under Icarus 11, and why (see the report).
RTLLM_EXPECTED_NON_PASS = {
    "asyn_fifo": Verdict.ERROR,  # testbench `break`: "sorry: break statements not supported"
    "ring_counter": Verdict.ERROR,  # `reg [7:0] data [0:9] = {...}` init: Icarus 11 rejects it
    "radix2_div": Verdict.FAIL,  # testbench drives/samples on clock edges: scheduling race
    "clkgenerator": Verdict.FAIL,  # samples clk at the very time steps it toggles: race
}
_VERIFIED_MODULE = re.compile(r"\bmodule\s+verified_\w+")


def _rtllm_designs() -> list[Path]:
    return sorted(p.parent for p in RTLLM.glob("[A-Z]*/*/*/testbench.v"))


@pytest.mark.shared
@pytest.mark.tools
def test_rtllm_goldens_pass_under_icarus() -> None:
    if not RTLLM.is_dir():
        pytest.skip(f"RTLLM benchmark data not found at {RTLLM} (needs ../shared)")
    skip_unless_tools("iverilog", "vvp")
    designs = _rtllm_designs()
    assert len(designs) == 50
    runner = SandboxRunner()
    results: dict[str, Judgement] = {}
    for folder in designs:
        (golden,) = folder.glob("verified_*.v")
        # The testbench instantiates the folder's name; 28 goldens call it verified_<x>
        # (two with a different <x>), so rename whatever verified_ module the file declares.
        source = _VERIFIED_MODULE.sub(f"module {folder.name}", golden.read_text())
        support = {p.name: p for p in folder.iterdir()
                   if p.is_file() and p.name != "testbench.v" and p != golden
                   and p.suffix not in (".md",) and p.name != "design_description.txt"}
        results[folder.name] = simulate({"design.v": source}, (folder / "testbench.v").read_text(),
                                        new_nonce(), runner, support)
    non_pass = {name: r.verdict for name, r in results.items() if r.verdict is not Verdict.PASS}
    assert non_pass == RTLLM_EXPECTED_NON_PASS, {
        name: (r.verdict, r.reason, [fb.message for fb in r.feedback])
        for name, r in results.items() if name in non_pass}
    assert sum(r.verdict is Verdict.PASS for r in results.values()) == 46
    assert results["asyn_fifo"].feedback[0].category == "unsupported"


def test_plain_all_tests_passed_lines() -> None:
    assert judge(tb("ALL TESTS PASSED"), AUTO, nonce=NONCE).verdict is Verdict.PASS
    assert judge(tb("Test passed."), AUTO, nonce=NONCE).verdict is Verdict.PASS
    mixed = tb("test 3 failed: got 1", "ALL TESTS PASSED")
    assert judge(mixed, AUTO, nonce=NONCE).verdict is Verdict.FAIL
