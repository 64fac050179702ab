"""A small, bounded VCD reader: the values of one scope's signals at one moment.

Feedback wants "at time 40 the inputs were a=1, b=0, out_ref=1 and out_dut=0", which testbenches
such as VerilogEval's never print but do dump. This reads a Value Change Dump as text (callers
cap how much they read) and stops at the moment asked for, so a long dump costs only its prefix.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

#: Femtoseconds per time unit, for converting a printed time and the dump's timescale.
UNIT_FS = {"s": 10**15, "ms": 10**12, "us": 10**9, "ns": 10**6, "ps": 10**3, "fs": 1}
_TIMESCALE = re.compile(r"^\s*(1|10|100)\s*(s|ms|us|ns|ps|fs)\s*$")
#: Variable kinds that hold a testbench's bookkeeping (counters, times), not circuit signals.
_BOOKKEEPING = {"integer", "int", "shortint", "longint", "real", "realtime", "shortreal",
                "time", "event", "parameter"}
#: Vectors up to this width are shown in binary, wider ones in hex (x/z always in binary).
BINARY_MAX_WIDTH = 8


def unit_fs(text: str) -> int | None:
    """``"1ps"``/``"10 ns"`` in femtoseconds, or None when it is not a timescale."""
    found = _TIMESCALE.match(text)
    return int(found[1]) * UNIT_FS[found[2]] if found else None


def format_value(bits: str, width: int) -> str:
    """A dumped value as a sized literal: ``1``, ``4'b1010``, ``16'h00ff``, ``4'bxxxx``."""
    bits = bits.lower()
    if width <= 1:
        return bits[-1:] or "x"
    if len(bits) < width:  # a VCD drops leading digits; x and z extend, 0/1 extend with 0
        bits = (bits[0] if bits[0] in "xz" else "0") * (width - len(bits)) + bits
    bits = bits[-width:]
    if width <= BINARY_MAX_WIDTH or set(bits) - {"0", "1"}:
        return f"{width}'b{bits}"
    digits = (width + 3) // 4
    return f"{width}'h{int(bits, 2):0{digits}x}"


@dataclass(frozen=True)
class Snapshot:
    """Signal name -> value just before ``time_fs`` (at it, when nothing came earlier)."""

    values: dict[str, str] = field(default_factory=dict)
    timescale_fs: int | None = None
    complete: bool = False  # the dump reached the moment asked for


def snapshot(text: str, time_fs: int, scope: str | None = None) -> Snapshot:
    """Values of the signals (not integers, reals or times) declared directly in top-level
    module ``scope`` (None: the first top-level scope) as they stood just before ``time_fs``.

    "Just before" because a testbench that checks on a clock edge compares the values from
    before that edge's updates, which the dump records at the same time stamp.
    """
    tokens = text.split()
    pos, n = 0, len(tokens)
    path: list[str] = []
    chosen: str | None = scope
    wanted: dict[str, tuple[str, int]] = {}  # id code -> (name, width)
    timescale: int | None = None
    while pos < n:
        tok = tokens[pos]
        if tok == "$enddefinitions":
            pos = _after_end(tokens, pos)
            break
        if tok == "$timescale":
            end = _after_end(tokens, pos)
            timescale = unit_fs("".join(tokens[pos + 1:end - 1]))
            pos = end
        elif tok == "$scope":
            name = tokens[pos + 2] if pos + 2 < n else ""
            path.append(name)
            if chosen is None and len(path) == 1:
                chosen = name
            pos = _after_end(tokens, pos)
        elif tok == "$upscope":
            if path:
                path.pop()
            pos = _after_end(tokens, pos)
        elif tok == "$var":
            end = _after_end(tokens, pos)
            if end - pos >= 6 and path == [chosen] and tokens[pos + 1] not in _BOOKKEEPING:
                width = int(tokens[pos + 2]) if tokens[pos + 2].isdigit() else 1
                name = tokens[pos + 4].split("[", 1)[0]
                wanted.setdefault(tokens[pos + 3], (name, width))
            pos = end
        elif tok.startswith("$"):
            pos = _after_end(tokens, pos)
        else:
            pos += 1
    if timescale is None or not wanted:
        return Snapshot(timescale_fs=timescale)
    target = -(-time_fs // timescale)  # the dump's time stamps are whole units
    values: dict[str, str] = {}
    earlier = False
    complete = False
    while pos < n:
        tok = tokens[pos]
        pos += 1
        if tok.startswith("#"):
            stamp = int(tok[1:]) if tok[1:].isdigit() else 0
            if stamp > target or (stamp == target and earlier):
                complete = True
                break
            earlier = earlier or stamp < target
        elif tok[0] in "bBrR":
            if pos < n:
                code = tokens[pos]
                pos += 1
                if code in wanted:
                    name, width = wanted[code]
                    values[name] = (format_value(tok[1:], width) if tok[0] in "bB" else tok[1:])
        elif tok[0] in "01xzXZ" and tok[1:] in wanted:
            name, width = wanted[tok[1:]]
            values[name] = format_value(tok[0], width)
    return Snapshot(values=values, timescale_fs=timescale, complete=complete)


def _after_end(tokens: list[str], pos: int) -> int:
    """Index after the ``$end`` closing the keyword at ``pos`` (or the end of the tokens)."""
    for i in range(pos + 1, len(tokens)):
        if tokens[i] == "$end":
            return i + 1
    return len(tokens)
