# model: mxfp4_quant (the golden behaviour model B*: behaviour DSL, checked and interpreted)
from rtlforge.behave.model.dsl import *

N = 32
SCALE_NAN = 255


class MxBlock(Record):
    scale: UInt[8]
    codes: Array[UInt[4], N]


class Mxfp4Quant(Model):
    """One OCP MXFP4 block per transaction: 32 BF16 words in, an E8M0 scale and 32 E2M1 codes
    out. Everything is integer arithmetic on the bit fields (spec.md, "Rules").

    An element's value is sig * 2^(ef - 134) (sig the 8-bit significand, ef the exponent field,
    1 for subnormals); scaled by 2^-(scale - 127) and counted in halves (E2M1's smallest step) it
    is sig * 2^-r with r = scale + 6 - ef, never below 4."""

    def reset(self):
        pass

    def process(self, x: Array[UInt[16], N]) -> MxBlock:
        special = False
        emax = 0
        for i in range(N):
            e = bits(x[i], 14, 7)
            if e == 255:
                special = True
            emax = max(emax, e)
        codes: Array[UInt[4], N] = fill(0)
        if special:
            return MxBlock(scale=SCALE_NAN, codes=codes)
        # floor(log2(amax)) - 2 + 127 for a normal amax; below code 0 it clamps to 0
        scale = max(emax - 2, 0)
        for i in range(N):
            e = bits(x[i], 14, 7)
            sig = bits(x[i], 6, 0) + (128 if e > 0 else 0)
            ef = max(e, 1)
            r = min(scale + 6 - ef, 12)  # from 9 on every significand rounds to 0
            whole = sig >> r  # the value in halves, truncated: 0..15
            step = 0 if whole < 4 else (1 if whole < 8 else 2)  # log2 of the E2M1 spacing
            t = r + step
            q = sig >> t
            rest = sig - (q << t)
            half = 1 << (t - 1)
            if rest > half or (rest == half and q % 2 == 1):
                q = q + 1
            mag = min(q << step, 12)  # in halves: 0, 1, 2, 3, 4, 6, 8 or 12 (6.0 saturates)
            code = mag if mag < 4 else (4 + (mag - 4) // 2 if mag < 8 else (6 if mag == 8 else 7))
            codes[i] = code + (8 if bit(x[i], 15) else 0)
        return MxBlock(scale=scale, codes=codes)
