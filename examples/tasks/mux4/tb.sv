`timescale 1ns/1ps
module tb;
    reg  [1:0] sel;
    reg  [7:0] a, b, c, d;
    wire [7:0] y;
    reg  [7:0] expected;
    integer mismatches = 0, samples = 0, seed = 20240601, i;

    mux4 dut (.sel(sel), .a(a), .b(b), .c(c), .d(d), .y(y));

    initial begin
        #1000000;
        $display("TIMEOUT");
        $finish;
    end

    initial begin
        for (i = 0; i < 4000; i = i + 1) begin
            sel = i[1:0];
            a = $random(seed); b = $random(seed); c = $random(seed); d = $random(seed);
            #1;
            case (sel)
                2'd0: expected = a;
                2'd1: expected = b;
                2'd2: expected = c;
                default: expected = d;
            endcase
            samples = samples + 1;
            if (y !== expected) begin
                mismatches = mismatches + 1;
                if (mismatches <= 5)
                    $display("mismatch: sel=%0d a=%h b=%h c=%h d=%h y=%h expected=%h",
                             sel, a, b, c, d, y, expected);
            end
        end
        $display("Mismatches: %0d in %0d samples", mismatches, samples);
        $finish;
    end
endmodule
