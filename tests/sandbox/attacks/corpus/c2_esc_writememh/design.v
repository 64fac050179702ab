// Escaped \$writememh dumps a memory to an absolute path.
module top_module(input [7:0] a, input [7:0] b, output [8:0] sum);
  assign sum = a + b;
  reg [7:0] m [0:3];
  initial begin m[0] = 8'h41; \$writememh ("@OUTSIDE@/pwned_c2_esc_writememh", m); end
endmodule
