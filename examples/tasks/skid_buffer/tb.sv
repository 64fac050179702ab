`timescale 1ns/1ps
module tb;
    reg        clk = 1'b0;
    reg        rst_n = 1'b0, s_valid = 1'b0, m_ready = 1'b0;
    reg  [7:0] s_data = 8'd0;
    wire       s_ready, m_valid;
    wire [7:0] m_data;
    reg  [7:0] queue [0:1023];
    integer    wr = 0, rd = 0, mismatches = 0, samples = 0, seed = 515, cycle, burst_in;
    reg        stalled = 1'b0, ready_before, valid_before;
    reg  [7:0] stalled_data;

    skid_buffer dut (.clk(clk), .rst_n(rst_n), .s_valid(s_valid), .s_ready(s_ready),
                     .s_data(s_data), .m_valid(m_valid), .m_ready(m_ready), .m_data(m_data));

    always #5 clk = ~clk;

    initial begin
        #1000000;
        $display("TIMEOUT");
        $finish;
    end

    task automatic fail(input [8*24-1:0] what);
        begin
            mismatches = mismatches + 1;
            if (mismatches <= 5) $display("mismatch at %0t: %0s", $time, what);
        end
    endtask

    initial begin
        burst_in = 0;
        for (cycle = 0; cycle < 3000; cycle = cycle + 1) begin
            @(negedge clk);
            rst_n   = cycle >= 2;
            s_valid = (cycle >= 2900) ? 1'b1 : ($random(seed) & 1);
            m_ready = (cycle >= 2900) ? 1'b1 : (($random(seed) & 3) != 0);
            s_data  = $random(seed);
            #1;
            // requirements 3 and 5: toggling the other side's handshake input between
            // clock edges must not move s_ready or m_valid
            ready_before = s_ready;
            valid_before = m_valid;
            m_ready = ~m_ready;
            s_valid = ~s_valid;
            #1;
            samples = samples + 1;
            if (s_ready !== ready_before) fail("s_ready is combinational");
            if (m_valid !== valid_before) fail("m_valid is combinational");
            m_ready = ~m_ready;
            s_valid = ~s_valid;
            #2;   // 1ns before the rising edge: sample both handshakes
            if (cycle == 2) begin
                samples = samples + 1;
                if (m_valid !== 1'b0 || s_ready !== 1'b1) fail("bad state after reset");
            end
            if (stalled) begin   // requirement 2
                samples = samples + 1;
                if (m_valid !== 1'b1 || m_data !== stalled_data) fail("output changed while stalled");
            end
            if (rst_n && s_valid && s_ready) begin
                queue[wr % 1024] = s_data;
                wr = wr + 1;
                if (cycle >= 2900) burst_in = burst_in + 1;
            end
            if (rst_n && m_valid && m_ready) begin   // requirement 1
                samples = samples + 1;
                if (rd >= wr) fail("output without input");
                else begin
                    if (m_data !== queue[rd % 1024]) fail("wrong data or order");
                    rd = rd + 1;
                end
            end
            stalled = rst_n && m_valid && !m_ready;
            stalled_data = m_data;
        end
        // drain: whatever is still inside must come out
        @(negedge clk);
        s_valid = 1'b0;
        m_ready = 1'b1;
        repeat (4) begin
            #4;   // before the rising edge, as above
            if (m_valid) begin
                samples = samples + 1;
                if (rd >= wr || m_data !== queue[rd % 1024]) fail("wrong data while draining");
                rd = rd + 1;
            end
            @(negedge clk);
        end
        samples = samples + 2;
        if (rd !== wr) fail("bytes lost");
        if (burst_in < 98) fail("no full throughput");   // requirement 4: 100 cycles of streaming
        $display("Mismatches: %0d in %0d samples", mismatches, samples);
        $finish;
    end
endmodule
