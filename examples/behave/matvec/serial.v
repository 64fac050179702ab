// One multiplier: sixteen multiply-accumulate steps, one matrix element per cycle, row by row.
// Latency 17 (load + 16 steps); in_ready low while busy or while the result waits.
module matvec(input clk, input rst_n, input [127:0] m, input in_valid, output in_ready,
              input [31:0] x, output reg out_valid, input out_ready, output reg [67:0] y);
  reg [31:0] xr;
  reg [3:0] k;               // element index 4*i + j
  reg busy;
  reg signed [16:0] acc;
  wire signed [15:0] prod = $signed(m[8*k +: 8]) * $signed(xr[8*k[1:0] +: 8]);
  wire signed [16:0] sum = acc + prod;
  assign in_ready = !busy && !out_valid;
  always @(posedge clk) begin
    if (!rst_n) begin
      xr <= 32'd0; k <= 4'd0; busy <= 1'b0; acc <= 17'sd0; out_valid <= 1'b0; y <= 68'd0;
    end else begin
      if (out_valid && out_ready) out_valid <= 1'b0;
      if (busy) begin
        if (k[1:0] == 2'd3) begin
          y[17*k[3:2] +: 17] <= sum;
          acc <= 17'sd0;
        end else acc <= sum;
        k <= k + 4'd1;
        if (k == 4'd15) begin
          busy <= 1'b0;
          out_valid <= 1'b1;
        end
      end else if (in_valid && in_ready) begin
        xr <= x; k <= 4'd0; acc <= 17'sd0; busy <= 1'b1;
      end
    end
  end
endmodule
