# model: multi_8bit (RTLLM v2), written from its design_description.txt
from rtlforge.behave.model.dsl import *


class Out(Record):
    product: UInt[16]


class Multi8(Model):
    """product = A * B, unsigned (shift-and-add: A shifted left by i for every set bit i of B)."""

    def reset(self):
        pass

    def process(self, A: UInt[8], B: UInt[8]) -> Out:
        total = 0
        for i in range(8):
            if bit(B, i):
                total = total + (A << i)
        return Out(product=wrap(total, 16))
