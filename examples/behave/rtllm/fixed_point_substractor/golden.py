# model: fixed_point_substractor (RTLLM v2), written from its design_description.txt
from rtlforge.behave.model.dsl import *

N = 32
MAG = N - 1  # bit N-1 is the sign, bits N-2..0 the magnitude (Q of them fractional)


class Out(Record):
    c: UInt[N]


class FixedPointSubtractor(Model):
    """Sign-magnitude fixed-point a - b, bit for bit as the description states it (the fraction
    width Q does not change the bits); magnitudes are kept to N-1 bits.

    Same signs: the magnitudes are subtracted (modulo 2^(N-1): the description does not swap
    them when b's is larger) and the sign stays. a positive, b negative: the magnitudes add,
    sign + if |a| > |b|, else - unless the sum is zero. a negative, b positive ("the same
    logic"): the magnitudes add, sign - if |a| > |b| unless the sum is zero, else +.
    The description's "a zero result gets sign 0" is applied where the reference applies it
    (the two different-sign cases that test it); in the same-sign case the reference keeps the
    operands' sign even for a zero difference (-x - -x gives -0), and it must pass, so the
    model keeps that sign too.
    """

    def reset(self):
        pass

    def process(self, a: UInt[N], b: UInt[N]) -> Out:
        a_neg = bit(a, MAG)
        b_neg = bit(b, MAG)
        a_mag = bits(a, MAG - 1, 0)
        b_mag = bits(b, MAG - 1, 0)
        if a_neg == b_neg:
            return Out(c=wrap(a_mag - b_mag, MAG) | ((1 if a_neg else 0) << MAG))
        total = wrap(a_mag + b_mag, MAG)
        larger = a_mag > b_mag
        negative = total != 0 and (larger if a_neg else not larger)
        return Out(c=total | ((1 if negative else 0) << MAG))
