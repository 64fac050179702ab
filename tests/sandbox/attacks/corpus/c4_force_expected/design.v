// force tb.expected = 0: the reference now agrees with the stuck-at-0 output.
module top_module(input [7:0] a, input [7:0] b, output [8:0] sum);
  assign sum = 9'd0;  // wrong on purpose: every vector mismatches
  initial #0.5 force tb.expected = 9'd0;
endmodule
