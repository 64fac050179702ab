# model: adder_16bit (RTLLM v2), written from its design_description.txt
from rtlforge.behave.model.dsl import *


class Out(Record):
    y: UInt[16]
    Co: Bool


class Adder16(Model):
    """y = the low 16 bits of a + b + Cin; Co = its seventeenth bit (the 8-bit sub-adders the
    description asks for are structure, not behaviour)."""

    def reset(self):
        pass

    def process(self, a: UInt[16], b: UInt[16], Cin: Bool) -> Out:
        total = a + b + (1 if Cin else 0)
        return Out(y=wrap(total, 16), Co=bit(total, 16))
