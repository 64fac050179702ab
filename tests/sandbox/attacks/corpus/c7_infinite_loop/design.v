// while (1) with no delay: the simulator spins forever at time 0.
module top_module(input [7:0] a, input [7:0] b, output [8:0] sum);
  assign sum = a + b;
  integer n = 0;
  initial while (1) begin n = n + 1; if (n == 7) $display("spinning"); end
endmodule
