# model: instr_reg (RTLLM v2), written from its design_description.txt
from rtlforge.behave.model.dsl import *


class Fields(Record):
    ins: UInt[3]
    ad1: UInt[5]
    ad2: UInt[8]


class InstrReg(Model):
    """Two instruction registers: fetch 1 loads the first (opcode in bits 7..5, register address
    in bits 4..0), fetch 2 loads the second (shown whole); fetch 0 or 3 keeps both. The outputs
    show the registers as they are before the clock edge."""

    ins_p1: UInt[8]
    ins_p2: UInt[8]

    def reset(self):
        self.ins_p1 = 0
        self.ins_p2 = 0

    def process(self, fetch: UInt[2], data: UInt[8]) -> Fields:
        p1 = self.ins_p1
        p2 = self.ins_p2
        if fetch == 1:
            self.ins_p1 = data
        elif fetch == 2:
            self.ins_p2 = data
        return Fields(ins=bits(p1, 7, 5), ad1=bits(p1, 4, 0), ad2=p2)
