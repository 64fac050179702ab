// A 10-bit running sum (two's complement wraps by itself) and a registered output: latency 1.
module accum_valid(input clk, input rst, input in_valid, input signed [7:0] in_data,
                   input in_last, output reg out_valid, output reg signed [9:0] out_sum);
  reg signed [9:0] acc;
  wire signed [9:0] total = acc + in_data;  // in_data sign-extends to 10 bits
  always @(posedge clk) begin
    if (rst) begin
      acc <= 10'sd0; out_valid <= 1'b0; out_sum <= 10'sd0;
    end else begin
      out_valid <= in_valid && in_last;
      if (in_valid) begin
        if (in_last) begin
          out_sum <= total;
          acc <= 10'sd0;
        end else acc <= total;
      end
    end
  end
endmodule
