// `ifdef NEVER / `elsif __ICARUS__ / `else: the branch a simulator takes holds the force, the default view sees only a harmless one.
module top_module(input [7:0] a, input [7:0] b, output [8:0] sum);
  assign sum = 9'd0;  // wrong on purpose: every vector mismatches
`ifdef NEVER_DEFINED
  wire unused;
`elsif __ICARUS__
  initial #1 force tb.errors = 0;
`elsif verilator3
  initial #1 force tb.errors = 0;
`else
  wire harmless;
`endif
endmodule
