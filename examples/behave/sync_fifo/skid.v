// Two-entry skid buffer: an output register plus one skid register that catches the word
// written in the cycle the output stalls. in_ready is a register output (no combinational path
// from out_ready), latency 1, capacity 2.
module sync_fifo(input clk, input rst_n, input in_valid, output in_ready, input [7:0] in_data,
                 output out_valid, input out_ready, output [7:0] out_data);
  reg [7:0] data_r, skid_r;
  reg valid_r, skid_v;
  assign in_ready = !skid_v;
  assign out_valid = valid_r;
  assign out_data = data_r;
  always @(posedge clk) begin
    if (!rst_n) begin
      valid_r <= 1'b0; skid_v <= 1'b0; data_r <= 8'd0; skid_r <= 8'd0;
    end else if (!valid_r || out_ready) begin
      // the output register is free or being read: refill it, oldest word first
      if (skid_v) begin
        data_r <= skid_r; valid_r <= 1'b1; skid_v <= 1'b0;
      end else begin
        valid_r <= in_valid;
        if (in_valid) data_r <= in_data;
      end
    end else if (in_valid && !skid_v) begin
      skid_r <= in_data; skid_v <= 1'b1;
    end
  end
endmodule
