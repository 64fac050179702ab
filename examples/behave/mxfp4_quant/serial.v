// One element per cycle through a single quantiser lane: a scan pass (32 cycles) finds the
// largest exponent field and any NaN/infinity while the block rotates once through its buffer,
// then a quantise pass (32 cycles) shifts one code in per cycle, element 0 ending lowest.
// Busy from acceptance to the output transfer (in_ready low): the result is offered 65 cycles
// after the block is accepted.
module mxfp4_quant(input clk, input rst_n, input in_valid, output in_ready, input [511:0] x,
                   output reg out_valid, input out_ready, output reg [7:0] scale,
                   output reg [127:0] codes);
  localparam IDLE = 2'd0, SCAN = 2'd1, QUANT = 2'd2;
  reg [1:0] phase;
  reg [511:0] buffer;
  reg [4:0] n;
  reg [7:0] emax;
  reg special;
  wire [15:0] head = buffer[15:0];
  wire [7:0] shared = (emax > 8'd2) ? emax - 8'd2 : 8'd0;
  wire [3:0] lane_code;
  mxfp4_lane quantiser(.x(head), .scale(shared), .code(lane_code));
  assign in_ready = (phase == IDLE) && !out_valid;
  always @(posedge clk) begin
    if (!rst_n) begin
      phase <= IDLE; buffer <= 512'd0; n <= 5'd0; emax <= 8'd0; special <= 1'b0;
      out_valid <= 1'b0; scale <= 8'd0; codes <= 128'd0;
    end else begin
      if (out_valid && out_ready) out_valid <= 1'b0;
      case (phase)
        IDLE: if (in_valid && in_ready) begin
          buffer <= x; n <= 5'd0; emax <= 8'd0; special <= 1'b0; phase <= SCAN;
        end
        SCAN: begin
          if (head[14:7] == 8'd255) special <= 1'b1;
          if (head[14:7] > emax) emax <= head[14:7];
          buffer <= {head, buffer[511:16]};  // rotate: after 32 steps element 0 is back
          n <= n + 5'd1;
          if (n == 5'd31) phase <= QUANT;
        end
        QUANT: begin
          codes <= {special ? 4'd0 : lane_code, codes[127:4]};
          buffer <= {16'd0, buffer[511:16]};
          n <= n + 5'd1;
          if (n == 5'd31) begin
            phase <= IDLE; out_valid <= 1'b1; scale <= special ? 8'd255 : shared;
          end
        end
        default: phase <= IDLE;
      endcase
    end
  end
endmodule

// One E2M1 quantiser lane: the BF16 word x scaled by 2^-(scale-127), rounded to nearest even
// and saturated at 6. With r = scale + 6 - ef (never below 4), the value in halves is sig >> r.
module mxfp4_lane(input [15:0] x, input [7:0] scale, output [3:0] code);
  wire [7:0] e = x[14:7];
  wire [7:0] sig = {e != 8'd0, x[6:0]};
  wire [7:0] ef = (e == 8'd0) ? 8'd1 : e;
  wire [9:0] r_full = {2'b0, scale} + 10'd6 - {2'b0, ef};
  wire [3:0] r = (r_full > 10'd12) ? 4'd12 : r_full[3:0];
  wire [7:0] whole = sig >> r;
  wire [1:0] step = (whole < 8'd4) ? 2'd0 : ((whole < 8'd8) ? 2'd1 : 2'd2);
  wire [3:0] t = r + {2'b0, step};
  wire [15:0] sigw = {8'd0, sig};
  wire [15:0] q = sigw >> t;
  wire [15:0] rest = sigw & ((16'd1 << t) - 16'd1);
  wire [15:0] half = 16'd1 << (t - 4'd1);
  wire up = (rest > half) || (rest == half && q[0]);
  wire [15:0] mag = (q + {15'd0, up}) << step;
  // magnitude in halves (0, 1, 2, 3, 4, 6, 8, 12; 16 saturates) to the 3-bit code
  wire [2:0] m = (mag < 16'd4) ? mag[2:0] : (mag < 16'd6) ? 3'd4 : (mag < 16'd8) ? 3'd5
               : (mag < 16'd12) ? 3'd6 : 3'd7;
  assign code = {x[15], m};
endmodule
