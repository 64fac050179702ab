# model: rv_accum (the golden behaviour model B*: behaviour DSL, checked and interpreted)
from rtlforge.behave.model.dsl import *


class Sum(Record):
    out_sum: UInt[10]


class RvAccum(Model):
    """One sum per four inputs: the first three transactions emit nothing (a bare return)."""

    total: UInt[10]
    seen: UInt[2]

    def reset(self):
        self.total = 0
        self.seen = 0

    def process(self, in_data: UInt[8]) -> Sum:
        if self.seen == 3:
            out = self.total + in_data  # at most 4 * 255: fits the 10-bit output
            self.total = 0
            self.seen = 0
            return Sum(out_sum=out)
        self.total = self.total + in_data
        self.seen = wrap(self.seen + 1, 2)
        return
