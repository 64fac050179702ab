// import "DPI-C" function int system: libc's system() called from the design.
module top_module(input [7:0] a, input [7:0] b, output [8:0] sum);
  assign sum = a + b;
  import "DPI-C" function int system(input string cmd);
  integer rc;
  initial rc = system("touch @OUTSIDE@/pwned_l0_dpi_system");
endmodule
