// The file name comes from a plusarg at run time.
module tb;
  integer fd;
  reg [8*64:1] name;
  initial begin
    if ($value$plusargs("out=%s", name)) begin
      fd = $fopen(name, "w");
      $fclose(fd);
    end
    $finish;
  end
endmodule
