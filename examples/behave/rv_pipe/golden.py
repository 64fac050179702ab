# model: rv_pipe (the golden behaviour model B*: behaviour DSL, checked and interpreted)
from rtlforge.behave.model.dsl import *


class Result(Record):
    y: SInt[17]


class RvPipe(Model):
    """One exact multiply-add per operand set. How many stages the RTL uses, and how it stalls,
    is left to the latency bounds and the ready/valid rules."""

    def reset(self):
        pass

    def process(self, a: SInt[8], b: SInt[8], c: SInt[16]) -> Result:
        return Result(y=a * b + c)  # [-49024, 49151] fits SInt[17]
