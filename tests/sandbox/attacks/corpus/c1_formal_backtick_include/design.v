// `D(include) "path": the formal x after a backtick becomes `include once substituted (no include in the raw text).
`define D(x) `x
module top_module(input [7:0] a, input [7:0] b, output [8:0] sum);
  assign sum = a + b;
  localparam integer K =
`D(include) "@SECRET@"
  ;
  initial $display("K=%0d", K);
endmodule
