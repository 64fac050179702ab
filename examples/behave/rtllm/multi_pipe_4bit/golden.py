# model: multi_pipe_4bit (RTLLM v2), written from its design_description.txt
from rtlforge.behave.model.dsl import *


class Out(Record):
    mul_out: UInt[8]


class MultiPipe4(Model):
    """Per cycle: mul_out shows the unsigned product of the operands of two cycles before.

    The first register level holds the partial-product sums of the last operands, the second
    is mul_out itself; reset clears both, so mul_out reads 0 for the two cycles after a reset.
    """

    stage1: UInt[8]
    stage2: UInt[8]

    def reset(self):
        self.stage1 = 0
        self.stage2 = 0

    def process(self, mul_a: UInt[4], mul_b: UInt[4]) -> Out:
        mul_out = self.stage2
        self.stage2 = self.stage1
        self.stage1 = mul_a * mul_b
        return Out(mul_out=mul_out)
