// Escaped \$dumpfile / \$dumpvars: a waveform written to an absolute path.
module top_module(input [7:0] a, input [7:0] b, output [8:0] sum);
  assign sum = a + b;
  initial begin \$dumpfile ("@OUTSIDE@/pwned_c2_esc_dumpfile.vcd"); \$dumpvars (0, top_module); end
endmodule
