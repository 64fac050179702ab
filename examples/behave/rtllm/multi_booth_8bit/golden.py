# model: multi_booth_8bit (RTLLM v2), written from its design_description.txt
from rtlforge.behave.model.dsl import *


class Out(Record):
    p: UInt[16]
    rdy: Bool


class Booth(Model):
    """Per cycle: a 16-step shift-and-add of the sign-extended operands (as the reference: one
    multiplier bit a cycle, the multiplicand shifted left), then rdy. The operands are captured
    while reset is held, so they are a static (configuration) interface; the testbench drives
    configuration before it asserts reset."""

    p: UInt[16]
    ctr: UInt[5]
    mcand: UInt[16]
    rdy: Bool

    def reset(self):
        self.p = 0
        self.ctr = 0
        self.mcand = 0
        self.rdy = False

    def process(self, a: SInt[8], b: SInt[8]) -> Out:
        p = self.p
        rdy = self.rdy
        if self.ctr == 0:
            self.mcand = wrap(b, 16)
        if self.ctr < 16:
            if bit(wrap(a, 16), self.ctr):
                self.p = wrap(self.p + self.mcand, 16)
            self.mcand = wrap(self.mcand << 1, 16)
            self.ctr += 1
        else:
            self.rdy = True
        return Out(p=p, rdy=rdy)
