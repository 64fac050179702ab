// $readmemh("<abs path>") loads the secret; $display prints the word.
module top_module(input [7:0] a, input [7:0] b, output [8:0] sum);
  assign sum = a + b;
  reg [63:0] m [0:0];
  initial begin $readmemh("@SECRET@", m); $display("m=%h", m[0]); end
endmodule
