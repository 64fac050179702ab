// Wrong on purpose: the carry is lost (sum[8] is always 0).
module add8(input [7:0] a, input [7:0] b, output [8:0] sum);
  wire [7:0] low = a + b;
  assign sum = {1'b0, low};
endmodule
