`timescale 1ns/1ps
module tb;
    reg  clk = 1'b0;
    reg  rst = 1'b1;
    wire red, yellow, green;
    reg  [2:0] model;         // {red, yellow, green}
    integer elapsed, mismatches = 0, samples = 0, seed = 3, cycle;

    traffic_light dut (.clk(clk), .rst(rst), .red(red), .yellow(yellow), .green(green));

    always #5 clk = ~clk;

    initial begin
        #1000000;
        $display("TIMEOUT");
        $finish;
    end

    initial begin
        model = 3'b100;
        elapsed = 0;
        for (cycle = 0; cycle < 2000; cycle = cycle + 1) begin
            @(negedge clk);
            rst = (cycle < 2) || (($random(seed) % 97) == 0);
            @(posedge clk);
            if (rst) begin
                model = 3'b100;
                elapsed = 0;
            end else begin
                elapsed = elapsed + 1;
                if (model == 3'b100 && elapsed == 3) begin model = 3'b001; elapsed = 0; end
                else if (model == 3'b001 && elapsed == 4) begin model = 3'b010; elapsed = 0; end
                else if (model == 3'b010 && elapsed == 2) begin model = 3'b100; elapsed = 0; end
            end
            #1;
            samples = samples + 1;
            if ({red, yellow, green} !== model) begin
                mismatches = mismatches + 1;
                if (mismatches <= 5)
                    $display("mismatch at %0t: rst=%b {r,y,g}=%b expected=%b",
                             $time, rst, {red, yellow, green}, model);
            end
        end
        $display("Mismatches: %0d in %0d samples", mismatches, samples);
        $finish;
    end
endmodule
