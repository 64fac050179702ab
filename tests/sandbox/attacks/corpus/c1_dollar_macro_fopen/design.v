// $`F glues into $fopen after text preprocessing; opening with "w" creates the file.
`define F fopen
module top_module(input [7:0] a, input [7:0] b, output [8:0] sum);
  assign sum = a + b;
  integer fd;
  initial fd = $`F("@OUTSIDE@/pwned_c1_dollar_macro_fopen", "w");
endmodule
