# model: barrel_shifter (RTLLM v2), written from its design_description.txt
from rtlforge.behave.model.dsl import *


class Out(Record):
    out: UInt[8]


class BarrelShifter(Model):
    """out = in (named `data` here: `in` is a Python keyword) shifted right by ctrl (stages of
    4, 2 and 1 positions).

    The description's function line says "rotating", its implementation section says
    "shifted"; the reference (which must pass) shifts right and fills with zeros, so the model
    does too.
    """

    def reset(self):
        pass

    def process(self, data: UInt[8], ctrl: UInt[3]) -> Out:
        return Out(out=data >> ctrl)
