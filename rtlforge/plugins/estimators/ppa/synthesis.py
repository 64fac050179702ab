"""Yosys's side of a PPA flow: what its logs and netlists say (area, cells, ABC's delay), the
netlist rewrites OpenSTA needs, and failures turned into messages a designer can act on."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

from rtlforge.core.models import ToolInfo
from rtlforge.plugins.estimators.ppa.errors import PPAError

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")  # spliced into yosys and Tcl: no '$', no '\'

_AREA = re.compile(r"Chip area for (?:top )?module '[^']*':\s*([0-9.eE+-]+)")
_STAT_CELLS = re.compile(r"Number of cells:\s+(\d+)((?:\n\s+\S+\s+\d+)*)")
_STIME = re.compile(r"Delay\s*=\s*([0-9.eE+-]+)\s*ps")
#: yosys' error line, with or without a ``file:line:`` prefix.
_YOSYS_ERROR = re.compile(r"^(?:\S+:\d[\d.-]*: )?ERROR:.*$", re.MULTILINE)
_SEQUENTIAL = re.compile(r"^\$_(?:S?DFF|DFFE|SDFFC?E|DFFSRE?|ALDFFE?|DLATCH|SR)")


@dataclass(frozen=True)
class _Synth:
    area_um2: float
    cells: int
    flops: int
    cell_counts: dict[str, int]
    netlist: Path  # where a one-shot sta reads it (written there only for that)
    netlist_text: str
    inputs: list[tuple[str, int]]
    stime_ps: float | None
    seconds: float
    tool: ToolInfo | None


def _stat_blocks(log: str) -> list[dict[str, int]]:
    blocks = []
    for match in _STAT_CELLS.finditer(log):
        counts: dict[str, int] = {}
        for line in match.group(2).strip().splitlines():
            name, num = line.split()
            counts[name] = int(num)
        blocks.append(counts)
    return blocks


_PORT = re.compile(r"^\s*input\s+(?:\[(\d+):(\d+)\]\s*)?([A-Za-z_][A-Za-z0-9_]*)\s*;", re.M)


def _netlist_inputs(netlist: str) -> list[tuple[str, int]]:
    return [(name, abs(int(hi) - int(lo)) + 1 if hi else 1)
            for hi, lo, name in _PORT.findall(netlist)]


_CONCAT_ASSIGN = re.compile(r"^(\s*)assign\s*\{([^{}]*)\}\s*=\s*\{([^{}]*)\}\s*;", re.M)
#: ``input signed [7:0] a;``: yosys 0.70 keeps a port's signedness in the netlist; OpenSTA 2019
#: does not parse it and then reports the port as undeclared.
_SIGNED_DECL = re.compile(r"^(\s*(?:input|output|inout|wire|reg))\s+signed\b", re.M)


def _split_concat_assigns(netlist: str) -> str:
    """``assign {a, b} = {c, d};`` as one assign per element, and declarations without
    ``signed`` (meaningless between gates), which OpenSTA 2019 can read."""
    netlist = _SIGNED_DECL.sub(r"\1", netlist)

    def split(match: re.Match[str]) -> str:
        lhs = [x.strip() for x in match.group(2).split(",")]
        rhs = [x.strip() for x in match.group(3).split(",")]
        if len(lhs) != len(rhs):
            return match.group(0)  # mixed widths: left for sta to reject with its own message
        pad = match.group(1)
        return "\n".join(f"{pad}assign {a} = {b};" for a, b in zip(lhs, rhs, strict=True))

    return _bit_blast_concats(_CONCAT_ASSIGN.sub(split, netlist))


_DECL = re.compile(r"^\s*(?:input|output|inout|wire|reg)\s+(?:\[(\d+):(\d+)\]\s*)?"
                   r"(\\\S+|[A-Za-z_][\w$]*)\s*;", re.M)
_ASSIGN = re.compile(r"^(\s*)assign\s+([^=;]*)=\s*([^;]*);", re.M)
_ELEMENT = re.compile(
    r"\s*(?:(\d+)'([bhdo])([0-9a-fA-FxXzZ_]+)"            # sized constant
    r"|(\\\S+|[A-Za-z_][\w$]*)\s*(?:\[(\d+)(?::(\d+))?\])?)\s*(?:,|$)")


def _element_bits(text: str, widths: dict[str, tuple[int, int] | None]) -> list[str] | None:
    """The bits (MSB first) of ``a``, ``a[3]``, ``a[3:0]``, ``4'hA`` or ``{...}`` of those;
    None for anything else (left as it is)."""
    text = text.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1]
    bits: list[str] = []
    pos = 0
    while pos < len(text):
        match = _ELEMENT.match(text, pos)
        if match is None or match.end() == pos:
            return None
        pos = match.end()
        size, base, digits, name, hi, lo = match.groups()
        if size is not None:
            width = int(size)
            digits = digits.replace("_", "").lower()
            if base == "d" or (any(c in "xz" for c in digits) and base != "b"):
                if any(c in "xz" for c in digits):
                    bits += ["1'bx"] * width
                    continue
                value = format(int(digits), "b")
            else:
                per = {"b": 1, "o": 3, "h": 4}[base]
                value = "".join(c * per if c in "xz" else format(int(c, 16), f"0{per}b")
                                for c in digits)
            value = value.rjust(width, "0")[-width:]
            bits += [f"1'b{c}" for c in value]
            continue
        sep = " " if name.startswith("\\") else ""
        if hi is None:
            rng = widths.get(name, "missing")
            if rng == "missing":
                return None
            if rng is None:
                bits.append(name)
                continue
            hi_i, lo_i = rng
        else:
            hi_i, lo_i = int(hi), int(lo) if lo is not None else int(hi)
        step = -1 if hi_i >= lo_i else 1
        bits += [f"{name}{sep}[{i}]" for i in range(hi_i, lo_i + step, step)]
    return bits


def _bit_blast_concats(netlist: str) -> str:
    """Any assign still holding a concatenation (mixed widths, constants, a bus on the left),
    as one assign per bit: OpenSTA 2019 reads none of those forms, and dropped such nets
    without a word (an output driven straight from inputs then had no timing path)."""
    if "{" not in netlist:
        return netlist
    widths: dict[str, tuple[int, int] | None] = {
        name: (int(hi), int(lo)) if hi else None for hi, lo, name in _DECL.findall(netlist)}

    def split(match: re.Match[str]) -> str:
        if "{" not in match.group(2) and "{" not in match.group(3):
            return match.group(0)
        lhs, rhs = _element_bits(match.group(2), widths), _element_bits(match.group(3), widths)
        if lhs is None or rhs is None or len(lhs) != len(rhs):
            return match.group(0)
        pad = match.group(1)
        return "\n".join(f"{pad}assign {a} = {b};" for a, b in zip(lhs, rhs, strict=True))

    return _ASSIGN.sub(split, netlist)


def _check_identifier(name: str, what: str) -> None:
    if not _IDENT.match(name):
        raise PPAError(f"{what} {name!r} is not a plain identifier", stage="setup")


def _finite_positive(**values: float) -> None:
    for key, value in values.items():
        if not (math.isfinite(value) and value > 0):
            raise PPAError(f"{key} came out as {value!r}: the design has nothing to measure "
                           "(no cells or no timed path)", stage="check")


_NO_DRIVER = re.compile(r"Warning: Wire \S+?\.\\?(\S+) is used but has no driver")


#: What a yosys error means for the design, where its own words do not say it.
_YOSYS_HINTS = (
    ("Multiple edge sensitive events", "an always block lists an edge (e.g. an asynchronous "
     "reset) that its body does not test as one, so it is no flip-flop yosys can build"),
    ("non-synthesizable event list", "an always block's event list mixes edges and levels "
     "(e.g. `@(posedge clk or rst)`), which only a simulator can run"),
)


def _synth_failure(top: str, errors: list[str], log: str, rc: object = None) -> PPAError:
    if errors:
        message = errors[0].strip()
    else:
        tail = " | ".join(log.strip().splitlines()[-3:])
        message = f"exit status {rc}: {tail}" if rc is not None else tail
    hint = next((why for key, why in _YOSYS_HINTS if key in message), None)
    return PPAError(f"yosys could not synthesise {top!r}: {message}"
                    + (f" ({hint})" if hint else ""), stage="synth", log=log)


def _no_cells(top: str, log: str) -> PPAError:
    undriven = sorted({n for n in _NO_DRIVER.findall(log) if not n.startswith("$")})
    why = f" (undriven: {', '.join(undriven)})" if undriven else ""
    return PPAError(f"{top!r} synthesises to no cells at all: every output is constant or "
                    f"undriven{why}; delays and initial blocks are simulation-only, so there is "
                    "no hardware to measure", stage="synth", log=log)


def _unmapped_reason(cells: list[str]) -> str:
    kinds = []
    if any(c.startswith("$_DLATCH") for c in cells):
        kinds.append("a latch (the library has no latch cell this yosys can map onto)")
    if any(c.startswith("$_ALDFF") for c in cells):
        kinds.append("an asynchronous-load flip-flop (reset or set to a signal rather than a "
                     "constant, e.g. `always @(posedge clk or posedge rst) if (rst) q <= d;`"
                     "): the library has no cell for it (standard-cell libraries rarely do)")
    what = "; ".join(kinds) if kinds else "generic cells"
    return f"cells with no match in the library: {cells}: {what}"
