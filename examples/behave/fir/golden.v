// Direct form: a 7-sample history register and eight constant multipliers summed in one
// combinational step; y is registered, one cycle after its sample.
module fir8(input clk, input rst, input in_valid, input signed [7:0] x,
            output reg out_valid, output reg signed [16:0] y);
  reg signed [7:0] past [0:6];  // past[k] is the sample k+1 samples before x
  wire signed [16:0] sum = 17'sd7 * x - 17'sd19 * past[0] + 17'sd42 * past[1]
                         + 17'sd127 * past[2] - 17'sd128 * past[3] + 17'sd55 * past[4]
                         - 17'sd6 * past[5] + $signed({{9{past[6][7]}}, past[6]});
  integer k;
  always @(posedge clk) begin
    if (rst) begin
      for (k = 0; k < 7; k = k + 1) past[k] <= 8'sd0;
      out_valid <= 1'b0; y <= 17'sd0;
    end else begin
      out_valid <= in_valid;
      if (in_valid) begin
        y <= sum;
        past[0] <= x;
        for (k = 1; k < 7; k = k + 1) past[k] <= past[k-1];
      end
    end
  end
endmodule
