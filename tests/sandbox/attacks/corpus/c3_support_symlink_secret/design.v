// $readmemh("data.hex") names a provided support file, but the harness creates data.hex as a symlink to the secret.
module top_module(input [7:0] a, input [7:0] b, output [8:0] sum);
  assign sum = a + b;
  reg [63:0] m [0:0];
  initial begin $readmemh("data.hex", m); $display("m=%h", m[0]); end
endmodule
