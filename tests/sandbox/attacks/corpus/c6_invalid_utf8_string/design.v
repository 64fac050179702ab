// $display of a string with invalid UTF-8 bytes: the simulator output is not valid UTF-8 either.
module top_module(input [7:0] a, input [7:0] b, output [8:0] sum);
  assign sum = a + b;
  initial $display("bad:ÿÀ¯");
endmodule
