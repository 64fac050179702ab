# model: serial2parallel (RTLLM v2), written from its design_description.txt
from rtlforge.behave.model.dsl import *


class Parallel(Record):
    dout_parallel: UInt[8]
    dout_valid: Bool


class Serial2Parallel(Model):
    """Eight valid serial bits, first bit in the MSB, make one byte; dout_valid is high for one
    cycle with it, and dout_parallel holds the last byte (a register cleared by reset).
    Where the description is silent the reference decides: the 4-bit count of valid bits
    restarts at 0 on any cycle with din_valid low (the 8 bits must arrive back to back); the
    byte is registered in the cycle after the 8th bit, so it shows two clocks after the 8th
    bit, and a bit offered in that cycle (count 8) is not taken."""

    count: UInt[4]
    shift: UInt[8]
    dout_parallel: UInt[8]
    dout_valid: Bool

    def reset(self):
        self.count = 0
        self.shift = 0
        self.dout_parallel = 0
        self.dout_valid = False

    def process(self, din_serial: Bool, din_valid: Bool) -> Parallel:
        parallel_shown = self.dout_parallel
        valid_shown = self.dout_valid
        self.dout_valid = self.count == 8
        if self.count == 8:
            self.dout_parallel = self.shift
        if din_valid and self.count <= 7:
            self.shift = wrap(self.shift * 2 + (1 if din_serial else 0), 8)
        if din_valid:
            self.count = 0 if self.count == 8 else self.count + 1
        else:
            self.count = 0
        return Parallel(dout_parallel=parallel_shown, dout_valid=valid_shown)
