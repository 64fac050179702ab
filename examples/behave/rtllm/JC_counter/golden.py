# model: JC_counter (RTLLM v2), written from its design_description.txt
from rtlforge.behave.model.dsl import *


class Count(Record):
    Q: UInt[64]


class JohnsonCounter(Model):
    """A 64-bit Johnson (twisted ring) counter, cleared by reset: each clock shifts Q right by
    one and puts the complement of the bit shifted out (Q[0]) into the MSB, so from 0 it fills
    with ones from the top, then with zeros, a period of 128 clocks. Q shows the register."""

    q: UInt[64]

    def reset(self):
        self.q = 0

    def process(self) -> Count:
        shown = self.q
        top = 0 if bit(self.q, 0) else 1
        self.q = (self.q >> 1) | (top << 63)
        return Count(Q=shown)
