`timescale 1ns/1ps
module tb;
    reg         clk = 1'b0;
    reg         rst = 1'b1, we = 1'b0;
    reg  [2:0]  waddr = 3'd0, raddr1 = 3'd0, raddr2 = 3'd0;
    reg  [15:0] wdata = 16'd0;
    wire [15:0] rdata1, rdata2;
    reg  [15:0] model [0:7];
    integer mismatches = 0, samples = 0, seed = 1616, cycle, k;

    regfile8x16 dut (.clk(clk), .rst(rst), .we(we), .waddr(waddr), .wdata(wdata),
                     .raddr1(raddr1), .raddr2(raddr2), .rdata1(rdata1), .rdata2(rdata2));

    always #5 clk = ~clk;

    initial begin
        #1000000;
        $display("TIMEOUT");
        $finish;
    end

    task automatic check_reads;
        begin
            samples = samples + 1;
            if (rdata1 !== model[raddr1] || rdata2 !== model[raddr2]) begin
                mismatches = mismatches + 1;
                if (mismatches <= 5)
                    $display("mismatch at %0t: raddr1=%0d rdata1=%h (exp %h) raddr2=%0d rdata2=%h (exp %h)",
                             $time, raddr1, rdata1, model[raddr1], raddr2, rdata2, model[raddr2]);
            end
        end
    endtask

    initial begin
        for (k = 0; k < 8; k = k + 1) model[k] = 16'd0;
        for (cycle = 0; cycle < 4000; cycle = cycle + 1) begin
            @(negedge clk);
            rst    = (cycle < 2) || (($random(seed) & 255) == 0);
            we     = ($random(seed) & 1);
            waddr  = $random(seed);
            wdata  = $random(seed);
            raddr1 = $random(seed);
            // often read the register being written, to catch unwanted bypass
            raddr2 = ($random(seed) & 1) ? waddr : $random(seed);
            #1;
            if (cycle >= 2) check_reads;   // before the edge: old contents
            @(posedge clk);
            if (rst) begin
                for (k = 0; k < 8; k = k + 1) model[k] = 16'd0;
            end else if (we && waddr != 3'd0) begin
                model[waddr] = wdata;
            end
            #1;
            check_reads;                   // after the edge: new contents
        end
        $display("Mismatches: %0d in %0d samples", mismatches, samples);
        $finish;
    end
endmodule
