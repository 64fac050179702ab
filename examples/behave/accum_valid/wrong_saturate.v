// Wrong on purpose: the running sum saturates at -256 and 255 instead of wrapping (a common
// DSP habit the spec rules out), so only packets that overflow 9 bits differ.
module accum_valid(input clk, input rst, input in_valid, input signed [7:0] in_data,
                   input in_last, output reg out_valid, output reg signed [8:0] out_sum);
  reg signed [8:0] acc;
  wire signed [9:0] wide = acc + in_data;
  wire signed [8:0] total = wide > 10'sd255 ? 9'sd255 : wide < -10'sd256 ? -9'sd256
                            : wide[8:0];
  always @(posedge clk) begin
    if (rst) begin
      acc <= 9'sd0; out_valid <= 1'b0; out_sum <= 9'sd0;
    end else begin
      out_valid <= in_valid && in_last;
      if (in_valid) begin
        if (in_last) begin
          out_sum <= total;
          acc <= 9'sd0;
        end else acc <= total;
      end
    end
  end
endmodule
