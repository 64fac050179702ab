// Wrong on purpose: ties round away from zero (half-up on the magnitude) instead of to
// even, e.g. 2.5 gives 3 and 0.25 gives 0.5. Otherwise the whole-block design of golden.v.
module mxfp4_quant(input clk, input rst_n, input in_valid, output in_ready, input [511:0] x,
                   output reg out_valid, input out_ready, output reg [7:0] scale,
                   output reg [127:0] codes);
  // running maximum and NaN/infinity flag as continuous chains (stage g sees elements 0..g-1)
  wire [7:0] run_max [0:32];
  wire [32:0] run_special;
  assign run_max[0] = 8'd0;
  assign run_special[0] = 1'b0;
  genvar k;
  generate
    for (k = 0; k < 32; k = k + 1) begin : scan
      wire [7:0] e = x[16*k+7 +: 8];
      assign run_max[k+1] = (e > run_max[k]) ? e : run_max[k];
      assign run_special[k+1] = run_special[k] || (e == 8'd255);
    end
  endgenerate
  wire [7:0] emax = run_max[32];
  wire special = run_special[32];
  wire [7:0] shared = (emax > 8'd2) ? emax - 8'd2 : 8'd0;
  wire [127:0] lanes;
  genvar g;
  generate
    for (g = 0; g < 32; g = g + 1) begin : lane
      mxfp4_lane quantiser(.x(x[16*g +: 16]), .scale(shared), .code(lanes[4*g +: 4]));
    end
  endgenerate
  assign in_ready = !out_valid || out_ready;
  always @(posedge clk) begin
    if (!rst_n) begin
      out_valid <= 1'b0; scale <= 8'd0; codes <= 128'd0;
    end else begin
      if (out_valid && out_ready) out_valid <= 1'b0;
      if (in_valid && in_ready) begin
        out_valid <= 1'b1;
        scale <= special ? 8'd255 : shared;
        codes <= special ? 128'd0 : lanes;
      end
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
  wire up = (rest >= half);  // the bug: ties round away from zero
  wire [15:0] mag = (q + {15'd0, up}) << step;
  // magnitude in halves (0, 1, 2, 3, 4, 6, 8, 12; 16 saturates) to the 3-bit code
  wire [2:0] m = (mag < 16'd4) ? mag[2:0] : (mag < 16'd6) ? 3'd4 : (mag < 16'd8) ? 3'd5
               : (mag < 16'd12) ? 3'd6 : 3'd7;
  assign code = {x[15], m};
endmodule
