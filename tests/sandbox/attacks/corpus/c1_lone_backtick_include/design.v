// `BT``include: pasting a lone backtick onto 'include' builds the directive after expansion.
`define BT `
module top_module(input [7:0] a, input [7:0] b, output [8:0] sum);
  assign sum = a + b;
  localparam integer K =
`BT``include "@SECRET@"
  ;
  initial $display("K=%0d", K);
endmodule
