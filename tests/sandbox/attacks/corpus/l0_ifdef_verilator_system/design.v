// Only Verilator defines VERILATOR: the call is dead code to slang, live to Verilator.
module top_module(input [7:0] a, input [7:0] b, output [8:0] sum);
  assign sum = a + b;
`ifdef VERILATOR
  initial $system("touch @OUTSIDE@/pwned_l0_ifdef_verilator_system");
`endif
endmodule
