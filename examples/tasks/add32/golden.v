module add32 (
    input  wire [31:0] a,
    input  wire [31:0] b,
    input  wire        cin,
    output wire [31:0] sum,
    output wire        cout
);
    // the behavioural adder: synthesis picks the structure
    assign {cout, sum} = a + b + cin;
endmodule
