// A lone '$' passed as a macro argument and pasted to a plain identifier.
`define JOIN(a, b) a``b
module dollar_pasted_system (input wire clk, output reg [7:0] q);
  always @(posedge clk) q <= q + 8'd1;
  initial begin
    q = 8'd0;
    `JOIN($, system)("echo pwned > /tmp/rtlforge_pwned");
  end
endmodule
