# model: LIFObuffer (RTLLM v2), written from its design_description.txt
from rtlforge.behave.model.dsl import *

DEPTH = 4


class Flags(Record):
    EMPTY: Bool
    FULL: Bool
    dataOut: UInt[4]


class LIFObuffer(Model):
    """A 4-entry stack of 4-bit words; everything happens on an enabled (EN) clock edge.

    SP counts down from 4 (empty) as words are pushed (RW low, not full) and back up as they
    are popped (RW high, not empty) into dataOut. The outputs are registers: `process` returns
    what is visible in the cycle, then commits the edge.

    Where the description is silent, the reference decides: reset (on an enabled edge) sets
    EMPTY and clears dataOut but leaves FULL unset, so FULL is unspecified (ANY) until the first
    enabled edge without reset; dataOut is unspecified (the reference drives X) after every
    enabled edge that pops nothing; FULL and EMPTY follow SP after every enabled edge."""

    mem: Array[UInt[4], DEPTH]
    sp: UInt[3]
    empty: Bool
    full: Bool
    full_known: Bool
    data: UInt[4]
    data_known: Bool

    def reset(self):
        self.mem = fill(0)
        self.sp = DEPTH
        self.empty = True
        self.full = False
        self.full_known = False
        self.data = 0
        self.data_known = True

    def process(self, dataIn: UInt[4], RW: Bool, EN: Bool) -> Flags:
        empty = self.empty
        full = self.full
        full_known = self.full_known
        data = self.data
        data_known = self.data_known
        if EN:
            if self.sp != 0 and not RW:
                self.sp = self.sp - 1
                self.mem[self.sp] = dataIn
                self.data_known = False
            elif self.sp != DEPTH and RW:
                self.data = self.mem[self.sp]
                self.mem[self.sp] = 0
                self.sp = self.sp + 1
                self.data_known = True
            else:
                self.data_known = False
            self.full = self.sp == 0
            self.full_known = True
            self.empty = self.sp == DEPTH
        if full_known and data_known:
            return Flags(EMPTY=empty, FULL=full, dataOut=data)
        if full_known:
            return Flags(EMPTY=empty, FULL=full, dataOut=ANY)
        if data_known:
            return Flags(EMPTY=empty, FULL=ANY, dataOut=data)
        return Flags(EMPTY=empty, FULL=ANY, dataOut=ANY)
