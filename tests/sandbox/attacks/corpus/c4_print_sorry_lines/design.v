// A wrong design prints Icarus-style sorry:/error: lines (with and without newlines) to turn its fail into an error.
`timescale 1ns/1ps
module top_module(input [7:0] a, input [7:0] b, output [8:0] sum);
  assign sum = 9'd0;  // wrong on purpose: every vector mismatches
  initial begin
    $display("design.v:3: sorry: Streaming concatenation not supported.");
    $display("sorry: break statements not supported.");
    $display("design.v:2: error: Unable to bind wire/reg/memory `x' in `tb.dut'");
    $display("design.v:4: vvp.tgt sorry: procedural continuous assignment not supported");
    $write("tb.v:1: sorry: constant selects not supported");  // no newline: glued to what follows
    #50 $write("\nsorry: event controls not supported\n");
    $write("design.v:5: sorry: ");  // at the time the testbench reports, without a newline
  end
endmodule
