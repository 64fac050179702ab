// Wrong on purpose: never ready, so no input is ever accepted (the watchdog ends the run).
module rv_accum(input clk, input rst_n, input in_valid, output in_ready, input [7:0] in_data,
                output out_valid, input out_ready, output [9:0] out_sum);
  assign in_ready = 1'b0;
  assign out_valid = 1'b0;
  assign out_sum = 10'd0;
endmodule
