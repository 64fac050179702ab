# model: pe (RTLLM v2), written from its design_description.txt
from rtlforge.behave.model.dsl import *


class Out(Record):
    c: UInt[32]


class Pe(Model):
    """Per cycle: c shows the accumulator register, which then adds a * b (kept to 32 bits,
    the register's width); reset clears it."""

    acc: UInt[32]

    def reset(self):
        self.acc = 0

    def process(self, a: UInt[32], b: UInt[32]) -> Out:
        c = self.acc
        self.acc = wrap(self.acc + a * b, 32)
        return Out(c=c)
