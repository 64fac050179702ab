// Three cycles from the fourth input to the sum: two extra busy cycles, no input meanwhile.
module rv_accum(input clk, input rst_n, input in_valid, output in_ready, input [7:0] in_data,
                output reg out_valid, input out_ready, output reg [9:0] out_sum);
  reg [9:0] acc;
  reg [1:0] n;
  reg [1:0] wait_n;
  reg busy;
  assign in_ready = !busy && !out_valid;
  always @(posedge clk) begin
    if (!rst_n) begin
      acc <= 0; n <= 0; out_valid <= 0; out_sum <= 0; busy <= 0; wait_n <= 0;
    end else begin
      if (out_valid && out_ready) out_valid <= 0;
      if (busy) begin
        if (wait_n == 2'd1) begin busy <= 0; out_valid <= 1; out_sum <= acc; acc <= 0; end
        wait_n <= wait_n + 2'd1;
      end else if (in_valid && in_ready) begin
        acc <= acc + in_data;
        n <= n + 2'd1;
        if (n == 2'd3) begin busy <= 1; wait_n <= 0; end
      end
    end
  end
endmodule
