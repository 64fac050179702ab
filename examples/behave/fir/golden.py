# model: fir (the golden behaviour model B*: behaviour DSL, checked and interpreted)
from rtlforge.behave.model.dsl import *

# h[0] .. h[7]: y[n] = sum over k of h[k] * x[n - k]
H0 = 7
H1 = -19
H2 = 42
H3 = 127
H4 = -128
H5 = 55
H6 = -6
H7 = 1


class FirOut(Record):
    y: SInt[17]


class Fir8(Model):
    """An 8-tap FIR, one output per input sample, full precision (every sum fits 17 bits).
    Samples before the first one after reset count as 0."""

    past: Array[SInt[8], 7]  # past[k] is x[n - 1 - k]

    def reset(self):
        self.past = fill(0)

    def process(self, x: SInt[8]) -> FirOut:
        p: Array[SInt[8], 7] = self.past
        y = (H0 * x + H1 * p[0] + H2 * p[1] + H3 * p[2] + H4 * p[3] + H5 * p[4] + H6 * p[5]
             + H7 * p[6])
        for k in range(6, 0, -1):
            self.past[k] = self.past[k - 1]
        self.past[0] = x
        return FirOut(y=y)
