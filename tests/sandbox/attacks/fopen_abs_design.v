// A design has no business opening files at all.
module fopen_abs_design (input wire clk, output reg [7:0] q);
  integer fd;
  always @(posedge clk) q <= q + 8'd1;
  initial begin
    q = 8'd0;
    fd = $fopen("/tmp/rtlforge_pwned", "w");
  end
endmodule
