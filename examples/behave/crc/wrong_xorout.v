// Wrong on purpose: the final XOR with 0xFFFFFFFF is missing (CRC-32/JAMCRC instead of
// CRC-32/ISO-HDLC); otherwise the byte-parallel design of golden.v.
module crc32(input clk, input rst_n, input in_valid, output in_ready, input [7:0] in_data,
             input in_last, output reg out_valid, input out_ready, output reg [31:0] out_crc);
  reg [31:0] crc;

  function [31:0] crc_byte(input [31:0] c_in, input [7:0] b);
    integer i;
    reg [31:0] c;
    begin
      c = c_in ^ {24'd0, b};
      for (i = 0; i < 8; i = i + 1)
        c = c[0] ? ((c >> 1) ^ 32'hEDB88320) : (c >> 1);
      crc_byte = c;
    end
  endfunction

  wire [31:0] next = crc_byte(crc, in_data);
  assign in_ready = !out_valid || out_ready;
  always @(posedge clk) begin
    if (!rst_n) begin
      crc <= 32'hFFFFFFFF; out_valid <= 1'b0; out_crc <= 32'd0;
    end else begin
      if (out_valid && out_ready) out_valid <= 1'b0;
      if (in_valid && in_ready) begin
        if (in_last) begin
          out_crc <= next; out_valid <= 1'b1; crc <= 32'hFFFFFFFF;
        end else crc <= next;
      end
    end
  end
endmodule
