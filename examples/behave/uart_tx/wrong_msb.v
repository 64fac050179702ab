// Wrong on purpose: sends the data bits most significant first (0xA5 goes out as 1,0,1,0,
// 0,1,0,1 either way; 0x01 does not). Timing as the golden.
module uart_tx(input clk, input rst, input in_valid, input [7:0] in_data, output reg tx,
               output reg busy);
  reg [9:0] frame;
  reg [3:0] sent;
  reg [1:0] tick;
  always @(posedge clk) begin
    if (rst) begin
      busy <= 1'b0; tx <= 1'b1; frame <= 10'd0; sent <= 4'd0; tick <= 2'd0;
    end else if (busy) begin
      tick <= tick + 2'd1;
      if (tick == 2'd3) begin
        frame <= frame >> 1;
        if (sent == 4'd9) begin
          busy <= 1'b0; sent <= 4'd0; tx <= 1'b1;
        end else begin
          sent <= sent + 4'd1; tx <= frame[1];
        end
      end
    end else if (in_valid) begin
      busy <= 1'b1; sent <= 4'd0; tick <= 2'd0; tx <= 1'b0;
      frame <= {1'b1, in_data[0], in_data[1], in_data[2], in_data[3], in_data[4], in_data[5],
                in_data[6], in_data[7], 1'b0};
    end
  end
endmodule
