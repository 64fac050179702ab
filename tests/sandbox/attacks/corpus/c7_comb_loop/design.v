// always @(x) x <= ~x: every update schedules the next one in the same time step, forever.
module top_module(input [7:0] a, input [7:0] b, output [8:0] sum);
  assign sum = a + b;
  reg x = 1'b0;
  always @(x) x <= ~x;
  initial #1 x = 1'b1;  // the first change starts it
endmodule
