// Transposed form: each sample is multiplied by all eight coefficients at once and added into
// a chain of partial sums (no long adder tree); the finished sum passes one more register, so
// y is offered two cycles after its sample.
module fir8(input clk, input rst, input in_valid, input signed [7:0] x,
            output reg out_valid, output reg signed [16:0] y);
  // acc[k] holds h[k+1]*x[n] + h[k+2]*x[n-1] + ... (the part of y[n+1+k] already known)
  reg signed [16:0] acc [0:6];
  reg signed [16:0] done_sum;
  reg done_valid;
  wire signed [16:0] xs = {{9{x[7]}}, x};  // sign-extended once
  integer k;
  always @(posedge clk) begin
    if (rst) begin
      for (k = 0; k < 7; k = k + 1) acc[k] <= 17'sd0;
      done_sum <= 17'sd0; done_valid <= 1'b0; out_valid <= 1'b0; y <= 17'sd0;
    end else begin
      done_valid <= in_valid;
      out_valid <= done_valid;
      y <= done_sum;
      if (in_valid) begin
        done_sum <= 17'sd7 * xs + acc[0];
        acc[0] <= -17'sd19 * xs + acc[1];
        acc[1] <= 17'sd42 * xs + acc[2];
        acc[2] <= 17'sd127 * xs + acc[3];
        acc[3] <= -17'sd128 * xs + acc[4];
        acc[4] <= 17'sd55 * xs + acc[5];
        acc[5] <= -17'sd6 * xs + acc[6];
        acc[6] <= xs;
      end
    end
  end
endmodule
