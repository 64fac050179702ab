# model: sorter (the golden behaviour model B*: behaviour DSL, checked and interpreted)
from rtlforge.behave.model.dsl import *

N = 8


class Sorted(Record):
    out_data: Array[UInt[8], N]


class Sorter(Model):
    """Ascending sort of one block per transaction. A bubble sort states the result most
    plainly (the loops unroll at check time); any sorting network the RTL uses must agree."""

    def reset(self):
        pass

    def process(self, in_data: Array[UInt[8], N]) -> Sorted:
        v: Array[UInt[8], N] = in_data
        for i in range(N - 1):
            for j in range(N - 1 - i):
                if v[j] > v[j + 1]:
                    t = v[j]
                    v[j] = v[j + 1]
                    v[j + 1] = t
        return Sorted(out_data=v)
