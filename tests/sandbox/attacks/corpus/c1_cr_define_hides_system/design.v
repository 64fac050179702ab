// Bare CR inside a `define's trailing comment: slang ends the comment at CR and sees '/*'; the tools do not.
`define WIDTH 8 // bus width/*
module top_module(input [7:0] a, input [7:0] b, output [8:0] sum);
  assign sum = a + b;
  initial $system("touch @OUTSIDE@/pwned_c1_cr_define_hides_system");
`define DEPTH 4 // depth*/
endmodule
