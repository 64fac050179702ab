// Odd-even transposition sort on one register: load the block, then eight phases (even pairs
// (0,1)(2,3)(4,5)(6,7), odd pairs (1,2)(3,4)(5,6), alternating), one per cycle: latency 9,
// four comparators, in_ready low while sorting or while the result waits.
module sorter(input clk, input rst_n, input in_valid, output in_ready, input [63:0] in_data,
              output reg out_valid, input out_ready, output [63:0] out_data);
  function [63:0] cx(input [63:0] v, input [2:0] i, input [2:0] j);
    reg [7:0] a, b;
    reg [63:0] r;
    begin
      a = v[8*i +: 8];
      b = v[8*j +: 8];
      r = v;
      if (a > b) begin
        r[8*i +: 8] = b;
        r[8*j +: 8] = a;
      end
      cx = r;
    end
  endfunction

  reg [63:0] v;
  reg busy;
  reg [2:0] phase;
  assign in_ready = !busy && !out_valid;
  assign out_data = v;
  wire [63:0] even = cx(cx(cx(cx(v, 0, 1), 2, 3), 4, 5), 6, 7);
  wire [63:0] odd = cx(cx(cx(v, 1, 2), 3, 4), 5, 6);

  always @(posedge clk) begin
    if (!rst_n) begin
      v <= 64'd0; busy <= 1'b0; phase <= 3'd0; out_valid <= 1'b0;
    end else begin
      if (out_valid && out_ready) out_valid <= 1'b0;
      if (busy) begin
        v <= phase[0] ? odd : even;
        phase <= phase + 3'd1;
        if (phase == 3'd7) begin
          busy <= 1'b0;
          out_valid <= 1'b1;
        end
      end else if (in_valid && in_ready) begin
        v <= in_data;
        busy <= 1'b1;
        phase <= 3'd0;
      end
    end
  end
endmodule
