# model: LFSR (RTLLM v2), written from its design_description.txt
from rtlforge.behave.model.dsl import *


class Out(Record):
    out: UInt[4]


class Lfsr(Model):
    """Per cycle: shift left, the XNOR of bits 3 and 2 enters at bit 0; reset clears."""

    state: UInt[4]

    def reset(self):
        self.state = 0

    def process(self) -> Out:
        out = self.state
        feedback = 1 if bit(self.state, 3) == bit(self.state, 2) else 0  # XNOR
        self.state = wrap(self.state << 1, 4) | feedback
        return Out(out=out)
