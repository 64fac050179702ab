// The include target is only known after macro expansion.
`define TARGET "/etc/passwd"
module include_via_macro (input wire clk, output reg [7:0] q);
  always @(posedge clk) q <= q + 8'd1;
`include `TARGET
endmodule
