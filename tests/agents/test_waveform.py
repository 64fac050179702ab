"""Waveform windows around the first mismatch: a VCD written by hand with its expected table
written by hand, the cases with no window, and one failing Icarus run."""

from __future__ import annotations

import pytest

from rtlforge.agents.waveform import draw_window, failing_window, mismatch_window
from rtlforge.core.models import Candidate, Mismatch, Port, SourceFile, Task, Verdict
from rtlforge.plugins.validators.iverilog import IverilogLint, IverilogSim
from rtlforge.testing import requires_tools
from rtlforge.validate.pipeline import Pipeline

# A VerilogEval-style dump (tb scope with <out>_ref/<out>_dut pairs, harness signals, an
# integer counter, a nested dut scope), 1 ps units; the DUT's q lags the reference by a cycle.
VCD = """$date today $end
$timescale 1ps $end
$scope module tb $end
$var reg 1 ! clk $end
$var reg 1 " a $end
$var reg 4 # cnt [3:0] $end
$var wire 1 $ q_ref $end
$var wire 1 % q_dut $end
$var wire 1 & tb_match $end
$var integer 32 ' errors $end
$scope module dut $end
$var wire 1 ( inner $end
$upscope $end
$upscope $end
$enddefinitions $end
#0
$dumpvars
0!
0"
b0 #
0$
0%
1&
b0 '
0(
$end
#5000
1!
b1 #
#10000
0!
1"
#15000
1!
b10 #
1$
#20000
0!
0&
#25000
1!
b11 #
1%
#30000
0!
0"
#35000
1!
b100 #
0$
#40000
0!
"""


def test_window_around_the_first_mismatch_marks_the_wrong_rows() -> None:
    # VerilogEval reports the check at 20 ns: it saw the state just before 20 ns (the 15 ns row)
    text = mismatch_window(VCD, Mismatch(signal="q", time="20 ns"), inputs=("clk", "a"),
                           outputs=("q",))
    assert text == (
        "   time  clk  a  q_ref  q_dut  cnt\n"
        "   0ns   0    0  0      0      4'b0000\n"
        "   5ns   1    0  0      0      4'b0001\n"
        "   10ns  0    1  0      0      4'b0001\n"
        "*  15ns  1    1  1      0      4'b0010  <- first mismatch\n"
        "*  20ns  0    1  1      0      4'b0010\n"
        "   25ns  1    1  1      1      4'b0011\n")


def test_window_size_and_bare_times_in_the_testbench_unit() -> None:
    window = draw_window(VCD, Mismatch(signal="q", time="20"), before=1, after=1,
                         time_unit="1ns")
    assert window.rows == 3 and window.first_mismatch_fs == 20 * 10**6
    assert [line.split()[1] if line.startswith("*") else line.split()[0]
            for line in window.text.splitlines()[1:]] == ["10ns", "15ns", "20ns"]


def test_without_a_reference_signal_the_printed_values_are_shown() -> None:
    plain = VCD.replace("$var wire 1 $ q_ref $end\n", "").replace(
        "$var wire 1 % q_dut $end", "$var wire 1 % q $end")
    check = Mismatch(signal="q", time="20 ns", expected="1", observed="0")
    text = mismatch_window(plain, check, before=0, after=0, inputs=("clk", "a"), outputs=("q",))
    assert text == ("   time  clk  a  q  cnt\n"
                    "*  15ns  1    1  0  4'b0010  <- first mismatch (q: expected 1, observed 0)\n")


def test_no_window_and_why() -> None:
    late = draw_window(VCD, Mismatch(signal="q", time="900 ns"))
    assert late.rows == 4  # a check after the last change: the final row and 3 before it
    assert late.text.splitlines()[-1].endswith("<- first mismatch")
    cut = draw_window(VCD, Mismatch(signal="q", time="30 ns"), max_bytes=420)
    assert not cut and "cut" in cut.reason
    assert "no usable time" in draw_window(VCD, Mismatch(signal="q")).reason
    assert "no signals in scope 'nope'" in draw_window(VCD, Mismatch(time="5"),
                                                       scope="nope").reason
    assert "$timescale" in draw_window("$enddefinitions $end", Mismatch(time="5")).reason


def test_failing_window_needs_a_testbench_and_a_dumping_simulator() -> None:
    pipeline = Pipeline([IverilogLint(), IverilogSim()])
    bare = Task(id="t", spec="", top="inv")
    design = Candidate.from_source("module inv(input a, output y); assign y = ~a; endmodule")
    assert "no testbench" in failing_window(bare, design, pipeline).reason
    lint_only = Pipeline([IverilogLint()])
    with_tb = bare.model_copy(update={"testbench": (SourceFile(name="tb.v", content=""),)})
    assert "cannot dump" in failing_window(with_tb, design, lint_only).reason


XOR_TB = """`timescale 1ns/1ps
module tb;
  reg a, b;
  wire y;
  integer mismatches = 0, samples = 0, k;
  xor2 dut(.a(a), .b(b), .y(y));
  initial begin
    for (k = 0; k < 4; k = k + 1) begin
      {a, b} = k; #5;
      samples = samples + 1;
      if (y !== (a ^ b)) begin
        mismatches = mismatches + 1;
        $display("FAIL test=%0d time=%0t: a=%0d b=%0d gives y=%0d, expected=%0d",
                 k, $time, a, b, y, a ^ b);
      end
      #5;
    end
    $display("Mismatches: %0d in %0d samples", mismatches, samples);
    $finish;
  end
endmodule
"""


@pytest.mark.tools
@requires_tools("iverilog", "vvp")
def test_a_failing_icarus_run_gives_a_window_at_the_first_failing_check() -> None:
    task = Task(id="xor2", spec="", top="xor2", testbench_top="tb",
                testbench=(SourceFile(name="tb.v", content=XOR_TB),),
                ports=(Port(name="a", direction="input"), Port(name="b", direction="input"),
                       Port(name="y", direction="output")))
    wrong = Candidate.from_source("module xor2(input a, input b, output y);\n"
                                  "  assign y = a | b;\nendmodule\n")
    pipeline = Pipeline([IverilogLint(), IverilogSim()])
    window = failing_window(task, wrong, pipeline, before=1, after=1)
    assert window, window.reason
    # inputs change every 10 ns; k=3 (a=1, b=1 from 30 ns) is the first wrong check, at 35 ns
    # (printed with %t: in ps, the precision, though the unit is 1 ns). The integer k makes no
    # column, and its change at 40 ns no row.
    assert window.text == (
        "   time  a  b  y\n"
        "   20ns  1  0  1\n"
        "*  30ns  1  1  1  <- first mismatch (y: expected 0, observed 1)\n")
    assert pipeline.validate(task, wrong).verdict is Verdict.FAIL
