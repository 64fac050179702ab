// "\057..." decodes to "//<abs>": an absolute path whose literal text begins with a backslash.
module top_module(input [7:0] a, input [7:0] b, output [8:0] sum);
  assign sum = a + b;
  integer fd;
  initial fd = $fopen("\057@OUTSIDE@/pwned_c3_octal_escaped_slash", "w");
endmodule
