# model: uart_tx (the golden behaviour model B*: behaviour DSL, checked and interpreted)
from rtlforge.behave.model.dsl import *

CLKS_PER_BIT = 4
FRAME_BITS = 10  # start, 8 data bits LSB first, stop


class Line(Record):
    tx: Bool
    busy: Bool


class UartTx(Model):
    """Per cycle: returns the line and busy flag visible in this cycle, then commits the edge.
    The frame is kept as a 10-bit shift register, start bit in bit 0, shifted right once per
    bit period; `sent` counts finished bits, `tick` the cycles of the current bit."""

    busy: Bool
    frame: UInt[FRAME_BITS]
    sent: UInt[4]
    tick: UInt[2]

    def reset(self):
        self.busy = False
        self.frame = 0
        self.sent = 0
        self.tick = 0

    def process(self, in_valid: Bool, in_data: UInt[8]) -> Line:
        tx = bit(self.frame, 0) if self.busy else True
        busy = self.busy
        if self.busy:
            if self.tick == CLKS_PER_BIT - 1:
                self.tick = 0
                self.frame = self.frame >> 1
                if self.sent == FRAME_BITS - 1:
                    self.busy = False
                    self.sent = 0
                else:
                    self.sent = self.sent + 1
            else:
                self.tick = self.tick + 1
        elif in_valid:
            self.busy = True
            self.frame = (1 << 9) | (in_data << 1)  # stop bit, data, start bit (0)
            self.sent = 0
            self.tick = 0
        return Line(tx=tx, busy=busy)
