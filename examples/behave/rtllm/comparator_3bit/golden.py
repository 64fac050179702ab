# model: comparator_3bit (RTLLM v2), written from its design_description.txt
from rtlforge.behave.model.dsl import *


class Out(Record):
    A_greater: Bool
    A_equal: Bool
    A_less: Bool


class Comparator3(Model):
    """Unsigned comparison of two 3-bit numbers: exactly one of the three flags is high."""

    def reset(self):
        pass

    def process(self, A: UInt[3], B: UInt[3]) -> Out:
        return Out(A_greater=A > B, A_equal=A == B, A_less=A < B)
