`timescale 1ns/1ps
module tb;
    reg  [31:0] a, b;
    reg         cin;
    wire [31:0] sum;
    wire        cout;
    reg  [32:0] expected;
    integer mismatches = 0, samples = 0, i, k, seed = 32;

    add32 dut (.a(a), .b(b), .cin(cin), .sum(sum), .cout(cout));

    task check;
        begin
            #1;
            expected = {1'b0, a} + {1'b0, b} + cin;
            samples = samples + 1;
            if ({cout, sum} !== expected) begin
                mismatches = mismatches + 1;
                if (mismatches <= 5)
                    $display("mismatch: a=%h b=%h cin=%b -> cout=%b sum=%h, expected %h",
                             a, b, cin, cout, sum, expected);
            end
        end
    endtask

    initial begin
        #10000000;
        $display("TIMEOUT");
        $finish;
    end

    initial begin
        // carries that ripple from every bit to every later bit: a run of propagates (b = ~a)
        // broken by one generate or kill at bit k, with and without a carry in
        for (k = 0; k < 32; k = k + 1) begin
            for (i = 0; i < 4; i = i + 1) begin
                a = $random(seed); b = ~a; cin = i[0];
                if (i[1]) begin a[k] = 1'b1; b[k] = 1'b1; end
                else begin a[k] = 1'b0; b[k] = 1'b0; end
                check;
            end
        end
        // the extremes
        for (i = 0; i < 16; i = i + 1) begin
            a = i[0] ? 32'hffffffff : 32'h0; b = i[1] ? 32'hffffffff : 32'h0;
            if (i[2]) a = 32'h80000000;
            if (i[3]) b = 32'h7fffffff;
            cin = i[0] ^ i[1];
            check;
        end
        // random operands, and random operands with long propagate runs
        for (i = 0; i < 20000; i = i + 1) begin
            a = $random(seed); cin = $random(seed);
            b = i[0] ? $random(seed) : ~a ^ (32'h1 << ($random(seed) & 31));
            check;
        end
        $display("Mismatches: %0d in %0d samples", mismatches, samples);
        $finish;
    end
endmodule
