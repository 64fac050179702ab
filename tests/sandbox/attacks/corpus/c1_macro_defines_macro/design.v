// `MK defines `S only when expanded; $`S then glues into $system.
`define MK `define S system
`MK
module top_module(input [7:0] a, input [7:0] b, output [8:0] sum);
  assign sum = a + b;
  initial $`S("touch @OUTSIDE@/pwned_c1_macro_defines_macro");
endmodule
