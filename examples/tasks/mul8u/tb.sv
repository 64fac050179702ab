`timescale 1ns/1ps
module tb;
    reg  [7:0]  a, b;
    wire [15:0] p;
    reg  [15:0] expected;
    integer mismatches = 0, samples = 0, i;

    mul8u dut (.a(a), .b(b), .p(p));

    initial begin
        #10000000;
        $display("TIMEOUT");
        $finish;
    end

    initial begin
        // exhaustive: all 65536 operand pairs
        for (i = 0; i < 65536; i = i + 1) begin
            {a, b} = i[15:0];
            #1;
            expected = a * b;
            samples = samples + 1;
            if (p !== expected) begin
                mismatches = mismatches + 1;
                if (mismatches <= 5)
                    $display("mismatch: a=%0d b=%0d p=%0d expected=%0d", a, b, p, expected);
            end
        end
        $display("Mismatches: %0d in %0d samples", mismatches, samples);
        $finish;
    end
endmodule
