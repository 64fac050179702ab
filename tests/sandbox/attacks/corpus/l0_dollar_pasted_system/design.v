// A lone '$' passed as a macro argument and pasted to a plain identifier.
`define JOIN(a, b) a``b
module top_module(input [7:0] a, input [7:0] b, output [8:0] sum);
  assign sum = a + b;
  initial `JOIN($, system)("touch @OUTSIDE@/pwned_l0_dollar_pasted_system");
endmodule
