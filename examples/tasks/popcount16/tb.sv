`timescale 1ns/1ps
module tb;
    reg  [15:0] in;
    wire [4:0]  count;
    reg  [4:0]  expected;
    integer mismatches = 0, samples = 0, i, k;

    popcount16 dut (.in(in), .count(count));

    initial begin
        #10000000;
        $display("TIMEOUT");
        $finish;
    end

    initial begin
        // exhaustive: all 65536 input words
        for (i = 0; i < 65536; i = i + 1) begin
            in = i[15:0];
            #1;
            expected = 5'd0;
            for (k = 0; k < 16; k = k + 1)
                expected = expected + in[k];
            samples = samples + 1;
            if (count !== expected) begin
                mismatches = mismatches + 1;
                if (mismatches <= 5)
                    $display("mismatch: in=%h count=%0d expected=%0d", in, count, expected);
            end
        end
        $display("Mismatches: %0d in %0d samples", mismatches, samples);
        $finish;
    end
endmodule
