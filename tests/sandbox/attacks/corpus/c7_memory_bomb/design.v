// 48 x reg [63:0] mem [0:2**23-1]: 3 GiB allocated (and zeroed) before time 0.
module top_module(input [7:0] a, input [7:0] b, output [8:0] sum);
  assign sum = a + b;
  genvar g;
  generate for (g = 0; g < 48; g = g + 1) begin : bank
    reg [63:0] mem [0:(1<<23)-1];
    integer i;
    initial begin for (i = 0; i < (1<<23); i = i + 512) mem[i] = i + g; #1 $display("%0d", mem[(1<<23)-512]); end
  end endgenerate
endmodule
