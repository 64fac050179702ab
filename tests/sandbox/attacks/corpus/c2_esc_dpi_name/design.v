// import "DPI-C" function int \system : the escaped SV name maps to the C symbol system.
module top_module(input [7:0] a, input [7:0] b, output [8:0] sum);
  assign sum = a + b;
  import "DPI-C" function int \system (input string cmd);
  integer rc;
  initial rc = \system ("touch @OUTSIDE@/pwned_c2_esc_dpi_name");
endmodule
