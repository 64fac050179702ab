// invalid UTF-8 follows: ÿþ Ã( â‚
module top_module(input [7:0] a, input [7:0] b, output [8:0] sum);
  assign sum = a + b;
endmodule
