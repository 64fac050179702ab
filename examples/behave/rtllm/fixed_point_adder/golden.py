# model: fixed_point_adder (RTLLM v2), written from its design_description.txt
from rtlforge.behave.model.dsl import *

N = 32
MAG = N - 1  # bit N-1 is the sign, bits N-2..0 the magnitude (Q of them fractional)


class Out(Record):
    c: UInt[N]


class FixedPointAdder(Model):
    """Sign-magnitude fixed-point addition (the fraction width Q does not change the bits).

    Same signs: the magnitudes add (kept to N-1 bits: the description's "overflow handled by
    observing the MSB" leaves the carry out of the magnitude dropped, as in the reference) and
    the sign stays. Different signs: the smaller magnitude is taken from the larger; the sign
    is the larger operand's, and a zero difference (equal magnitudes, which the description's
    two cases leave out) is +0.
    """

    def reset(self):
        pass

    def process(self, a: UInt[N], b: UInt[N]) -> Out:
        a_neg = bit(a, MAG)
        b_neg = bit(b, MAG)
        a_mag = bits(a, MAG - 1, 0)
        b_mag = bits(b, MAG - 1, 0)
        if a_neg == b_neg:
            return Out(c=wrap(a_mag + b_mag, MAG) | ((1 if a_neg else 0) << MAG))
        if a_mag > b_mag:
            return Out(c=(a_mag - b_mag) | ((1 if a_neg else 0) << MAG))
        diff = b_mag - a_mag
        return Out(c=diff | ((1 if b_neg and diff != 0 else 0) << MAG))
