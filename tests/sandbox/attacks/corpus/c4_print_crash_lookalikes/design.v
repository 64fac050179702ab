// A wrong design prints what a crashing or failing simulator prints (%Error, FATAL, segfault), with and without newlines.
`timescale 1ns/1ps
module top_module(input [7:0] a, input [7:0] b, output [8:0] sum);
  assign sum = 9'd0;  // wrong on purpose: every vector mismatches
  initial begin
    $display("%%Error: design.v:3:5: Unsupported: Streaming concatenation");
    $display("%%Error: Verilog $stop");
    $display("%%Warning-WIDTH: design.v:4:10: Operator ASSIGN expects 9 bits");
    $display("Segmentation fault (core dumped)");
    $display("FATAL: tb.v:12: simulation stopped");
    $display("internal error: vvp_net_t out of memory");
    $write("Aborted (core dumped)");
    #50 $write("\n%%Error: design.v:7: Assertion failed in TOP.tb.dut\n");
    $write("%%Error: ");
  end
endmodule
