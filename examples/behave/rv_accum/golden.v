// One cycle from the fourth input to the sum; accepts while the output register is free or
// being emptied this cycle.
module rv_accum(input clk, input rst_n, input in_valid, output in_ready, input [7:0] in_data,
                output reg out_valid, input out_ready, output reg [9:0] out_sum);
  reg [9:0] acc;
  reg [1:0] n;
  assign in_ready = !out_valid || out_ready;
  always @(posedge clk) begin
    if (!rst_n) begin
      acc <= 0; n <= 0; out_valid <= 0; out_sum <= 0;
    end else begin
      if (out_valid && out_ready) out_valid <= 0;
      if (in_valid && in_ready) begin
        if (n == 2'd3) begin
          out_sum <= acc + in_data; out_valid <= 1; acc <= 0;
        end else acc <= acc + in_data;
        n <= n + 2'd1;
      end
    end
  end
endmodule
