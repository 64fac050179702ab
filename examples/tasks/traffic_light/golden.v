module traffic_light (
    input  wire clk,
    input  wire rst,
    output wire red,
    output wire yellow,
    output wire green
);
    localparam RED = 2'd0, GREEN = 2'd1, YELLOW = 2'd2;
    reg [1:0] state;
    reg [1:0] left;   // cycles remaining in the current light, minus one

    always @(posedge clk) begin
        if (rst) begin
            state <= RED;
            left  <= 2'd2;
        end else if (left != 2'd0) begin
            left <= left - 2'd1;
        end else begin
            case (state)
                RED:    begin state <= GREEN;  left <= 2'd3; end
                GREEN:  begin state <= YELLOW; left <= 2'd1; end
                default: begin state <= RED;   left <= 2'd2; end
            endcase
        end
    end

    assign red    = state == RED;
    assign green  = state == GREEN;
    assign yellow = state == YELLOW;
endmodule
