# model: udiv (the golden behaviour model B*: behaviour DSL, checked and interpreted)
from rtlforge.behave.model.dsl import *

ALL_ONES = 0xFFFF


class DivOut(Record):
    quotient: UInt[16]
    remainder: UInt[16]


class Udiv(Model):
    """One division per start. Division by zero gives an all-ones quotient and the dividend as
    remainder (what a restoring divider computes when every trial subtraction succeeds)."""

    def reset(self):
        pass

    def process(self, dividend: UInt[16], divisor: UInt[16]) -> DivOut:
        if divisor == 0:
            return DivOut(quotient=ALL_ONES, remainder=dividend)
        return DivOut(quotient=dividend // divisor, remainder=dividend % divisor)
