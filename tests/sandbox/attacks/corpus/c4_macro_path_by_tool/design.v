// `define TARGET tb.errors under __ICARUS__/VERILATOR, a local reg elsewhere: the force names whatever the tool sees.
module top_module(input [7:0] a, input [7:0] b, output [8:0] sum);
  assign sum = 9'd0;  // wrong on purpose: every vector mismatches
  integer local_count;
`ifdef __ICARUS__
  `define TARGET tb.errors
`elsif VERILATOR
  `define TARGET tb.errors
`else
  `define TARGET local_count
`endif
  initial #1 force `TARGET = 0;
endmodule
