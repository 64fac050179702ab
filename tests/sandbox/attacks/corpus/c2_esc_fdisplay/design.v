// Escaped \$fopen / \$fdisplay / \$fclose are the real file tasks to Icarus.
module top_module(input [7:0] a, input [7:0] b, output [8:0] sum);
  assign sum = a + b;
  integer fd;
  initial begin
    fd = \$fopen ("@OUTSIDE@/pwned_c2_esc_fdisplay", "w");
    \$fdisplay (fd, "pwned");
    \$fclose (fd);
  end
endmodule
