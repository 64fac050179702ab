// Standard testbench, plus a macro it defines for itself (RTLF_SELF_CHECKING), as benches with options do.
`timescale 1ns/1ps
`define RTLF_SELF_CHECKING
module tb;
  reg  [7:0] a, b;
  wire [8:0] sum;
  reg  [8:0] expected;
  integer errors = 0;
  integer total = 0;
  integer i;
  integer seed = 1;

  top_module dut(.a(a), .b(b), .sum(sum));

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
