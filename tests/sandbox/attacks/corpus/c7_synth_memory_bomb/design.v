// An async-read RAM has no block-RAM mapping in generic synth: ~1M flip-flops plus a huge read mux.
module top_module(input [7:0] a, input [7:0] b, output [8:0] sum);
  reg [63:0] mem [0:16383];
  always @* mem[{a, b[5:0]}] = {8{a ^ b}};
  assign sum = a + b + mem[{b, a[5:0]}][8:0];
endmodule
