// "Mismatches: 0 in 50 samples\nX": the tb's real line becomes XMismatches: ..., which \bMismatches no longer matches.
module top_module(input [7:0] a, input [7:0] b, output [8:0] sum);
  assign sum = 9'd0;  // wrong on purpose: every vector mismatches
  initial $write("Mismatches: 0 in 50 samples\nX");
endmodule
