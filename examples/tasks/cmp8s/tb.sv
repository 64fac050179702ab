`timescale 1ns/1ps
module tb;
    reg  [7:0] a, b;
    wire       lt, eq, gt;
    reg  [2:0] expected;
    integer mismatches = 0, samples = 0, i;

    cmp8s dut (.a(a), .b(b), .lt(lt), .eq(eq), .gt(gt));

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
            expected = {$signed(a) < $signed(b), $signed(a) == $signed(b),
                        $signed(a) > $signed(b)};
            samples = samples + 1;
            if ({lt, eq, gt} !== expected) begin
                mismatches = mismatches + 1;
                if (mismatches <= 5)
                    $display("mismatch: a=%0d b=%0d {lt,eq,gt}=%b expected=%b",
                             $signed(a), $signed(b), {lt, eq, gt}, expected);
            end
        end
        $display("Mismatches: %0d in %0d samples", mismatches, samples);
        $finish;
    end
endmodule
