// Wrong on purpose: division by zero gives quotient 0 and remainder 0 (another convention, not
// the spec's all-ones / dividend). Every other division is right (latency 1).
module udiv(input clk, input rst, input start, input [15:0] dividend, input [15:0] divisor,
            output reg done, output reg [15:0] quotient, output reg [15:0] remainder);
  always @(posedge clk) begin
    if (rst) begin
      done <= 1'b0; quotient <= 16'd0; remainder <= 16'd0;
    end else begin
      done <= start;
      if (start) begin
        quotient <= (divisor == 16'd0) ? 16'd0 : dividend / divisor;
        remainder <= (divisor == 16'd0) ? 16'd0 : dividend % divisor;
      end
    end
  end
endmodule
