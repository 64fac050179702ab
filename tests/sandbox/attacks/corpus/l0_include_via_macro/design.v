// The include target is only known after macro expansion.
`define TARGET "@SECRET@"
module top_module(input [7:0] a, input [7:0] b, output [8:0] sum);
  assign sum = a + b;
  localparam integer K =
`include `TARGET
  ;
  initial $display("K=%0d", K);
endmodule
