# model: signal_generator (RTLLM v2), written from its design_description.txt
#
# A triangle wave between 0 and 31. Where the description is silent the reference decides: the
# cycle that sees the wave at 31 (or at 0 on the way down) only turns the direction, so each
# extreme is shown for two cycles (0, 1, ..., 31, 31, 30, ..., 0, 0, 1, ...: period 64).
from rtlforge.behave.model.dsl import *


class Wave(Record):
    wave: UInt[5]


class SignalGenerator(Model):
    """Per cycle: the wave as it is, then one step up or down (or a turn at an extreme)."""

    falling: Bool
    wave: UInt[5]

    def reset(self):
        self.falling = False
        self.wave = 0

    def process(self) -> Wave:
        shown = self.wave
        if not self.falling:
            if self.wave == 31:
                self.falling = True
            else:
                self.wave = self.wave + 1
        elif self.wave == 0:
            self.falling = False
        else:
            self.wave = self.wave - 1
        return Wave(wave=shown)
