// Twelve chained 64x64 multiplications: ABC has millions of gates to optimise.
module top_module(input [7:0] a, input [7:0] b, output [8:0] sum);
  wire [63:0] x0 = {a, b, a, b, a, b, a, b};
  wire [63:0] x1 = x0 * (x0 ^ 64'h9e3779b97f4a7c15);
  wire [63:0] x2 = x1 * (x1 ^ 64'h3c6ef372fe94f82a);
  wire [63:0] x3 = x2 * (x2 ^ 64'hdaa66d2c7ddf743f);
  wire [63:0] x4 = x3 * (x3 ^ 64'h78dde6e5fd29f054);
  wire [63:0] x5 = x4 * (x4 ^ 64'h1715609f7c746c69);
  wire [63:0] x6 = x5 * (x5 ^ 64'hb54cda58fbbee87e);
  wire [63:0] x7 = x6 * (x6 ^ 64'h538454127b096493);
  wire [63:0] x8 = x7 * (x7 ^ 64'hf1bbcdcbfa53e0a8);
  wire [63:0] x9 = x8 * (x8 ^ 64'h8ff34785799e5cbd);
  wire [63:0] x10 = x9 * (x9 ^ 64'h2e2ac13ef8e8d8d2);
  wire [63:0] x11 = x10 * (x10 ^ 64'hcc623af8783354e7);
  wire [63:0] x12 = x11 * (x11 ^ 64'h6a99b4b1f77dd0fc);
  assign sum = (a + b) ^ x12[63:55];
endmodule
