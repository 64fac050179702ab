// Iterative restoring divider: one quotient bit per cycle, 16 cycles after start; done in the
// 17th cycle after the start cycle.
module udiv(input clk, input rst, input start, input [15:0] dividend, input [15:0] divisor,
            output reg done, output reg [15:0] quotient, output reg [15:0] remainder);
  reg [15:0] dsor;
  reg [16:0] rem;   // partial remainder, one bit wider for the trial subtraction
  reg [15:0] quo;   // dividend bits still to bring down, quotient bits shifted in behind them
  reg [4:0] left;   // iterations still to do
  wire [16:0] shifted = {rem[15:0], quo[15]};
  wire fits = shifted >= {1'b0, dsor};
  always @(posedge clk) begin
    if (rst) begin
      done <= 1'b0; quotient <= 16'd0; remainder <= 16'd0;
      dsor <= 16'd0; rem <= 17'd0; quo <= 16'd0; left <= 5'd0;
    end else begin
      done <= 1'b0;
      if (start) begin
        dsor <= divisor; rem <= 17'd0; quo <= dividend; left <= 5'd16;
      end else if (left != 5'd0) begin
        rem <= fits ? shifted - {1'b0, dsor} : shifted;
        quo <= {quo[14:0], fits};
        left <= left - 5'd1;
        if (left == 5'd1) begin
          done <= 1'b1;
          quotient <= {quo[14:0], fits};
          remainder <= fits ? shifted[15:0] - dsor : shifted[15:0];
        end
      end
    end
  end
endmodule
