// `inc``lude is pasted into an include directive by the preprocessor.
module include_pasted_directive (input wire clk, output reg [7:0] q);
  always @(posedge clk) q <= q + 8'd1;
`define LEAK `inc``lude "/etc/hostname"
`LEAK
endmodule
