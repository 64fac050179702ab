# model: square_wave (RTLLM v2), written from its design_description.txt
#
# Where the description is silent the reference decides: the counter and the wave start at 0
# (there is no reset); the comparison with freq - 1 is on integers (Verilog's 32-bit context),
# so freq = 0 never matches and the counter just wraps at 256 without toggling; a counter that
# has passed freq - 1 (freq lowered meanwhile) counts on and wraps too.
from rtlforge.behave.model.dsl import *


class Wave(Record):
    wave_out: Bool


class SquareWave(Model):
    """Per cycle: the wave as it is, then count; at freq - 1 the count restarts and it flips."""

    count: UInt[8]
    wave: Bool

    def reset(self):
        self.count = 0
        self.wave = False

    def process(self, freq: UInt[8]) -> Wave:
        shown = self.wave
        if self.count == freq - 1:
            self.count = 0
            self.wave = not self.wave
        else:
            self.count = wrap(self.count + 1, 8)
        return Wave(wave_out=shown)
