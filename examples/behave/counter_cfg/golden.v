module counter_cfg(input clk, input rst, input [3:0] limit, input en,
                   output reg [3:0] count, output wrap);
  assign wrap = en && count == limit;
  always @(posedge clk)
    if (rst) count <= 4'd0;
    else if (en) count <= (count == limit) ? 4'd0 : count + 4'd1;
endmodule
