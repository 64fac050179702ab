// A computed file name cannot be checked statically.
module readmemh_variable_path (input wire [3:0] addr, output wire [7:0] data);
  reg [7:0] mem [0:15];
  reg [8*32:1] path;
  assign data = mem[addr];
  initial begin
    path = "/etc/passwd";
    $readmemh(path, mem);
  end
endmodule
