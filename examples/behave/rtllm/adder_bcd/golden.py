# model: adder_bcd (RTLLM v2), written from its design_description.txt
from rtlforge.behave.model.dsl import *


class Out(Record):
    Sum: UInt[4]
    Cout: Bool


class AdderBcd(Model):
    """One BCD digit adder: the binary sum A + B + Cin; above 9 it carries out and the digit
    is corrected by adding 6 (kept to 4 bits).

    The description only speaks of digits 0-9; the stimulus also drives 10-15 (the task has
    no way to restrict an input's range), and there the same rule applies as in the
    reference: any binary sum above 9 carries and gets the +6 correction.
    """

    def reset(self):
        pass

    def process(self, A: UInt[4], B: UInt[4], Cin: Bool) -> Out:
        total = A + B + (1 if Cin else 0)
        if total > 9:
            return Out(Sum=wrap(total + 6, 4), Cout=True)
        return Out(Sum=wrap(total, 4), Cout=False)
