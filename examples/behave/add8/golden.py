# model: add8 (the golden behaviour model B*: behaviour DSL, checked and interpreted, never run)
from rtlforge.behave.model.dsl import *


class AddOut(Record):
    sum: UInt[9]


class Add8(Model):
    """Combinational: one addition per transaction, the carry kept in bit 8."""

    def reset(self):
        pass

    def process(self, a: UInt[8], b: UInt[8]) -> AddOut:
        return AddOut(sum=a + b)
