# model: adder_32bit (RTLLM v2), written from its design_description.txt
from rtlforge.behave.model.dsl import *


class Out(Record):
    S: UInt[32]
    C32: Bool


class Adder32(Model):
    """S = the low 32 bits of A + B (no carry-in port); C32 = the carry out of bit 32. The
    carry-lookahead structure the description asks for is not behaviour."""

    def reset(self):
        pass

    def process(self, A: UInt[32], B: UInt[32]) -> Out:
        total = A + B
        return Out(S=wrap(total, 32), C32=bit(total, 32))
