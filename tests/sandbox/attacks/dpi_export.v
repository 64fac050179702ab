// Exporting to foreign code is refused as well.
module dpi_export (input wire clk, output reg [7:0] q);
  function int get_q(); return q; endfunction
  export "DPI-C" function get_q;
  always @(posedge clk) q <= q + 8'd1;
endmodule
