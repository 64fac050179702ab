# model: sync_fifo (the golden behaviour model B*: behaviour DSL, checked and interpreted)
from rtlforge.behave.model.dsl import *


class Word(Record):
    out_data: UInt[8]


class SyncFifo(Model):
    """A FIFO is an in-order pass-through at the transaction level: every word written comes
    out once, unchanged, in the order written. Capacity and latency are the RTL's freedom (the
    task's latency bounds and the in-order matching); the model needs no state."""

    def reset(self):
        pass

    def process(self, in_data: UInt[8]) -> Word:
        return Word(out_data=in_data)
