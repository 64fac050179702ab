# model: alu (RTLLM v2), written from its design_description.txt
from rtlforge.behave.model.dsl import *

ADD = 0b100000
ADDU = 0b100001
SUB = 0b100010
SUBU = 0b100011
AND = 0b100100
OR = 0b100101
XOR = 0b100110
NOR = 0b100111
SLT = 0b101010
SLTU = 0b101011
SLL = 0b000000
SRL = 0b000010
SRA = 0b000011
SLLV = 0b000100
SRLV = 0b000110
SRAV = 0b000111
LUI = 0b001111


class AluOut(Record):
    r: UInt[32]
    zero: Bool
    carry: Bool
    negative: Bool
    overflow: Bool
    flag: Bool


class Alu(Model):
    """A 32-bit MIPS ALU: r is the low 32 bits of a 33-bit result `res` (the description's
    register); operands are read signed for ADD, SUB, SLT and SRA/SRAV.

    Shifts move b: SLL, SRL and SRA by the whole value of a, SLLV, SRLV and SRAV by a[4:0]
    (as the description says). Where the description is ambiguous the reference decides:
    LUI gives {a[15:0], 16'h0} (RTLLM's testbench expects 0x001c0000 for a = 0x1c), flag is
    the comparison of SLT/SLTU (not a constant 1), and res is computed at 33 bits (so
    ADD/ADDU keep a carry in bit 32, NOR sets bit 32, SLL/SLLV keep the bit shifted past 31).

    Unspecified (ANY): for the 47 opcodes not listed every output (the description makes r and
    flag high-impedance there; zero follows an undriven result); flag outside SLT/SLTU (the
    description says 'z'); zero when r is zero but the 33-bit res is not (the description's
    "the result is zero" reads as r, the reference compares res: both readings are allowed).
    carry, negative and overflow are specified by the description but the reference never
    drives them (they stay 'z'), and the reference must pass: they are left unchecked (ANY)."""

    def reset(self):
        pass

    def process(self, a: UInt[32], b: UInt[32], aluc: UInt[6]) -> AluOut:
        sa = sext(a, 32)
        sb = sext(b, 32)
        res: UInt[33] = 0
        compare = False
        listed = True
        if aluc == ADD:
            res = wrap(sa + sb, 33)
        elif aluc == ADDU:
            res = a + b
        elif aluc == SUB:
            res = wrap(sa - sb, 33)
        elif aluc == SUBU:
            res = wrap(a - b, 33)
        elif aluc == AND:
            res = a & b
        elif aluc == OR:
            res = a | b
        elif aluc == XOR:
            res = a ^ b
        elif aluc == NOR:
            res = wrap(~(a | b), 33)
        elif aluc == SLT:
            compare = True
            res = 1 if sa < sb else 0
        elif aluc == SLTU:
            compare = True
            res = 1 if a < b else 0
        elif aluc == SLL:
            if a < 33:
                res = wrap(b << bits(a, 5, 0), 33)
        elif aluc == SRL:
            if a < 32:
                res = b >> bits(a, 4, 0)
        elif aluc == SRA:
            if a < 32:
                res = wrap(sb >> bits(a, 4, 0), 33)
            elif sb < 0:
                res = wrap(-1, 33)
        elif aluc == SLLV:
            res = wrap(b << bits(a, 4, 0), 33)
        elif aluc == SRLV:
            res = b >> bits(a, 4, 0)
        elif aluc == SRAV:
            res = wrap(sb >> bits(a, 4, 0), 33)
        elif aluc == LUI:
            res = bits(a, 15, 0) << 16
        else:
            listed = False
        if not listed:
            return AluOut(r=ANY, zero=ANY, carry=ANY, negative=ANY, overflow=ANY, flag=ANY)
        r = wrap(res, 32)
        if r == 0 and res != 0:  # never for SLT/SLTU (res is 0 or 1)
            return AluOut(r=r, zero=ANY, carry=ANY, negative=ANY, overflow=ANY, flag=ANY)
        if compare:
            return AluOut(r=r, zero=r == 0, carry=ANY, negative=ANY, overflow=ANY,
                          flag=res == 1)
        return AluOut(r=r, zero=r == 0, carry=ANY, negative=ANY, overflow=ANY, flag=ANY)
