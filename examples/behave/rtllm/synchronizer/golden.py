# model: synchronizer (RTLLM v2), written from its design_description.txt
#
# Behaviour, not structure: the value data_in carries while data_en is high is what dataout
# shows from then on, until the next enabled value; reset shows 0. The synchroniser's delay
# (the enable crossing two flops into clk_b, then the output register) is the task's delay
# window on `out`, not part of this model.
from rtlforge.behave.model.dsl import *


class Out(Record):
    dataout: UInt[4]


class Synchronizer(Model):
    """Per clk_b cycle: dataout shows the last value taken; a cycle with data_en high takes
    data_in (the inputs hold it steady while enabled, so when it is taken does not matter)."""

    taken: UInt[4]

    def reset(self):
        self.taken = 0

    def process(self, data_in: UInt[4], data_en: Bool) -> Out:
        shown = self.taken
        if data_en:
            self.taken = data_in
        return Out(dataout=shown)
