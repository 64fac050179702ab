// A DPI import of libc's system(): native code runs at simulation time.
module dpi_system (input wire clk, output reg [7:0] q);
  import "DPI-C" function int system(input string cmd);
  integer rc;
  always @(posedge clk) q <= q + 8'd1;
  initial rc = system("echo pwned > /tmp/rtlforge_pwned");
endmodule
