module prio_enc8 (
    input  wire [7:0] req,
    output reg  [2:0] idx,
    output reg        valid
);
    integer k;
    // scan upwards so the highest set bit is the last assignment to win
    always @(*) begin
        idx = 3'd0;
        for (k = 0; k < 8; k = k + 1)
            if (req[k])
                idx = k[2:0];
        valid = |req;
    end
endmodule
