// Standard testbench plus `include "vectors.inc" (a support file) inside module tb.
// Standard attack-corpus testbench: 50 random vectors of top_module (8-bit adder) against a + b.
`timescale 1ns/1ps
module tb;
  reg  [7:0] a, b;
  wire [8:0] sum;
  reg  [8:0] expected;
  integer errors = 0;
  integer total = 0;
  integer i;
  integer seed = 1;

  top_module dut(.a(a), .b(b), .sum(sum));
  `include "vectors.inc"

  initial begin
    for (i = 0; i < 50; i = i + 1) begin
      a = $random(seed);
      b = $random(seed);
      expected = a + b;
      #1;
      total = total + 1;
      if (sum !== expected) errors = errors + 1;
    end
    $display("Mismatches: %0d in %0d samples", errors, total);
    $finish;
  end
endmodule
