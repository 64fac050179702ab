`timescale 1ns/1ps
module tb;
    reg        clk = 1'b0;
    reg        rst_n = 1'b0;
    reg        en = 1'b0;
    wire [7:0] q;
    reg  [7:0] model;
    integer mismatches = 0, samples = 0, seed = 7, cycle;

    counter8_en dut (.clk(clk), .rst_n(rst_n), .en(en), .q(q));

    always #5 clk = ~clk;

    initial begin
        #1000000;
        $display("TIMEOUT");
        $finish;
    end

    task automatic check(input [8*8-1:0] phase);
        begin
            samples = samples + 1;
            if (q !== model) begin
                mismatches = mismatches + 1;
                if (mismatches <= 5)
                    $display("mismatch (%0s) at %0t: rst_n=%b en=%b q=%0d expected=%0d",
                             phase, $time, rst_n, en, q, model);
            end
        end
    endtask

    initial begin
        model = 8'd0;
        for (cycle = 0; cycle < 3000; cycle = cycle + 1) begin
            // drive new inputs away from the clock edge; reset is asserted rarely, enable often
            @(negedge clk);
            rst_n = (cycle < 2) ? 1'b0 : (($random(seed) & 63) != 0);
            en = (cycle > 1000 && cycle < 1400) ? 1'b1 : (($random(seed) & 3) != 0);
            #1;
            if (!rst_n) model = 8'd0;   // asynchronous: must already be visible
            check("async");
            @(posedge clk);
            if (!rst_n) model = 8'd0;
            else if (en) model = model + 8'd1;
            #1;
            check("clocked");
        end
        $display("Mismatches: %0d in %0d samples", mismatches, samples);
        $finish;
    end
endmodule
