// Arms on 0x1234; opens (combinationally) on 0xBEEF in the cycle after arming.
module lock(input clk, input rst, input [15:0] code, output open, output reg armed);
  assign open = armed && code == 16'hBEEF;
  always @(posedge clk)
    if (rst) armed <= 1'b0;
    else armed <= code == 16'h1234;
endmodule
