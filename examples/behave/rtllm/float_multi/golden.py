# model: float_multi (RTLLM v2), written from its design_description.txt
from rtlforge.behave.model.dsl import *

NAN = 0xFFC00000


class Out(Record):
    z: UInt[32]


class FloatMulti(Model):
    """IEEE-754 single-precision product z = a * b, computed in a free-running frame of eight
    cycles sequenced by a 3-bit counter that reset clears.

    Timing (the description names the counter and says the operands are taken in the first
    cycle; the rest is the reference's): releasing reset counts the counter to 1 and takes a
    and b from the pins, so the first cycle's operands are used; after that a and b are taken at
    each clock edge that counts the counter from 0 to 1 (the operands of cycles 7, 15, 23, ...
    after reset). Special operands (NaN, infinity, zero) put their IEEE result on z at the edge
    that counts to 2; every operation's result is on z from the edge that counts to 7 until the
    next result. z has no reset: unspecified (ANY) until the first result of this reset.

    Arithmetic: the description asks for the IEEE-754 product (round to nearest, ties to even;
    subnormals, overflow to infinity); it does not say which NaN, and the reference gives
    0xFFC00000 for every NaN result. The reference is not correctly rounded everywhere: it
    truncates when the mantissa product is below 2, normalises a subnormal operand by one place
    only, and at the final edge replaces a special result with a value computed from the raw
    fields. The reference must pass, so where its final value differs from the IEEE product z
    is unspecified (ANY) for that result; the model computes the reference's steps (register
    widths as the description lists them) only to know where that is."""

    counter: UInt[3]
    released: Bool
    z: UInt[32]
    z_known: Bool
    special: Bool
    special_z: UInt[32]
    final_z: UInt[32]
    final_known: Bool

    def reset(self):
        self.counter = 0
        self.released = False
        self.z = 0
        self.z_known = False
        self.special = False
        self.special_z = 0
        self.final_z = 0
        self.final_known = False

    def process(self, a: UInt[32], b: UInt[32]) -> Out:
        # operands are taken when reset is released (the counter counts to 1 then) and at
        # the clock edge ending this cycle if it counts the counter from 0 to 1
        take = self.counter == 0
        if not self.released:
            self.released = True
            self.counter = 1
            take = True
        z = self.z
        z_known = self.z_known
        if take:
            # --- the IEEE-754 product ---
            sign = bit(a, 31) != bit(b, 31)
            sbit = 1 if sign else 0
            ea = bits(a, 30, 23)
            eb = bits(b, 30, 23)
            fa = bits(a, 22, 0)
            fb = bits(b, 22, 0)
            a_nan = ea == 255 and fa != 0
            b_nan = eb == 255 and fb != 0
            a_inf = ea == 255 and fa == 0
            b_inf = eb == 255 and fb == 0
            a_zero = ea == 0 and fa == 0
            b_zero = eb == 0 and fb == 0
            ieee: UInt[32] = 0
            special = True
            if a_nan or b_nan:
                ieee = NAN
            elif a_inf:
                ieee = NAN if b_zero else (sbit << 31) | 0x7F800000
            elif b_inf:
                ieee = NAN if a_zero else (sbit << 31) | 0x7F800000
            elif a_zero or b_zero:
                ieee = sbit << 31
            else:
                special = False
                ma = fa | 0x800000 if ea != 0 else fa
                mb = fb | 0x800000 if eb != 0 else fb
                xa = ea if ea != 0 else 1
                xb = eb if eb != 0 else 1
                prod = ma * mb
                # value = prod * 2^(xa + xb - 300); msb = its leading one
                msb = 0
                for i in range(48):
                    if bit(prod, i):
                        msb = i
                base = xa + xb - 300
                # weight of the result's last bit: 23 below the leading one, at least 2^-149
                q = max(msb + base - 23, -149)
                shift = q - base
                m = 0
                if shift <= 0:
                    m = prod << (0 - shift)
                else:
                    m = prod >> shift
                    half = ((prod >> (shift - 1)) & 1) == 1
                    rest = prod & ((1 << (shift - 1)) - 1)
                    if half and (rest != 0 or bit(m, 0)):
                        m = m + 1
                if m == 0x1000000:
                    m = 0x800000
                    q = q + 1
                if m < 0x800000:
                    ieee = (sbit << 31) | m
                elif q + 150 >= 255:
                    ieee = (sbit << 31) | 0x7F800000
                else:
                    ieee = (sbit << 31) | ((q + 150) << 23) | (m - 0x800000)
            # --- the reference's steps, one per counter value ---
            # 1: fields; exponents as 10-bit registers (never wrap here: kept signed)
            am = fa
            bm = fb
            ae = ea - 127
            be = eb - 127
            sz = NAN
            if (ae == 128 and am != 0) or (be == 128 and bm != 0):
                sz = NAN
            elif ae == 128:
                sz = NAN if (be == -127 and bm == 0) else (sbit << 31) | 0x7F800000
            elif be == 128:
                sz = NAN if (ae == -127 and am == 0) else (sbit << 31) | 0x7F800000
            elif (ae == -127 and am == 0) or (be == -127 and bm == 0):
                sz = sbit << 31
            else:
                # 2: hidden bit, or the subnormal exponent
                if ae == -127:
                    ae = -126
                else:
                    am = am | 0x800000
                if be == -127:
                    be = -126
                else:
                    bm = bm | 0x800000
            # 3: one normalising shift
            if not bit(am, 23):
                am = wrap(am << 1, 24)
                ae = ae - 1
            if not bit(bm, 23):
                bm = wrap(bm << 1, 24)
                be = be - 1
            # 4, 5: product, its top 24 bits, guard, round, sticky
            ze = ae + be + 1
            p = am * bm * 4
            zm = bits(p, 49, 26)
            g = bit(p, 25)
            r = bit(p, 24)
            st = bits(p, 23, 0) != 0
            # 6: one adjustment
            if ze < -126:
                zm = zm >> (-126 - ze)
                ze = -126
            elif not bit(zm, 23):
                ze = ze - 1
                zm = wrap(zm << 1, 24) | (1 if g else 0)
            elif g and (r or st or bit(zm, 0)):
                if zm == 0xFFFFFF:
                    ze = ze + 1
                zm = wrap(zm + 1, 24)
            # 7: packing
            final: UInt[32] = 0
            if ze > 127:
                final = (sbit << 31) | 0x7F800000
            elif ze == -126 and not bit(zm, 23):
                final = (sbit << 31) | bits(zm, 22, 0)
            else:
                final = (sbit << 31) | (wrap(ze + 127, 8) << 23) | bits(zm, 22, 0)
            self.special = special
            self.special_z = sz
            self.final_z = final
            self.final_known = final == ieee
        # the clock edge ending this cycle
        self.counter = wrap(self.counter + 1, 3)
        if self.counter == 2 and self.special:
            self.z = self.special_z
            self.z_known = True
        if self.counter == 7:
            self.z = self.final_z
            self.z_known = self.final_known
        if z_known:
            return Out(z=z)
        return Out(z=ANY)
