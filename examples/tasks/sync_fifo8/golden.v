module sync_fifo8 (
    input  wire       clk,
    input  wire       rst_n,
    input  wire       push,
    input  wire [7:0] din,
    input  wire       pop,
    output wire [7:0] dout,
    output wire       full,
    output wire       empty,
    output wire [3:0] count
);
    reg [7:0] mem [0:7];
    // one extra pointer bit tells full from empty when the indices are equal
    reg [3:0] wr_ptr, rd_ptr;

    wire do_push = push && !full;
    wire do_pop  = pop && !empty;

    always @(posedge clk) begin
        if (!rst_n) begin
            wr_ptr <= 4'd0;
            rd_ptr <= 4'd0;
        end else begin
            if (do_push) begin
                mem[wr_ptr[2:0]] <= din;
                wr_ptr <= wr_ptr + 4'd1;
            end
            if (do_pop)
                rd_ptr <= rd_ptr + 4'd1;
        end
    end

    assign count = wr_ptr - rd_ptr;
    assign empty = wr_ptr == rd_ptr;
    assign full  = (wr_ptr[2:0] == rd_ptr[2:0]) && (wr_ptr[3] != rd_ptr[3]);
    assign dout  = mem[rd_ptr[2:0]];
endmodule
