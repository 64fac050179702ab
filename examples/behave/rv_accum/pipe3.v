// Pipelined, three cycles from the fourth input to the sum: two register stages after the
// accumulator; the whole pipeline (input included) holds while the output is stalled.
module rv_accum(input clk, input rst_n, input in_valid, output in_ready, input [7:0] in_data,
                output reg out_valid, input out_ready, output reg [9:0] out_sum);
  reg [9:0] acc, s1, s2;
  reg v1, v2;
  reg [1:0] n;
  wire advance = !out_valid || out_ready;
  assign in_ready = advance;
  always @(posedge clk) begin
    if (!rst_n) begin
      acc <= 0; n <= 0; v1 <= 0; v2 <= 0; s1 <= 0; s2 <= 0; out_valid <= 0; out_sum <= 0;
    end else if (advance) begin
      v1 <= 0;
      if (in_valid) begin
        n <= n + 2'd1;
        if (n == 2'd3) begin s1 <= acc + in_data; v1 <= 1; acc <= 0; end
        else acc <= acc + in_data;
      end
      s2 <= s1; v2 <= v1;
      out_sum <= s2; out_valid <= v2;
    end
  end
endmodule
