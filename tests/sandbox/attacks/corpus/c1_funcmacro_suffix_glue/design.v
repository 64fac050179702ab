// $`ID(sys)tem: the expansion 'sys' glues to '$' before it and 'tem' after it.
`define ID(x) x
module top_module(input [7:0] a, input [7:0] b, output [8:0] sum);
  assign sum = a + b;
  initial $`ID(sys)tem("touch @OUTSIDE@/pwned_c1_funcmacro_suffix_glue");
endmodule
