// `inc``lude is pasted into an include directive by the preprocessor.
`define LEAK `inc``lude "@SECRET@"
module top_module(input [7:0] a, input [7:0] b, output [8:0] sum);
  assign sum = a + b;
  localparam integer K =
`LEAK
  ;
  initial $display("K=%0d", K);
endmodule
