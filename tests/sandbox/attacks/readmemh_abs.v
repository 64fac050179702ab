// Reading an arbitrary absolute path into a memory.
module readmemh_abs (input wire [3:0] addr, output wire [7:0] data);
  reg [7:0] mem [0:15];
  assign data = mem[addr];
  initial $readmemh("/etc/passwd", mem);
endmodule
