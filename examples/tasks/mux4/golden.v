module mux4 (
    input  wire [1:0] sel,
    input  wire [7:0] a,
    input  wire [7:0] b,
    input  wire [7:0] c,
    input  wire [7:0] d,
    output wire [7:0] y
);
    // two levels of 2:1 selection: sel[0] picks within a pair, sel[1] picks the pair
    wire [7:0] low  = sel[0] ? b : a;
    wire [7:0] high = sel[0] ? d : c;
    assign y = sel[1] ? high : low;
endmodule
