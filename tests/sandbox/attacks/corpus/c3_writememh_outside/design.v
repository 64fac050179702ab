// $writememh("<abs path>") writes a memory image outside the run dir.
module top_module(input [7:0] a, input [7:0] b, output [8:0] sum);
  assign sum = a + b;
  reg [7:0] m [0:3];
  initial begin m[0] = 8'h41; m[1] = 8'h42; m[2] = 0; m[3] = 0;
    $writememh("@OUTSIDE@/pwned_c3_writememh_outside", m); end
endmodule
