// An escaped identifier whose characters are bytes 0xff 0xfe 0x80.
module top_module(input [7:0] a, input [7:0] b, output [8:0] sum);
  assign sum = a + b;
  wire \ÿþ€ ;
  assign \ÿþ€ = a[0];
endmodule
