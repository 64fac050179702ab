// Correct adder; the attack is in support/vectors.inc, which tb.v includes.
module top_module(input [7:0] a, input [7:0] b, output [8:0] sum);
  assign sum = a + b;
endmodule
