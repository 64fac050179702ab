// ../../.. (x24) then /abs: a relative-looking name that climbs to / and comes back down.
module top_module(input [7:0] a, input [7:0] b, output [8:0] sum);
  assign sum = a + b;
  integer fd;
  initial fd = $fopen("../../../../../../../../../../../../../../../../../../../../../../../../..@OUTSIDE@/pwned_c3_dotdot_fopen", "w");
endmodule
