"""Designs, models and a testbench for rv_accum written for these tests (not the task's
golden files, so a leak of B* cannot hide behind a copy the agent wrote itself)."""

from __future__ import annotations

from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "behave"
RV_ACCUM = EXAMPLES / "rv_accum"
#: The task's golden model and golden RTL, and text only they contain (checked to be there).
GOLDEN_TEXT = ((RV_ACCUM / "golden.py").read_text(encoding="utf-8")
               + (RV_ACCUM / "golden.v").read_text(encoding="utf-8"))
GOLDEN_FRAGMENTS = ("class RvAccum", "One sum per four inputs", "self.seen", "4 * 255",
                    "class Sum(Record)", "out_sum <= acc + in_data",
                    "output register is free")

#: Latency 1, a different structure from golden.v: count first, sum on the fourth.
GOOD_RTL = """\
module rv_accum(input clk, input rst_n, input in_valid, output in_ready, input [7:0] in_data,
                output reg out_valid, input out_ready, output reg [9:0] out_sum);
  reg [9:0] partial;
  reg [1:0] count;
  wire take = in_valid && in_ready;
  assign in_ready = ~out_valid | out_ready;
  always @(posedge clk) begin
    if (~rst_n) begin
      partial <= 10'd0; count <= 2'd0; out_valid <= 1'b0; out_sum <= 10'd0;
    end else begin
      if (out_ready) out_valid <= 1'b0;
      if (take) begin
        count <= count + 2'd1;
        if (&count) begin
          out_sum <= partial + {2'b00, in_data};
          out_valid <= 1'b1;
          partial <= 10'd0;
        end else begin
          partial <= partial + {2'b00, in_data};
        end
      end
    end
  end
endmodule
"""

#: Wrong on purpose: sums groups of three instead of four.
THREE_RTL = GOOD_RTL.replace("if (&count) begin", "if (count == 2'd2) begin").replace(
    "count <= count + 2'd1;", "count <= (count == 2'd2) ? 2'd0 : count + 2'd1;")

GOOD_MODEL = '''\
from rtlforge.behave.model.dsl import *


class GroupSum(Record):
    out_sum: UInt[10]


class FourSum(Model):
    """The sum of each group of four inputs, emitted with the fourth."""

    acc: UInt[10]
    count: UInt[2]

    def reset(self):
        self.acc = 0
        self.count = 0

    def process(self, in_data: UInt[8]) -> GroupSum:
        total = self.acc + in_data
        if self.count < 3:
            self.acc = wrap(total, 10)
            self.count = wrap(self.count + 1, 2)
            return
        self.acc = 0
        self.count = 0
        return GroupSum(out_sum=wrap(total, 10))
'''

THREE_MODEL = GOOD_MODEL.replace("if self.count < 3:", "if self.count < 2:")

#: Two groups, sums by hand: 1+2+3+4 = 10 and 100+200+250+255 = 805.
TESTBENCH = """\
`timescale 1ns/1ps
module tb_rv_accum;
  reg clk = 0, rst_n = 0, in_valid = 0, out_ready = 1;
  reg [7:0] in_data = 0;
  wire in_ready, out_valid;
  wire [9:0] out_sum;
  reg [7:0] data [0:7];
  reg [9:0] want [0:1];
  integer i, errors = 0, got = 0;
  rv_accum dut(.clk(clk), .rst_n(rst_n), .in_valid(in_valid), .in_ready(in_ready),
               .in_data(in_data), .out_valid(out_valid), .out_ready(out_ready),
               .out_sum(out_sum));
  always #5 clk = ~clk;
  always @(posedge clk) if (rst_n && out_valid && out_ready) begin
    if (got > 1 || out_sum !== want[got]) errors = errors + 1;
    got = got + 1;
  end
  initial begin
    data[0] = 1; data[1] = 2; data[2] = 3; data[3] = 4;
    data[4] = 100; data[5] = 200; data[6] = 250; data[7] = 255;
    want[0] = 10; want[1] = 805;
    repeat (2) @(posedge clk);
    @(negedge clk) rst_n = 1;
    i = 0;
    while (i < 8) begin
      @(negedge clk) begin in_valid = 1; in_data = data[i]; end
      @(posedge clk) if (in_ready) i = i + 1;
    end
    @(negedge clk) in_valid = 0;
    repeat (8) @(posedge clk);
    if (errors == 0 && got == 2) $display("STATUS: PASS");
    else $display("STATUS: FAIL (%0d wrong sums, %0d sums seen)", errors, got);
    $finish;
  end
endmodule
"""

#: The design asks the simulator to run a shell command and open a host file.
HOSTILE_RTL = GOOD_RTL.replace(
    "  always @(posedge clk) begin\n",
    "  initial begin\n    $system(\"cat /etc/passwd\");\n"
    "    $fopen(\"/etc/shadow\", \"r\");\n  end\n  always @(posedge clk) begin\n", 1)
