# model: comparator_4bit (RTLLM v2), written from its design_description.txt
from rtlforge.behave.model.dsl import *


class Out(Record):
    A_greater: Bool
    A_equal: Bool
    A_less: Bool


class Comparator4(Model):
    """Unsigned comparison of two 4-bit numbers: exactly one of the three flags is high."""

    def reset(self):
        pass

    def process(self, A: UInt[4], B: UInt[4]) -> Out:
        return Out(A_greater=A > B, A_equal=A == B, A_less=A < B)
