`timescale 1ns/1ps
module tb;
    reg       clk = 1'b0;
    reg       rst_n = 1'b0;
    reg       din = 1'b0;
    wire      found;
    reg [3:0] history;
    reg       model;
    integer   seen, mismatches = 0, samples = 0, hits = 0, seed = 1011, cycle;

    seq_det_1011 dut (.clk(clk), .rst_n(rst_n), .din(din), .found(found));

    always #5 clk = ~clk;

    initial begin
        #1000000;
        $display("TIMEOUT");
        $finish;
    end

    initial begin
        history = 4'b0;
        seen = 0;
        model = 1'b0;
        for (cycle = 0; cycle < 4000; cycle = cycle + 1) begin
            @(negedge clk);
            rst_n = (cycle >= 2) && (($random(seed) % 200) != 0);
            // bias towards 1s so the pattern shows up often, with directed bursts of 1011011
            if (cycle >= 100 && cycle < 114)
                din = 14'b10110111011011 >> (113 - cycle);
            else
                din = ($random(seed) % 3) != 0;
            @(posedge clk);
            if (!rst_n) begin
                history = 4'b0;
                seen = 0;
                model = 1'b0;
            end else begin
                history = {history[2:0], din};
                if (seen < 4) seen = seen + 1;
                model = (seen == 4) && (history == 4'b1011);
            end
            #1;
            samples = samples + 1;
            if (model) hits = hits + 1;
            if (found !== model) begin
                mismatches = mismatches + 1;
                if (mismatches <= 5)
                    $display("mismatch at %0t: history=%b found=%b expected=%b",
                             $time, history, found, model);
            end
        end
        if (hits < 50) begin
            $display("testbench error: only %0d detections exercised", hits);
            mismatches = mismatches + 1;
        end
        $display("Mismatches: %0d in %0d samples", mismatches, samples);
        $finish;
    end
endmodule
