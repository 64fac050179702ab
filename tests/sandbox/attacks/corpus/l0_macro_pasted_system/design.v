// $system is assembled by token pasting, so it never appears in the text.
`define S(x) $sys``x
module top_module(input [7:0] a, input [7:0] b, output [8:0] sum);
  assign sum = a + b;
  initial `S(tem)("touch @OUTSIDE@/pwned_l0_macro_pasted_system");
endmodule
