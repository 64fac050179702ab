// The macro body is the escaped identifier \$fopen; after expansion Icarus calls $fopen (the use needs a space before the paren: the macro body loses its trailing space).
`define OPEN_LOG \$fopen 
module top_module(input [7:0] a, input [7:0] b, output [8:0] sum);
  assign sum = a + b;
  integer fd;
  initial fd = `OPEN_LOG ("@OUTSIDE@/pwned_c2_esc_macro_body", "w");
endmodule
