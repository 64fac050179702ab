// Verilator executes $system as a real shell command.
module system_task (input wire clk, output reg [7:0] q);
  always @(posedge clk) q <= q + 8'd1;
  initial begin
    q = 8'd0;
    $system("echo pwned > /tmp/rtlforge_pwned");
  end
endmodule
