// $sformatf builds the path at run time; $fopen then creates it.
module top_module(input [7:0] a, input [7:0] b, output [8:0] sum);
  assign sum = a + b;
  integer fd;
  string p;
  initial begin
    p = $sformatf("%s/pwned_%s", "@OUTSIDE@", "c3_sformatf_path");
    fd = $fopen(p, "w");
  end
endmodule
