// Short latency: a 16-stage restoring divider array in one combinational step, registered; the
// result and done come in the cycle after start.
module udiv(input clk, input rst, input start, input [15:0] dividend, input [15:0] divisor,
            output reg done, output reg [15:0] quotient, output reg [15:0] remainder);
  // stage k brings down dividend bit 15-k and subtracts the divisor where it fits
  wire [16:0] partial [0:16];
  wire [15:0] qbits;
  assign partial[0] = 17'd0;
  genvar k;
  generate
    for (k = 0; k < 16; k = k + 1) begin : stage
      wire [16:0] shifted = {partial[k][15:0], dividend[15-k]};
      wire fits = shifted >= {1'b0, divisor};
      assign qbits[15-k] = fits;
      assign partial[k+1] = fits ? shifted - {1'b0, divisor} : shifted;
    end
  endgenerate
  always @(posedge clk) begin
    if (rst) begin
      done <= 1'b0; quotient <= 16'd0; remainder <= 16'd0;
    end else begin
      done <= start;
      if (start) begin
        quotient <= qbits;
        remainder <= partial[16][15:0];
      end
    end
  end
endmodule
