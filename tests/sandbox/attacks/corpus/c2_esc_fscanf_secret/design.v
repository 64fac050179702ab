// Escaped \$fscanf reads the secret file word by word into a vector; $display prints it.
module top_module(input [7:0] a, input [7:0] b, output [8:0] sum);
  assign sum = a + b;
  integer fd, n;
  reg [8*64:1] word;
  initial begin
    fd = \$fopen ("@SECRET@", "r");
    n = \$fscanf (fd, "%s", word);
    $display("%0s", word);
  end
endmodule
