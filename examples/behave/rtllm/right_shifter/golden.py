# model: right_shifter (RTLLM v2), written from its design_description.txt
from rtlforge.behave.model.dsl import *


class Out(Record):
    q: UInt[8]


class RightShifter(Model):
    """Per cycle: q shifts right by one and d enters at bit 7; q starts at 0."""

    q: UInt[8]

    def reset(self):
        self.q = 0

    def process(self, d: Bool) -> Out:
        q = self.q
        self.q = (self.q >> 1) | ((1 if d else 0) << 7)
        return Out(q=q)
