// A 10-bit frame shift register, a bit counter and a 2-bit cycle counter; tx is registered
// (it changes only on clock edges, no decode glitches on the line).
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
      busy <= 1'b1; frame <= {1'b1, in_data, 1'b0}; sent <= 4'd0; tick <= 2'd0; tx <= 1'b0;
    end
  end
endmodule
