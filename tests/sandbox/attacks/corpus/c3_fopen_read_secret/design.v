// Reading the secret as text through $fopen/$fgets and printing it.
module top_module(input [7:0] a, input [7:0] b, output [8:0] sum);
  assign sum = a + b;
  integer fd, n;
  reg [8*64:1] line;
  initial begin
    fd = $fopen("@SECRET@", "r");
    n = $fgets(line, fd);
    $display("%0d %0s", n, line);  // n is printed: Verilator drops an unused n = $fgets(...)
  end
endmodule
