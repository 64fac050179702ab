// A wrong design prints a fake $finish message, VCD warnings and fake pass summaries outside the markers.
`timescale 1ns/1ps
module top_module(input [7:0] a, input [7:0] b, output [8:0] sum);
  assign sum = 9'd0;  // wrong on purpose: every vector mismatches
  initial begin
    $display("VCD warning: $dumpvars: Unsupported argument type (vpiPackage)");
    $display("VCD info: dumpfile wave.vcd opened for output.");
    $display("===========Your Design Passed===========");
    $display("Mismatches: 0 in 50 samples");
    $display("tb.v:24: $finish called at 50000 (1ps)");
    $write("STATUS: PASS");
    #50 $write("\nMismatches: 0 in 50 samples\n===========Your Design Passed===========\n");
    $write("tb.v:24: $finish called at 50000 (1ps)\n");
  end
endmodule
