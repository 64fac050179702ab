// `ifdef COCOTB_SIM: dead in every rtlforge tool (cocotb 2 no longer defines it), so the force never runs.
module top_module(input [7:0] a, input [7:0] b, output [8:0] sum);
  assign sum = 9'd0;  // wrong on purpose: every vector mismatches
`ifdef COCOTB_SIM
  initial #1 force tb.errors = 0;
`endif
endmodule
