// Including an absolute path leaks the file into compiler error messages.
module include_etc_passwd (input wire clk, output reg [7:0] q);
  always @(posedge clk) q <= q + 8'd1;
`include "/etc/passwd"
endmodule
