module add8_carry (
    input  wire [7:0] a,
    input  wire [7:0] b,
    input  wire       cin,
    output wire [7:0] sum,
    output wire       cout
);
    // explicit ripple of generate/propagate so the carry chain is visible in the netlist
    wire [8:0] carry;
    assign carry[0] = cin;
    genvar i;
    generate
        for (i = 0; i < 8; i = i + 1) begin : bit_slice
            assign sum[i]     = a[i] ^ b[i] ^ carry[i];
            assign carry[i+1] = (a[i] & b[i]) | (carry[i] & (a[i] ^ b[i]));
        end
    endgenerate
    assign cout = carry[8];
endmodule
