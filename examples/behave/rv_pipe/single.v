// One stage: the multiply-add in front of a single output register. Latency 1; takes operands
// whenever the register is empty or being read.
module rv_pipe(input clk, input rst_n, input in_valid, output in_ready,
               input signed [7:0] a, input signed [7:0] b, input signed [15:0] c,
               output reg out_valid, input out_ready, output reg signed [16:0] y);
  assign in_ready = !out_valid || out_ready;
  always @(posedge clk) begin
    if (!rst_n) begin
      out_valid <= 1'b0; y <= 17'sd0;
    end else if (in_ready) begin
      out_valid <= in_valid;
      if (in_valid) y <= a * b + c;
    end
  end
endmodule
