// The path only appears after macro expansion.
`define DATA_FILE "/etc/shadow"
module readmemh_macro_path (input wire [3:0] addr, output wire [7:0] data);
  reg [7:0] mem [0:15];
  assign data = mem[addr];
  initial $readmemh(`DATA_FILE, mem);
endmodule
