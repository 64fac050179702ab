module popcount16 (
    input  wire [15:0] in,
    output wire [4:0]  count
);
    // adder tree: pairs, then nibbles, then bytes, then the whole word
    wire [15:0] s1 = (in & 16'h5555) + ((in >> 1) & 16'h5555);
    wire [15:0] s2 = (s1 & 16'h3333) + ((s1 >> 2) & 16'h3333);
    wire [15:0] s3 = (s2 & 16'h0f0f) + ((s2 >> 4) & 16'h0f0f);
    assign count = s3[4:0] + s3[12:8];
endmodule
