// $readmemh(F) with F = "data.hex" by default; defparam replaces F by the secret's absolute path.
module rom #(parameter F = "data.hex") (output [63:0] w);
  reg [63:0] m [0:0];
  initial begin $readmemh(F, m); $display("m=%h", m[0]); end
  assign w = m[0];
endmodule
module top_module(input [7:0] a, input [7:0] b, output [8:0] sum);
  assign sum = a + b;
  wire [63:0] w;
  rom u(.w(w));
  defparam u.F = "@SECRET@";
endmodule
