// Wrong on purpose: reads the matrix column-major (computes y = M^T x), which agrees with
// the specification only for symmetric matrices.
module matvec(input clk, input rst_n, input [127:0] m, input in_valid, output in_ready,
              input [31:0] x, output reg out_valid, input out_ready, output reg [67:0] y);
  function signed [16:0] dot(input [127:0] mat, input [1:0] col, input [31:0] v);
    dot = $signed(mat[8*col +: 8]) * $signed(v[7:0])
        + $signed(mat[8*(4+col) +: 8]) * $signed(v[15:8])
        + $signed(mat[8*(8+col) +: 8]) * $signed(v[23:16])
        + $signed(mat[8*(12+col) +: 8]) * $signed(v[31:24]);
  endfunction

  assign in_ready = !out_valid || out_ready;
  always @(posedge clk) begin
    if (!rst_n) begin
      out_valid <= 1'b0; y <= 68'd0;
    end else if (in_ready) begin
      out_valid <= in_valid;
      if (in_valid)
        y <= {dot(m, 2'd3, x), dot(m, 2'd2, x), dot(m, 2'd1, x), dot(m, 2'd0, x)};
    end
  end
endmodule
