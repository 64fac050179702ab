// Any file can be included; Verilator prints the offending source line, so the secret shows up in the log.
module top_module(input [7:0] a, input [7:0] b, output [8:0] sum);
  assign sum = a + b;
`include "@SECRET@"
endmodule
