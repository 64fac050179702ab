// Plain $system: Verilator executes it as a real shell command.
module top_module(input [7:0] a, input [7:0] b, output [8:0] sum);
  assign sum = a + b;
  initial $system("touch @OUTSIDE@/pwned_l0_system_task");
endmodule
