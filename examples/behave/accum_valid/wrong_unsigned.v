// Wrong on purpose: the sample is zero-extended (read as unsigned), so every packet holding a
// negative sample gets a sum too large by 256 per negative sample (mod 512).
module accum_valid(input clk, input rst, input in_valid, input signed [7:0] in_data,
                   input in_last, output reg out_valid, output reg signed [8:0] out_sum);
  reg signed [8:0] acc;
  wire signed [8:0] total = acc + {1'b0, in_data};
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
