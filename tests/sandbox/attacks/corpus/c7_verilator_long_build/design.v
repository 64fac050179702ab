// 62500 chained generate stages, each a different arithmetic expression: huge C++ for g++ to compile.
module top_module(input [7:0] a, input [7:0] b, output [8:0] sum);
  assign sum = a + b;
  genvar i, j;
  wire [31:0] acc [0:62500];
  assign acc[0] = {a, b, a, b};
  generate for (i = 0; i < 250; i = i + 1) begin : gi
    for (j = 0; j < 250; j = j + 1) begin : gj
      assign acc[i * 250 + j + 1] = (acc[i * 250 + j] * (i * 250 + j + 3)) ^ (acc[i * 250 + j] >> (j % 7)) ^ {16'(i * 250 + j), a, b};
    end
  end endgenerate
  initial #1 $display("%h", acc[62500]);
endmodule
