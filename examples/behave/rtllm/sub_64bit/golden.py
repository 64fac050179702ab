# model: sub_64bit (RTLLM v2), written from its design_description.txt
from rtlforge.behave.model.dsl import *


class Out(Record):
    result: SInt[64]
    overflow: Bool


class Sub64(Model):
    """Two's complement A - B kept to 64 bits; overflow when the true difference does not fit
    (a non-negative A minus a negative B giving a negative result, or the reverse)."""

    def reset(self):
        pass

    def process(self, A: SInt[64], B: SInt[64]) -> Out:
        diff = A - B
        return Out(result=swrap(diff, 64),
                   overflow=diff > 0x7FFFFFFFFFFFFFFF or diff < -0x8000000000000000)
