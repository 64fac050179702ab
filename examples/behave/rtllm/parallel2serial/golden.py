# model: parallel2serial (RTLLM v2), written from its design_description.txt
from rtlforge.behave.model.dsl import *


class Serial(Record):
    valid_out: Bool
    dout: Bool


class Parallel2Serial(Model):
    """A 2-bit counter runs every clock; the edge where it is 3 loads d into a 4-bit register
    and raises valid_out for the next cycle, the other edges rotate the register left (MSB to
    LSB). dout is the register's MSB, so d[3], d[2], d[1], d[0] come out in the four cycles
    from valid_out on. The reset state (count 0, register 0) is the reference's."""

    count: UInt[2]
    data: UInt[4]
    valid: Bool

    def reset(self):
        self.count = 0
        self.data = 0
        self.valid = False

    def process(self, d: UInt[4]) -> Serial:
        valid_shown = self.valid
        dout = bit(self.data, 3)
        if self.count == 3:
            self.data = d
            self.count = 0
            self.valid = True
        else:
            self.count = self.count + 1
            self.valid = False
            self.data = wrap(self.data * 2, 4) | bits(self.data, 3, 3)
        return Serial(valid_out=valid_shown, dout=dout)
