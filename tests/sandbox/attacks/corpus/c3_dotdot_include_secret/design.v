// A relative include path that climbs out of the run dir to the secret.
module top_module(input [7:0] a, input [7:0] b, output [8:0] sum);
  assign sum = a + b;
  localparam integer K =
`include "../../../../../../../../../../../../../../../../../../../../../../../../..@SECRET@"
  ;
  initial $display("K=%0d", K);
endmodule
