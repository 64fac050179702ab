// A testbench may write files, but only plain names inside the run directory.
module tb;
  integer fd;
  initial begin
    fd = $fopen("/tmp/rtlforge_pwned", "w");
    $fwrite(fd, "pwned\n");
    $fclose(fd);
    $finish;
  end
endmodule
