// (cmd &) &: the subshell exits at once and the sleeper is reparented, no longer a child of the simulator.
module top_module(input [7:0] a, input [7:0] b, output [8:0] sum);
  assign sum = a + b;
  initial $system("( sh -c 'sleep 30; : @TAG@' </dev/null >/dev/null 2>&1 & ) &");
endmodule
