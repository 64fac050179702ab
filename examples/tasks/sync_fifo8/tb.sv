`timescale 1ns/1ps
module tb;
    reg        clk = 1'b0;
    reg        rst_n = 1'b0, push = 1'b0, pop = 1'b0;
    reg  [7:0] din = 8'd0;
    wire [7:0] dout;
    wire       full, empty;
    wire [3:0] count;
    reg  [7:0] queue [0:7];
    integer    head, size, mismatches = 0, samples = 0, seed = 88, cycle, bias;
    reg        do_push, do_pop;

    sync_fifo8 dut (.clk(clk), .rst_n(rst_n), .push(push), .din(din), .pop(pop),
                    .dout(dout), .full(full), .empty(empty), .count(count));

    always #5 clk = ~clk;

    initial begin
        #1000000;
        $display("TIMEOUT");
        $finish;
    end

    initial begin
        head = 0;
        size = 0;
        for (cycle = 0; cycle < 5000; cycle = cycle + 1) begin
            @(negedge clk);
            // phases that favour filling, draining and mixed traffic, so full and empty both occur
            bias = (cycle / 250) % 3;
            rst_n = (cycle >= 2) && (($random(seed) & 511) != 0);
            push  = (bias == 0) ? (($random(seed) & 3) != 0)
                  : (bias == 1) ? (($random(seed) & 3) == 0) : $random(seed);
            pop   = (bias == 1) ? (($random(seed) & 3) != 0)
                  : (bias == 0) ? (($random(seed) & 3) == 0) : $random(seed);
            din   = $random(seed);
            #1;
            samples = samples + 1;
            if (cycle >= 2 && (count !== size[3:0] || empty !== (size == 0) || full !== (size == 8)
                || (size != 0 && dout !== queue[head]))) begin
                mismatches = mismatches + 1;
                if (mismatches <= 5)
                    $display("mismatch at %0t: count=%0d empty=%b full=%b dout=%h, expected count=%0d head=%h",
                             $time, count, empty, full, dout, size, queue[head]);
            end
            @(posedge clk);
            if (!rst_n) begin
                head = 0;
                size = 0;
            end else begin
                do_push = push && size < 8;
                do_pop  = pop && size > 0;
                if (do_push) queue[(head + size) % 8] = din;
                if (do_pop) begin
                    head = (head + 1) % 8;
                    size = size - 1;
                end
                if (do_push) size = size + 1;
            end
        end
        $display("Mismatches: %0d in %0d samples", mismatches, samples);
        $finish;
    end
endmodule
