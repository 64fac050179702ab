// import "DPI-C" system = function ... checksum: a checker looking at the SV name sees 'checksum'.
module top_module(input [7:0] a, input [7:0] b, output [8:0] sum);
  assign sum = a + b;
  import "DPI-C" system = function int checksum(input string s);
  integer rc;
  initial rc = checksum("touch @OUTSIDE@/pwned_c2_dpi_c_alias");
endmodule
