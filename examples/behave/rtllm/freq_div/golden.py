# model: freq_div (RTLLM v2), written from its design_description.txt
from rtlforge.behave.model.dsl import *


class Clocks(Record):
    CLK_50: Bool
    CLK_10: Bool
    CLK_1: Bool


class FreqDiv(Model):
    """Per input clock: the three divided clocks as they are, then one edge. CLK_50 toggles every
    edge (/2); CLK_10 toggles when its counter reads 4 (/10) and CLK_1 when its counter reads 49
    (/100), each counter then restarting at 0. Reset: all low, counters 0."""

    clk_50: Bool
    clk_10: Bool
    clk_1: Bool
    cnt_10: UInt[4]
    cnt_100: UInt[7]

    def reset(self):
        self.clk_50 = False
        self.clk_10 = False
        self.clk_1 = False
        self.cnt_10 = 0
        self.cnt_100 = 0

    def process(self) -> Clocks:
        c50 = self.clk_50
        c10 = self.clk_10
        c1 = self.clk_1
        self.clk_50 = not c50
        if self.cnt_10 == 4:
            self.clk_10 = not c10
            self.cnt_10 = 0
        else:
            self.cnt_10 = self.cnt_10 + 1
        if self.cnt_100 == 49:
            self.clk_1 = not c1
            self.cnt_100 = 0
        else:
            self.cnt_100 = self.cnt_100 + 1
        return Clocks(CLK_50=c50, CLK_10=c10, CLK_1=c1)
