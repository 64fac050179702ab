module cmp8s (
    input  wire signed [7:0] a,
    input  wire signed [7:0] b,
    output wire       lt,
    output wire       eq,
    output wire       gt
);
    // flipping the sign bits maps signed order onto unsigned order
    wire [7:0] ua = {~a[7], a[6:0]};
    wire [7:0] ub = {~b[7], b[6:0]};
    assign lt = ua < ub;
    assign eq = a == b;
    assign gt = ua > ub;
endmodule
