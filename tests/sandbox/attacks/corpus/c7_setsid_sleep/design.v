// setsid puts the sleeper in its own session: killing the simulator's process group does not reach it.
module top_module(input [7:0] a, input [7:0] b, output [8:0] sum);
  assign sum = a + b;
  initial $system("setsid sh -c 'sleep 30; : @TAG@' </dev/null >/dev/null 2>&1 &");
endmodule
