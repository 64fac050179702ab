// A plain relative name that is not one of the run's files (e.g. a build output).
module readmemh_not_provided (input wire [3:0] addr, output wire [7:0] data);
  reg [7:0] mem [0:15];
  assign data = mem[addr];
  initial $readmemh("Vtop.mk", mem);
endmodule
