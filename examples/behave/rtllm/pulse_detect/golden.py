# model: pulse_detect (RTLLM v2), written from its design_description.txt
from rtlforge.behave.model.dsl import *


class Pulse(Record):
    data_out: Bool


class PulseDetect(Model):
    """data_out is high in the cycle whose data_in ends a 0,1,0 pulse (the example: data_in
    01010 gives data_out 00101, so it is combinational in that cycle's data_in, as in the
    reference). The 0 and 1 before it are bits clocked in since reset; pulses overlap (0101 0
    ends a second pulse)."""

    last: Bool  # the previous bit clocked in
    before: Bool  # the one before it
    seen: UInt[2]  # bits clocked in since reset (saturates at 2)

    def reset(self):
        self.last = False
        self.before = False
        self.seen = 0

    def process(self, data_in: Bool) -> Pulse:
        pulse = not data_in and self.seen == 2 and self.last and not self.before
        self.before = self.last
        self.last = data_in
        self.seen = min(self.seen + 1, 2)
        return Pulse(data_out=pulse)
