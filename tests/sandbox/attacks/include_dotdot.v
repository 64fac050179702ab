// Climbing out of the run directory with '..'.
`include "../secrets.vh"
module include_dotdot (input wire clk, output reg [7:0] q);
  always @(posedge clk) q <= q + 8'd1;
endmodule
