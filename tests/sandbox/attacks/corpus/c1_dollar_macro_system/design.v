// $`S: the tools preprocess to text and re-lex '$' + 'system' as $system; slang keeps '$' and 'system' apart.
`define S system
module top_module(input [7:0] a, input [7:0] b, output [8:0] sum);
  assign sum = a + b;
  initial $`S("touch @OUTSIDE@/pwned_c1_dollar_macro_system");
endmodule
