`timescale 1ns/1ps
module tb;
    reg        clk = 1'b0;
    reg        rst_n = 1'b0, in_valid = 1'b0, out_ready = 1'b0;
    reg  [7:0] in_data = 8'd0;
    wire       in_ready, out_valid;
    wire [9:0] out_sum;
    // cycle-exact reference model
    reg        m_valid;
    reg  [9:0] m_sum, m_partial;
    integer    m_taken, sums = 0, mismatches = 0, samples = 0, seed = 4444, cycle;

    rv_accum4 dut (.clk(clk), .rst_n(rst_n), .in_valid(in_valid), .in_ready(in_ready),
                   .in_data(in_data), .out_valid(out_valid), .out_ready(out_ready),
                   .out_sum(out_sum));

    always #5 clk = ~clk;

    initial begin
        #1000000;
        $display("TIMEOUT");
        $finish;
    end

    initial begin
        m_valid = 1'b0;
        m_sum = 10'd0;
        m_partial = 10'd0;
        m_taken = 0;
        for (cycle = 0; cycle < 4000; cycle = cycle + 1) begin
            @(negedge clk);
            rst_n     = (cycle >= 2) && (($random(seed) & 511) != 0);
            in_valid  = ($random(seed) % 4) != 0;
            out_ready = $random(seed);
            in_data   = (cycle % 500 < 20) ? 8'hff : $random(seed);   // also hit the top sum 1020
            #1;
            if (cycle >= 2) begin
                samples = samples + 1;
                if (in_ready !== !m_valid || out_valid !== m_valid
                    || (m_valid && out_sum !== m_sum)) begin
                    mismatches = mismatches + 1;
                    if (mismatches <= 5)
                        $display("mismatch at %0t: in_ready=%b out_valid=%b out_sum=%0d, expected out_valid=%b out_sum=%0d",
                                 $time, in_ready, out_valid, out_sum, m_valid, m_sum);
                end
            end
            @(posedge clk);
            if (!rst_n) begin
                m_valid = 1'b0;
                m_partial = 10'd0;
                m_taken = 0;
            end else begin
                if (m_valid && out_ready) m_valid = 1'b0;
                else if (!m_valid && in_valid) begin
                    if (m_taken == 3) begin
                        m_sum = m_partial + in_data;
                        m_valid = 1'b1;
                        m_partial = 10'd0;
                        m_taken = 0;
                        sums = sums + 1;
                    end else begin
                        m_partial = m_partial + in_data;
                        m_taken = m_taken + 1;
                    end
                end
            end
        end
        $display("Mismatches: %0d in %0d samples", mismatches, samples);
        $finish;
    end
endmodule
