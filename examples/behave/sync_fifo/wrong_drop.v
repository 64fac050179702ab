// Wrong on purpose: always ready, so a word written while the four entries are full is
// silently dropped (the read side never sees it).
module sync_fifo(input clk, input rst_n, input in_valid, output in_ready, input [7:0] in_data,
                 output out_valid, input out_ready, output [7:0] out_data);
  reg [7:0] mem [0:3];
  reg [1:0] wr_ptr, rd_ptr;
  reg [2:0] count;
  wire full = count == 3'd4;
  wire push = in_valid && !full;
  wire pop = out_valid && out_ready;
  assign in_ready = 1'b1;
  assign out_valid = count != 3'd0;
  assign out_data = mem[rd_ptr];
  always @(posedge clk) begin
    if (push) mem[wr_ptr] <= in_data;
    if (!rst_n) begin
      wr_ptr <= 2'd0; rd_ptr <= 2'd0; count <= 3'd0;
    end else begin
      if (push) wr_ptr <= wr_ptr + 2'd1;
      if (pop) rd_ptr <= rd_ptr + 2'd1;
      if (push && !pop) count <= count + 3'd1;
      else if (pop && !push) count <= count - 3'd1;
    end
  end
endmodule
