# model: matvec (the golden behaviour model B*: behaviour DSL, checked and interpreted)
from rtlforge.behave.model.dsl import *

N = 4


class Product(Record):
    y: Array[SInt[18], N]


class MatVec(Model):
    """y = M x for the configured matrix `m` (row-major) and one vector per transaction; each
    row's dot product is exact ([-65024, 65536] fits SInt[18])."""

    def reset(self):
        pass

    def process(self, m: Array[SInt[8], N * N], x: Array[SInt[8], N]) -> Product:
        y: Array[SInt[18], N] = fill(0)
        for i in range(N):
            y[i] = (m[N * i] * x[0] + m[N * i + 1] * x[1] + m[N * i + 2] * x[2]
                    + m[N * i + 3] * x[3])
        return Product(y=y)
