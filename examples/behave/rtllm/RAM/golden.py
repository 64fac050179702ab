# model: RAM (RTLLM v2), written from its design_description.txt
#
# Eight 6-bit words (DEPTH = 8, WIDTH = 6; see behave.toml on the size). A read and a write in
# the same cycle both act at the clock edge, so a read of the address being written returns the
# old word (the reference's non-blocking assignments decide; the description is silent).
from rtlforge.behave.model.dsl import *


class ReadPort(Record):
    read_data: UInt[6]


class Ram(Model):
    """Per cycle: the registered read data, then the edge: read (or 0 without read_en), write."""

    mem: Array[UInt[6], 8]
    read_data: UInt[6]

    def reset(self):
        self.mem = fill(0)
        self.read_data = 0

    def process(self, write_en: Bool, write_addr: UInt[3], write_data: UInt[6], read_en: Bool,
                read_addr: UInt[3]) -> ReadPort:
        shown = self.read_data
        if read_en:
            self.read_data = self.mem[read_addr]
        else:
            self.read_data = 0
        if write_en:
            self.mem[write_addr] = write_data
        return ReadPort(read_data=shown)
