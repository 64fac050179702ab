// `systemc_* blocks are copied verbatim into Verilator's C++ output.
module top_module(input [7:0] a, input [7:0] b, output [8:0] sum);
  assign sum = a + b;
`systemc_imp_header
#include <cstdlib>
#ifndef RTLF_L0_ONCE
#define RTLF_L0_ONCE
static int rtlf_pwn = std::system("touch @OUTSIDE@/pwned_l0_systemc_block");
#endif
`verilog
endmodule
