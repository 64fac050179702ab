# model: multi_16bit (RTLLM v2), written from its design_description.txt
from rtlforge.behave.model.dsl import *


class Out(Record):
    yout: UInt[32]
    done: Bool


class Multi16(Model):
    """Per cycle, as the description defines it: a shift count i (0..17) runs while start is
    high and returns to 0 when it is low; at i = 0 the operands are stored, at i = 1..16 the
    product register adds breg << (i - 1) when bit i - 1 of areg is set; done is high for the
    one cycle after i reached 16. The product register is cleared only by reset (the
    description names no other clear)."""

    i: UInt[5]
    areg: UInt[16]
    breg: UInt[16]
    yout: UInt[32]
    done: Bool

    def reset(self):
        self.i = 0
        self.areg = 0
        self.breg = 0
        self.yout = 0
        self.done = False

    def process(self, start: Bool, ain: UInt[16], bin: UInt[16]) -> Out:
        yout = self.yout
        done = self.done
        if self.i == 16:
            self.done = True
        elif self.i == 17:
            self.done = False
        if start:
            if self.i == 0:
                self.areg = ain
                self.breg = bin
            elif self.i < 17 and (self.areg >> (self.i - 1)) & 1 == 1:
                self.yout = wrap(self.yout + (self.breg << (self.i - 1)), 32)
            if self.i < 17:
                self.i += 1
        else:
            self.i = 0
        return Out(yout=yout, done=done)
