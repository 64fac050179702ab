# model: width_8to16 (RTLLM v2), written from its design_description.txt
from rtlforge.behave.model.dsl import *


class Wide(Record):
    valid_out: Bool
    data_out: UInt[16]


class Width8to16(Model):
    """Pairs consecutive valid bytes into one 16-bit word, the first byte in the high half.
    The clock edge taking the second byte of a pair loads data_out and raises valid_out for
    one cycle; data_out holds otherwise (a register cleared by reset). A reset drops a
    half-filled pair."""

    first: UInt[8]
    holding: Bool
    valid_out: Bool
    data_out: UInt[16]

    def reset(self):
        self.first = 0
        self.holding = False
        self.valid_out = False
        self.data_out = 0

    def process(self, valid_in: Bool, data_in: UInt[8]) -> Wide:
        valid_shown = self.valid_out
        data_shown = self.data_out
        self.valid_out = valid_in and self.holding
        if valid_in:
            if self.holding:
                self.data_out = self.first * 256 + data_in
            else:
                self.first = data_in
            self.holding = not self.holding
        return Wide(valid_out=valid_shown, data_out=data_shown)
