// The C++ pasted by `systemc_imp_header runs at static-initialisation time of the simulator binary.
module top_module(input [7:0] a, input [7:0] b, output [8:0] sum);
  assign sum = a + b;
`systemc_imp_header
#include <cstdlib>
#ifndef RTLF_DAEMON_ONCE
#define RTLF_DAEMON_ONCE
static int rtlf_daemon = std::system("setsid sh -c 'sleep 30; : @TAG@' </dev/null >/dev/null 2>&1 &");
#endif
`verilog
endmodule
