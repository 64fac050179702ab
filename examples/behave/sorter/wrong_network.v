// Wrong on purpose: the golden network with the last layer's compare-exchange (3,4) left out,
// so 3,1,4,1,5,9,2,6 comes out 1,1,2,4,3,5,6,9 (32 of the 256 zero-one inputs fail too).
// Timing and handshake as the golden.
module sorter(input clk, input rst_n, input in_valid, output in_ready, input [63:0] in_data,
              output out_valid, input out_ready, output [63:0] out_data);
  // v with elements i and j put in ascending order (i < j)
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

  reg [63:0] s1, s2, s3;
  reg v1, v2, v3;
  wire advance = !v3 || out_ready;
  assign in_ready = advance;
  assign out_valid = v3;
  assign out_data = s3;

  wire [63:0] l1 = cx(cx(cx(cx(in_data, 0, 1), 2, 3), 4, 5), 6, 7);
  wire [63:0] l2 = cx(cx(cx(cx(l1, 0, 2), 1, 3), 4, 6), 5, 7);
  wire [63:0] l3 = cx(cx(s1, 1, 2), 5, 6);
  wire [63:0] l4 = cx(cx(cx(cx(l3, 0, 4), 1, 5), 2, 6), 3, 7);
  wire [63:0] l5 = cx(cx(s2, 2, 4), 3, 5);
  wire [63:0] l6 = cx(cx(l5, 1, 2), 5, 6);

  always @(posedge clk) begin
    if (!rst_n) begin
      v1 <= 1'b0; v2 <= 1'b0; v3 <= 1'b0;
      s1 <= 64'd0; s2 <= 64'd0; s3 <= 64'd0;
    end else if (advance) begin
      v1 <= in_valid; s1 <= l2;
      v2 <= v1; s2 <= l4;
      v3 <= v2; s3 <= l6;
    end
  end
endmodule
