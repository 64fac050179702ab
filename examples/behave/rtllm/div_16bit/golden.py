# model: div_16bit (RTLLM v2), written from its design_description.txt
from rtlforge.behave.model.dsl import *


class Out(Record):
    result: UInt[16]
    odd: UInt[16]


class Div16(Model):
    """Unsigned restoring division, one quotient bit per dividend bit from the top: result is
    the quotient A // B, odd the remainder A % B.

    The description does not say what dividing by zero gives. Its long-division step ("if the
    partial remainder is not below the divisor, quotient bit 1 and subtract") then takes every
    step, so every quotient bit is 1 and nothing is ever subtracted: result = 0xFFFF and
    odd = A, which is also what the reference computes.
    """

    def reset(self):
        pass

    def process(self, A: UInt[16], B: UInt[8]) -> Out:
        if B == 0:
            return Out(result=0xFFFF, odd=A)
        return Out(result=A // B, odd=A % B)
