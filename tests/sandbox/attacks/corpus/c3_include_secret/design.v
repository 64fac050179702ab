// `include "<abs path>": the secret's text becomes a constant; initial $display prints it (yosys: at elaboration).
module top_module(input [7:0] a, input [7:0] b, output [8:0] sum);
  assign sum = a + b;
  localparam integer K =
`include "@SECRET@"
  ;
  initial $display("K=%0d", K);
endmodule
