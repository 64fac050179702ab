// `include "consts.inc" is a provided plain name; consts.inc includes the secret in turn.
module top_module(input [7:0] a, input [7:0] b, output [8:0] sum);
  assign sum = a + b;
  localparam integer K =
`include "consts.inc"
  ;
  initial $display("K=%0d", K);
endmodule
