// A design has no business opening files at all.
module top_module(input [7:0] a, input [7:0] b, output [8:0] sum);
  assign sum = a + b;
  integer fd;
  initial fd = $fopen("@OUTSIDE@/pwned_l0_fopen_abs_design", "w");
endmodule
