module mul8u (
    input  wire [7:0]  a,
    input  wire [7:0]  b,
    output reg  [15:0] p
);
    integer k;
    // shift-and-add over the bits of b: one partial product per bit
    always @(*) begin
        p = 16'd0;
        for (k = 0; k < 8; k = k + 1)
            if (b[k])
                p = p + ({8'd0, a} << k);
    end
endmodule
