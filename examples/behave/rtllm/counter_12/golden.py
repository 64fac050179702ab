# model: counter_12 (RTLLM v2), written from its design_description.txt
from rtlforge.behave.model.dsl import *


class Count(Record):
    out: UInt[4]


class Counter12(Model):
    """A registered count 0..11: each clock with valid_count high steps it (11 wraps to 0);
    with valid_count low it holds. `out` shows the register, so a step shows one clock later."""

    count: UInt[4]

    def reset(self):
        self.count = 0

    def process(self, valid_count: Bool) -> Count:
        shown = self.count
        if valid_count:
            self.count = 0 if self.count == 11 else self.count + 1
        return Count(out=shown)
