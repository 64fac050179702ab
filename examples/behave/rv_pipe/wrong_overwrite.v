// Wrong on purpose: the product stage loads whenever the operand stage holds data, ignoring a
// stall behind it. While the sum stage waits on out_ready, the product stage is overwritten
// (its result lost) and the operand stage, told it did not move, later hands over the same
// operands again (a duplicate).
module rv_pipe(input clk, input rst_n, input in_valid, output in_ready,
               input signed [7:0] a, input signed [7:0] b, input signed [15:0] c,
               output out_valid, input out_ready, output signed [16:0] y);
  reg v1, v2, v3;
  reg signed [7:0] a1, b1;
  reg signed [15:0] c1, c2, p2;
  reg signed [16:0] y3;
  wire r3 = !v3 || out_ready;
  wire r2 = !v2 || r3;
  wire r1 = !v1 || r2;
  assign in_ready = r1;
  assign out_valid = v3;
  assign y = y3;
  always @(posedge clk) begin
    if (!rst_n) begin
      v1 <= 1'b0; v2 <= 1'b0; v3 <= 1'b0;
      a1 <= 8'sd0; b1 <= 8'sd0; c1 <= 16'sd0; c2 <= 16'sd0; p2 <= 16'sd0; y3 <= 17'sd0;
    end else begin
      if (r1) begin
        v1 <= in_valid; a1 <= a; b1 <= b; c1 <= c;
      end
      if (r2 || v1) begin
        v2 <= v1 || v2; p2 <= a1 * b1; c2 <= c1;
      end
      if (r3) begin
        v3 <= v2; y3 <= p2 + c2;
      end
    end
  end
endmodule
