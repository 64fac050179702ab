// Wrong: never opens (only the armed-then-0xBEEF case differs from the spec).
module lock(input clk, input rst, input [15:0] code, output open, output reg armed);
  assign open = 1'b0;
  always @(posedge clk)
    if (rst) armed <= 1'b0;
    else armed <= code == 16'h1234;
endmodule
