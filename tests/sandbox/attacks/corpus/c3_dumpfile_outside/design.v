// $dumpfile("<abs path>") + $dumpvars: the waveform lands outside the run dir.
module top_module(input [7:0] a, input [7:0] b, output [8:0] sum);
  assign sum = a + b;
  initial begin $dumpfile("@OUTSIDE@/pwned_c3_dumpfile_outside.vcd"); $dumpvars(0, top_module); end
endmodule
