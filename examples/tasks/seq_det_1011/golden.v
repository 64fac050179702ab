module seq_det_1011 (
    input  wire clk,
    input  wire rst_n,
    input  wire din,
    output reg  found
);
    // state = length of the longest suffix of the input that is a prefix of 1011
    localparam S0 = 2'd0, S1 = 2'd1, S10 = 2'd2, S101 = 2'd3;
    reg [1:0] state;

    always @(posedge clk) begin
        if (!rst_n) begin
            state <= S0;
            found <= 1'b0;
        end else begin
            found <= (state == S101) && din;
            case (state)
                S0:   state <= din ? S1 : S0;
                S1:   state <= din ? S1 : S10;
                S10:  state <= din ? S101 : S0;
                S101: state <= din ? S1 : S10;   // after 1011 the trailing 1 starts a new match
            endcase
        end
    end
endmodule
