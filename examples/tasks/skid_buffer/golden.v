module skid_buffer (
    input  wire       clk,
    input  wire       rst_n,
    input  wire       s_valid,
    output wire       s_ready,
    input  wire [7:0] s_data,
    output wire       m_valid,
    input  wire       m_ready,
    output wire [7:0] m_data
);
    reg       out_valid, skid_valid;
    reg [7:0] out_data, skid_data;

    // s_ready is simply "the skid register is free", which is a flop output
    assign s_ready = !skid_valid;
    assign m_valid = out_valid;
    assign m_data  = out_data;

    wire in_fire  = s_valid && s_ready;
    wire out_free = !out_valid || m_ready;   // the output register can take a new byte

    always @(posedge clk) begin
        if (!rst_n) begin
            out_valid  <= 1'b0;
            skid_valid <= 1'b0;
        end else if (out_free) begin
            // refill the output register, oldest byte first: skid, then the input
            if (skid_valid) begin
                out_data   <= skid_data;
                out_valid  <= 1'b1;
                skid_valid <= 1'b0;
            end else begin
                out_data  <= s_data;
                out_valid <= in_fire;
            end
        end else if (in_fire) begin
            // output stalled: park the incoming byte in the skid register
            skid_data  <= s_data;
            skid_valid <= 1'b1;
        end
    end
endmodule
