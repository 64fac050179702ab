// Only Verilator defines VERILATOR: the call is dead code to slang, live to Verilator.
module ifdef_verilator_system (input wire clk, output reg [7:0] q);
  always @(posedge clk) q <= q + 8'd1;
`ifdef VERILATOR
  initial $system("echo pwned > /tmp/rtlforge_pwned");
`endif
endmodule
