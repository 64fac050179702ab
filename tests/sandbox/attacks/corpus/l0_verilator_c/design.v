// $c(...): Verilator pastes the text into the generated C++ model.
module top_module(input [7:0] a, input [7:0] b, output [8:0] sum);
  assign sum = a + b;
  initial $c("std::system(\"touch @OUTSIDE@/pwned_l0_verilator_c\");");
endmodule
