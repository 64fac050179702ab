// A waveform dump written over an absolute path.
module tb;
  reg clk = 1'b0;
  always #5 clk = ~clk;
  initial begin
    $dumpfile("/tmp/rtlforge_pwned.vcd");
    $dumpvars(0, tb);
    #20 $finish;
  end
endmodule
