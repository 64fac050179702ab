`timescale 1ns/1ps
module tb;
    reg        clk = 1'b0;
    reg        rst = 1'b1, load = 1'b0, en = 1'b0, sin = 1'b0;
    reg  [7:0] d = 8'h00;
    wire [7:0] q;
    wire       sout;
    reg  [7:0] model;
    integer mismatches = 0, samples = 0, seed = 99, cycle;

    shift_reg8 dut (.clk(clk), .rst(rst), .load(load), .d(d), .en(en), .sin(sin),
                    .q(q), .sout(sout));

    always #5 clk = ~clk;

    initial begin
        #1000000;
        $display("TIMEOUT");
        $finish;
    end

    initial begin
        model = 8'h00;
        for (cycle = 0; cycle < 3000; cycle = cycle + 1) begin
            @(negedge clk);
            rst  = (cycle < 2) || (($random(seed) & 127) == 0);
            load = ($random(seed) & 15) == 0;
            en   = ($random(seed) & 3) != 0;
            sin  = $random(seed);
            d    = $random(seed);
            @(posedge clk);
            if (rst) model = 8'h00;
            else if (load) model = d;
            else if (en) model = {model[6:0], sin};
            #1;
            samples = samples + 1;
            if (q !== model || sout !== model[7]) begin
                mismatches = mismatches + 1;
                if (mismatches <= 5)
                    $display("mismatch at %0t: rst=%b load=%b en=%b sin=%b d=%h q=%h sout=%b expected q=%h",
                             $time, rst, load, en, sin, d, q, sout, model);
            end
        end
        $display("Mismatches: %0d in %0d samples", mismatches, samples);
        $finish;
    end
endmodule
