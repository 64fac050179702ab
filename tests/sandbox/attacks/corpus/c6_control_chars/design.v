// [2J[H cleared     
module top_module(input [7:0] a, input [7:0] b, output [8:0] sum);
  assign sum = a + b;
  initial $display("[31mred[0m");
endmodule
