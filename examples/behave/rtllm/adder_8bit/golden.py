# model: adder_8bit (RTLLM v2), written from its design_description.txt
from rtlforge.behave.model.dsl import *


class Out(Record):
    sum: UInt[8]
    cout: Bool


class Adder8(Model):
    """sum = the low 8 bits of a + b + cin; cout = its ninth bit."""

    def reset(self):
        pass

    def process(self, a: UInt[8], b: UInt[8], cin: Bool) -> Out:
        total = a + b + (1 if cin else 0)
        return Out(sum=wrap(total, 8), cout=bit(total, 8))
