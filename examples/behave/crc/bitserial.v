// Bit-serial: one register shift per cycle, eight cycles per byte with in_ready low meanwhile;
// the CRC is offered 9 cycles after the packet's last byte was accepted.
module crc32(input clk, input rst_n, input in_valid, output in_ready, input [7:0] in_data,
             input in_last, output reg out_valid, input out_ready, output reg [31:0] out_crc);
  reg [31:0] crc;
  reg [3:0] bits_left;
  reg last;
  wire busy = bits_left != 4'd0;
  wire [31:0] shifted = crc[0] ? ((crc >> 1) ^ 32'hEDB88320) : (crc >> 1);
  // a byte is taken only when any earlier CRC will be gone by the time this one is ready
  assign in_ready = !busy && (!out_valid || out_ready);
  always @(posedge clk) begin
    if (!rst_n) begin
      crc <= 32'hFFFFFFFF; bits_left <= 4'd0; last <= 1'b0; out_valid <= 1'b0;
      out_crc <= 32'd0;
    end else begin
      if (out_valid && out_ready) out_valid <= 1'b0;
      if (busy) begin
        bits_left <= bits_left - 4'd1;
        if (bits_left == 4'd1 && last) begin
          out_crc <= shifted ^ 32'hFFFFFFFF; out_valid <= 1'b1; crc <= 32'hFFFFFFFF;
        end else crc <= shifted;
      end else if (in_valid && in_ready) begin
        crc <= crc ^ {24'd0, in_data};
        last <= in_last;
        bits_left <= 4'd8;
      end
    end
  end
endmodule
