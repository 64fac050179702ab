// `ifndef YOSYS: yosys (read_verilog predefines YOSYS and SYNTHESIS) skips it, simulators compile it.
module top_module(input [7:0] a, input [7:0] b, output [8:0] sum);
  assign sum = 9'd0;  // wrong on purpose: every vector mismatches
`ifndef YOSYS
  initial #1 force tb.errors = 0;
`endif
endmodule
