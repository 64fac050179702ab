// \$fopen (escaped identifier, ends at the space) is the system function $fopen to Icarus.
module top_module(input [7:0] a, input [7:0] b, output [8:0] sum);
  assign sum = a + b;
  integer fd;
  initial fd = \$fopen ("@OUTSIDE@/pwned_c2_esc_fopen", "w");
endmodule
