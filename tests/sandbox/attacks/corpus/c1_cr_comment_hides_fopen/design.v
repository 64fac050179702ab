// A lone CR (no LF) ends a // comment for slang only: slang sees /* ... */ around the $fopen line.
// nothing below is live, see review/*
module top_module(input [7:0] a, input [7:0] b, output [8:0] sum);
  assign sum = a + b;
  integer fd;
  initial fd = $fopen("@OUTSIDE@/pwned_c1_cr_comment_hides_fopen", "w");
// end of review note*/
endmodule
