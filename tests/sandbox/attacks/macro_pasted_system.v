// $system is assembled by token pasting, so it never appears in the text.
`define S(x) $sys``x
module macro_pasted_system (input wire clk, output reg [7:0] q);
  always @(posedge clk) q <= q + 8'd1;
  initial begin
    q = 8'd0;
    `S(tem)("echo pwned > /tmp/rtlforge_pwned");
  end
endmodule
