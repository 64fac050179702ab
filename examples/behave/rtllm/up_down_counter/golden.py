# model: up_down_counter (RTLLM v2), written from its design_description.txt
from rtlforge.behave.model.dsl import *


class Count(Record):
    count: UInt[16]


class UpDownCounter(Model):
    """A 16-bit register counting up (up_down high) or down each clock, wrapping modulo 2^16
    (the description gives the range 0..65535; the reference wraps both ways). `count` shows
    the register, so a step shows one clock later."""

    count: UInt[16]

    def reset(self):
        self.count = 0

    def process(self, up_down: Bool) -> Count:
        shown = self.count
        if up_down:
            self.count = wrap(self.count + 1, 16)
        else:
            self.count = wrap(self.count - 1, 16)
        return Count(count=shown)
