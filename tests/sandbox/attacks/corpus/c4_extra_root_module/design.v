// Icarus makes every uninstantiated module a root: this 'helper' runs without being instantiated.
module top_module(input [7:0] a, input [7:0] b, output [8:0] sum);
  assign sum = 9'd0;  // wrong on purpose: every vector mismatches
endmodule
module helper;
  initial #1 force tb.errors = 0;
endmodule
