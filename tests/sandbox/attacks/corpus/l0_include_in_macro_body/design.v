// The include hides in a macro body and fires where the macro is used.
`define LEAK `include "@SECRET@"
module top_module(input [7:0] a, input [7:0] b, output [8:0] sum);
  assign sum = a + b;
  localparam integer K =
`LEAK
  ;
  initial $display("K=%0d", K);
endmodule
