# model: accum_valid (the golden behaviour model B*: behaviour DSL, checked and interpreted)
from rtlforge.behave.model.dsl import *

WIDTH = 9


class PacketSum(Record):
    out_sum: SInt[WIDTH]


class AccumValid(Model):
    """One transaction per valid sample; the sample flagged `in_last` closes the packet and
    emits its sum, wrapped to 9-bit two's complement. The other samples emit nothing."""

    acc: SInt[WIDTH]

    def reset(self):
        self.acc = 0

    def process(self, in_data: SInt[8], in_last: Bool) -> PacketSum:
        total = swrap(self.acc + in_data, WIDTH)
        if in_last:
            self.acc = 0
            return PacketSum(out_sum=total)
        self.acc = total
        return
