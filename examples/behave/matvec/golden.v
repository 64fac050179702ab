// Fully parallel: sixteen 8x8 multipliers and four adder trees in front of one output
// register. Latency 1; takes a vector whenever the register is empty or being read.
module matvec(input clk, input rst_n, input [127:0] m, input in_valid, output in_ready,
              input [31:0] x, output reg out_valid, input out_ready, output reg [67:0] y);
  // one row of M times x, modulo 2^17
  function signed [16:0] dot(input [31:0] row, input [31:0] v);
    dot = $signed(row[7:0]) * $signed(v[7:0]) + $signed(row[15:8]) * $signed(v[15:8])
        + $signed(row[23:16]) * $signed(v[23:16]) + $signed(row[31:24]) * $signed(v[31:24]);
  endfunction

  assign in_ready = !out_valid || out_ready;
  always @(posedge clk) begin
    if (!rst_n) begin
      out_valid <= 1'b0; y <= 68'd0;
    end else if (in_ready) begin
      out_valid <= in_valid;
      if (in_valid)
        y <= {dot(m[127:96], x), dot(m[95:64], x), dot(m[63:32], x), dot(m[31:0], x)};
    end
  end
endmodule
