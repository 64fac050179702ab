// libc system() through DPI, with nohup + setsid so neither SIGHUP nor a group kill stops the sleeper.
module top_module(input [7:0] a, input [7:0] b, output [8:0] sum);
  assign sum = a + b;
  import "DPI-C" function int system(input string cmd);
  integer rc;
  initial rc = system("nohup setsid sh -c 'sleep 30; : @TAG@' </dev/null >/dev/null 2>&1 &");
endmodule
