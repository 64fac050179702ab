# model: freq_divbyodd (RTLLM v2), written from its design_description.txt
#
# NUM_DIV is a parameter; the task checks its default, 5. Where the description is silent the
# reference decides: each phase register is high while its counter (before the edge) is below
# NUM_DIV // 2, and reset sets both high. The falling-edge half is one input clock edge behind
# the rising-edge half; BEHAVE-Sim samples once a cycle, after the falling edge, so it sees the
# OR of both as they stand then (the half-cycle shape of clk_div is not observed).
from rtlforge.behave.model.dsl import *

NUM_DIV = 5


class Divided(Record):
    clk_div: Bool


class FreqDivByOdd(Model):
    """Per input clock: clk_div (the OR of the two phases), then a rising edge (cnt1, div1) and
    a falling edge (cnt2, div2); each counter runs 0 .. NUM_DIV - 1."""

    cnt1: UInt[3]
    div1: Bool
    cnt2: UInt[3]
    div2: Bool

    def reset(self):
        self.cnt1 = 0
        self.div1 = True
        self.cnt2 = 0
        self.div2 = True

    def process(self) -> Divided:
        shown = self.div1 or self.div2
        self.div1 = self.cnt1 < NUM_DIV // 2
        if self.cnt1 < NUM_DIV - 1:
            self.cnt1 = self.cnt1 + 1
        else:
            self.cnt1 = 0
        self.div2 = self.cnt2 < NUM_DIV // 2
        if self.cnt2 < NUM_DIV - 1:
            self.cnt2 = self.cnt2 + 1
        else:
            self.cnt2 = 0
        return Divided(clk_div=shown)
