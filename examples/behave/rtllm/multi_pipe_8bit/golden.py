# model: multi_pipe_8bit (RTLLM v2), written from its design_description.txt
from rtlforge.behave.model.dsl import *


class Out(Record):
    mul_out: UInt[16]


class MultiPipe8(Model):
    """Each operand pair taken with mul_en_in comes out, in order, as the unsigned 16-bit
    product with mul_en_out high."""

    def reset(self):
        pass

    def process(self, mul_a: UInt[8], mul_b: UInt[8]) -> Out:
        return Out(mul_out=mul_a * mul_b)
