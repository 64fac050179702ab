`timescale 1ns/1ps
module tb;
    reg  [7:0] req;
    wire [2:0] idx;
    wire       valid;
    reg  [2:0] exp_idx;
    reg        exp_valid;
    integer mismatches = 0, samples = 0, i, k;

    prio_enc8 dut (.req(req), .idx(idx), .valid(valid));

    initial begin
        #1000000;
        $display("TIMEOUT");
        $finish;
    end

    initial begin
        // exhaustive: all 256 request patterns
        for (i = 0; i < 256; i = i + 1) begin
            req = i[7:0];
            #1;
            exp_idx = 3'd0;
            exp_valid = 1'b0;
            for (k = 7; k >= 0; k = k - 1)
                if (req[k] && !exp_valid) begin
                    exp_idx = k[2:0];
                    exp_valid = 1'b1;
                end
            samples = samples + 1;
            if (idx !== exp_idx || valid !== exp_valid) begin
                mismatches = mismatches + 1;
                if (mismatches <= 5)
                    $display("mismatch: req=%b idx=%0d valid=%b expected idx=%0d valid=%b",
                             req, idx, valid, exp_idx, exp_valid);
            end
        end
        $display("Mismatches: %0d in %0d samples", mismatches, samples);
        $finish;
    end
endmodule
