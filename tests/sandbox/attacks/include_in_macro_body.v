// The include hides in a macro body and fires where the macro is used.
`define LEAK `include "/etc/passwd"
module include_in_macro_body (input wire clk, output reg [7:0] q);
  always @(posedge clk) q <= q + 8'd1;
`LEAK
endmodule
