# model: crc (the golden behaviour model B*: behaviour DSL, checked and interpreted)
from rtlforge.behave.model.dsl import *

INIT = 0xFFFFFFFF
POLY_REFLECTED = 0xEDB88320  # 0x04C11DB7 with its 32 bits reversed (refin = refout = true)
XOROUT = 0xFFFFFFFF


class CrcOut(Record):
    out_crc: UInt[32]


class Crc32(Model):
    """CRC-32/ISO-HDLC over each packet: one byte per transaction, the CRC emitted with the
    packet's last byte (a bare return for the others)."""

    crc: UInt[32]

    def reset(self):
        self.crc = INIT

    def process(self, in_data: UInt[8], in_last: Bool) -> CrcOut:
        c: UInt[32] = self.crc ^ in_data  # reflected: the byte enters at the low end, LSB first
        for _ in range(8):
            c = ((c >> 1) ^ POLY_REFLECTED) if c % 2 == 1 else c >> 1
        if in_last:
            self.crc = INIT
            return CrcOut(out_crc=c ^ XOROUT)
        self.crc = c
        return
