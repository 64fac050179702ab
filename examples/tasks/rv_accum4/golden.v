module rv_accum4 (
    input  wire       clk,
    input  wire       rst_n,
    input  wire       in_valid,
    output wire       in_ready,
    input  wire [7:0] in_data,
    output reg        out_valid,
    input  wire       out_ready,
    output reg  [9:0] out_sum
);
    reg [1:0] taken;    // bytes accepted so far in this group
    reg [9:0] partial;  // their sum

    assign in_ready = !out_valid;
    wire in_fire = in_valid && in_ready;

    always @(posedge clk) begin
        if (!rst_n) begin
            taken     <= 2'd0;
            partial   <= 10'd0;
            out_valid <= 1'b0;
        end else begin
            if (out_valid && out_ready)
                out_valid <= 1'b0;
            if (in_fire) begin
                taken <= taken + 2'd1;   // wraps to 0 after the fourth byte
                if (taken == 2'd3) begin
                    out_sum   <= partial + {2'b00, in_data};
                    out_valid <= 1'b1;
                    partial   <= 10'd0;
                end else begin
                    partial <= partial + {2'b00, in_data};
                end
            end
        end
    end
endmodule
