# model: freq_divbyeven (RTLLM v2), written from its design_description.txt
#
# NUM_DIV is a parameter; the task checks its default, 6 (the reference's, which the
# description does not state): clk_div toggles every NUM_DIV / 2 = 3 input clocks.
from rtlforge.behave.model.dsl import *

NUM_DIV = 6


class Divided(Record):
    clk_div: Bool


class FreqDivByEven(Model):
    """Per input clock: clk_div as it is, then one edge: count up to NUM_DIV / 2 - 1, then
    restart at 0 and toggle. Reset: counter 0, clk_div low."""

    cnt: UInt[4]
    clk_div: Bool

    def reset(self):
        self.cnt = 0
        self.clk_div = False

    def process(self) -> Divided:
        shown = self.clk_div
        if self.cnt < NUM_DIV // 2 - 1:
            self.cnt = self.cnt + 1
        else:
            self.cnt = 0
            self.clk_div = not self.clk_div
        return Divided(clk_div=shown)
