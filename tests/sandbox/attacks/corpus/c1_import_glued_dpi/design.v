// im`P glues into 'import': a DPI-C import of libc system() that slang only sees as 'im' + macro.
`define P port
module top_module(input [7:0] a, input [7:0] b, output [8:0] sum);
  assign sum = a + b;
  im`P "DPI-C" function int system(input string cmd);
  integer rc;
  initial rc = system("touch @OUTSIDE@/pwned_c1_import_glued_dpi");
endmodule
