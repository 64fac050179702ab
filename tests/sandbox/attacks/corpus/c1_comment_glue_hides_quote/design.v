// `SL`SL is '//' to the tools' lexers (a comment hides the quote); slang sees '/ /' then a string continued by \ over the $fopen line.
`define SL /
module top_module(input [7:0] a, input [7:0] b, output [8:0] sum);
  assign sum = a + b;
  localparam OUT = "@OUTSIDE@/pwned_c1_comment_glue_hides_quote";
  integer fd;
  `SL`SL "\
  initial fd = $fopen(OUT, "w"); // "
endmodule
