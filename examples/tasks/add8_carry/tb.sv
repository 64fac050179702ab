`timescale 1ns/1ps
module tb;
    reg  [7:0] a, b;
    reg        cin;
    wire [7:0] sum;
    wire       cout;
    reg  [8:0] expected;
    integer mismatches = 0, samples = 0, i;

    add8_carry dut (.a(a), .b(b), .cin(cin), .sum(sum), .cout(cout));

    initial begin
        #10000000;
        $display("TIMEOUT");
        $finish;
    end

    initial begin
        // exhaustive: every a, b and cin (131072 vectors)
        for (i = 0; i < 131072; i = i + 1) begin
            {cin, a, b} = i[16:0];
            #1;
            expected = a + b + cin;
            samples = samples + 1;
            if ({cout, sum} !== expected) begin
                mismatches = mismatches + 1;
                if (mismatches <= 5)
                    $display("mismatch: a=%0d b=%0d cin=%b -> cout=%b sum=%0d, expected %0d",
                             a, b, cin, cout, sum, expected);
            end
        end
        $display("Mismatches: %0d in %0d samples", mismatches, samples);
        $finish;
    end
endmodule
