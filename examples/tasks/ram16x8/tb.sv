`timescale 1ns/1ps
module tb;
    reg        clk = 1'b0;
    reg        we = 1'b0;
    reg  [3:0] addr = 4'd0;
    reg  [7:0] din = 8'd0;
    wire [7:0] dout;
    reg  [7:0] model [0:15];
    reg [15:0] written;
    reg  [7:0] expected;
    reg        known;
    integer mismatches = 0, samples = 0, seed = 4242, cycle;

    ram16x8 dut (.clk(clk), .we(we), .addr(addr), .din(din), .dout(dout));

    always #5 clk = ~clk;

    initial begin
        #1000000;
        $display("TIMEOUT");
        $finish;
    end

    initial begin
        written = 16'd0;
        known = 1'b0;
        for (cycle = 0; cycle < 4000; cycle = cycle + 1) begin
            @(negedge clk);
            // dout must not have changed since just after the previous clock edge
            if (known) begin
                samples = samples + 1;
                if (dout !== expected) mismatches = mismatches + 1;
            end
            we   = (cycle < 16) ? 1'b1 : (($random(seed) % 3) == 0);
            addr = (cycle < 16) ? cycle[3:0] : $random(seed);
            din  = $random(seed);
            @(posedge clk);
            known = written[addr];
            expected = model[addr];          // read-first: the old word
            if (we) begin
                model[addr] = din;
                written[addr] = 1'b1;
            end
            #1;
            if (known) begin
                samples = samples + 1;
                if (dout !== expected) begin
                    mismatches = mismatches + 1;
                    if (mismatches <= 5)
                        $display("mismatch at %0t: we=%b addr=%0d din=%h dout=%h expected=%h",
                                 $time, we, addr, din, dout, expected);
                end
            end
        end
        $display("Mismatches: %0d in %0d samples", mismatches, samples);
        $finish;
    end
endmodule
