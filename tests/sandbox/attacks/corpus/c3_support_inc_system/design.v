// The design only has `include "vectors.inc"; the dangerous code lives in the support file.
module top_module(input [7:0] a, input [7:0] b, output [8:0] sum);
  assign sum = a + b;
  `include "vectors.inc"
endmodule
