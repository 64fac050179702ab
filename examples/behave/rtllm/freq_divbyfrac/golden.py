# model: freq_divbyfrac (RTLLM v2), written from its design_description.txt
#
# Division by 3.5 (MUL2_DIV_CLK = 7 source clocks per two output periods, of 4 and 3 clocks).
# Where the description is silent the reference decides: the rising-edge pulse is high after
# an edge that saw the counter at 0 or at 7 // 2 + 1 = 4; the falling-edge pulse is high when
# the counter (already stepped by the rising edge) reads 1 or 4. BEHAVE-Sim samples once a
# cycle, after the falling edge, so it sees the OR of both as they stand then (the half-cycle
# shape of clk_div is not observed).
from rtlforge.behave.model.dsl import *

MUL2_DIV_CLK = 7


class Divided(Record):
    clk_div: Bool


class FreqDivByFrac(Model):
    """Per input clock: clk_div (the OR of the two pulses), then a rising edge (counter 0..6 and
    its pulse) and a falling edge (the adjusting pulse)."""

    cnt: UInt[4]
    ave: Bool
    adjust: Bool

    def reset(self):
        self.cnt = 0
        self.ave = False
        self.adjust = False

    def process(self) -> Divided:
        shown = self.ave or self.adjust
        self.ave = self.cnt == 0 or self.cnt == MUL2_DIV_CLK // 2 + 1
        if self.cnt == MUL2_DIV_CLK - 1:
            self.cnt = 0
        else:
            self.cnt = self.cnt + 1
        self.adjust = self.cnt == 1 or self.cnt == MUL2_DIV_CLK // 2 + 1
        return Divided(clk_div=shown)
