// A computed file name cannot be checked statically.
module top_module(input [7:0] a, input [7:0] b, output [8:0] sum);
  assign sum = a + b;
  reg [63:0] m [0:0];
  reg [8*200:1] path;
  initial begin path = "@SECRET@"; $readmemh(path, m); $display("m=%h", m[0]); end
endmodule
