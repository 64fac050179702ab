"""Clocked tables: flip-flop characteristic tables and cellular-automaton rule tables.

Both are a truth table plus one piece of sequential meaning that the prose must state in plain
words before anything is emitted:

- a flip-flop table (``J | K | Q`` with ``Qold`` / ``~Qold`` cells) is the next state of one
  output register as a function of the inputs and its own old value, updated on the positive
  clock edge;
- a neighbourhood rule table (``Left | Center | Right | next state``) is the next state of every
  cell of a vector register, with a synchronous load and zero boundaries.

Anything else about clocking (negative edges, resets, enables not in the table, wrap-around
boundaries) declines: the solver only emits what the table and the prose pin down.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass

from rtlforge.plugins.generators.symbolic.logic_min import (
    Decline,
    Expression,
    Function,
    Interface,
    PortDecl,
    _clean_lines,
    matches,
    minimise,
    resolve_names,
)

_CLOCK_NAMES = {"clk", "clock"}
_POSITIVE_EDGE = re.compile(r"\b(?:positive(?:\s+clock)?\s+edge|rising\s+edge|posedge)\b", re.I)
_OTHER_EDGE = re.compile(
    r"\b(?:negative(?:\s+clock)?\s+edge|falling\s+edge|negedge|both\s+edges|dual[- ]edge|"
    r"latch(?:es)?|asynchronous(?:ly)?|active[- ]low)\b", re.I)
_RESET = re.compile(r"\b(?:reset|areset|clear|preset)\b", re.I)
_CELL_IDENT = re.compile(r"[A-Za-z_]\w*")


@dataclass(frozen=True)
class PipeTable:
    """A ``|``-separated table read cell by cell (cells may hold several words)."""

    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    line: int


def _cells(line: str) -> list[str]:
    parts = [c.strip() for c in line.strip().strip("|").split("|")]
    return parts


def pipe_tables(text: str) -> list[PipeTable]:
    """Every block of consecutive ``|`` lines with the same cell count (first line = header)."""
    lines = _clean_lines(text)
    out: list[PipeTable] = []
    i = 0
    while i < len(lines):
        if "|" not in lines[i] or re.fullmatch(r"[\s|:+=-]*", lines[i]):
            i += 1
            continue
        header = _cells(lines[i])
        rows: list[tuple[str, ...]] = []
        j = i + 1
        while j < len(lines) and "|" in lines[j]:
            if re.fullmatch(r"[\s|:+=-]*", lines[j]):
                j += 1
                continue
            cells = _cells(lines[j])
            if len(cells) != len(header):
                raise Decline(f"line {j + 1}: row {lines[j]!r} has {len(cells)} cells, "
                              f"the header {len(header)}", "malformed")
            rows.append(tuple(cells))
            j += 1
        if rows and len(header) >= 2:
            out.append(PipeTable(tuple(header), tuple(rows), i + 1))
        i = j
    return out


def _clock(iface: Interface) -> PortDecl | None:
    clocks = [p for p in iface.ports if p.direction == "input" and p.name.lower() in _CLOCK_NAMES]
    if len(clocks) > 1:
        raise Decline("more than one clock input", "interface")
    if clocks and clocks[0].width != 1:
        raise Decline(f"clock {clocks[0].name!r} is not one bit", "interface")
    return clocks[0] if clocks else None


def _require_posedge(spec: str, what: str) -> None:
    if not _POSITIVE_EDGE.search(spec):
        raise Decline(f"{what}: the spec does not say which clock edge updates the state",
                      "ambiguous")
    if _OTHER_EDGE.search(spec):
        raise Decline(f"{what}: the spec mentions other clocking (negative edge, latch, "
                      "asynchronous or active-low control)", "unsupported")


def _ports_decl(iface: Interface, registers: set[str]) -> str:
    decls = []
    for p in iface.ports:
        rng = f" [{p.msb}:{p.lsb}]" if p.msb is not None else ""
        kind = " reg" if p.name in registers else ""
        decls.append(f"    {p.direction}{kind}{rng} {p.name}")
    return ",\n".join(decls)


# --------------------------------------------------------------------------------------------
# Flip-flop characteristic tables
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ClockedSolution:
    """A register's next state: ``function`` over ``inputs`` (the register's own old value
    last) and its expression; ``verilog`` is the whole module."""

    kind: str
    target: str
    inputs: tuple[str, ...]
    function: Function
    expression: Expression
    verilog: str


def _old_value(cell: str, out: str) -> str | None:
    """``'old'``/``'not_old'`` for ``Qold``, ``~Qold``, ``!Qold``, ``Qold'``; else None."""
    text = cell.replace(" ", "")
    pattern = rf"(?:{re.escape(out)})_?old"
    if re.fullmatch(pattern, text, re.I):
        return "old"
    if re.fullmatch(rf"[~!]{pattern}|{pattern}'", text, re.I):
        return "not_old"
    return None


def solve_flipflop(spec: str, iface: Interface) -> ClockedSolution | None:
    """Solve a flip-flop table, None when the spec has none; raise Decline when unsure."""
    tables = [t for t in pipe_tables(spec)
              if any(_old_value(c, h) for h in t.header for r in t.rows for c in r)]
    if not tables:
        return None
    if len(tables) > 1:
        raise Decline("several flip-flop tables", "ambiguous")
    table = tables[0]
    where = f"flip-flop table at line {table.line}"
    clock = _clock(iface)
    if clock is None:
        raise Decline(f"{where}: no clock input", "interface")
    outputs = [p for p in iface.ports if p.direction == "output"]
    if len(outputs) != 1 or outputs[0].width != 1:
        raise Decline(f"{where}: only one 1-bit register output is supported", "unsupported")
    if _RESET.search(spec):
        raise Decline(f"{where}: the spec mentions a reset the table does not give",
                      "unsupported")
    _require_posedge(spec, where)
    out = outputs[0]
    if not re.search(rf"\b{re.escape(out.name)}_?old\b[^.]*\bbefore\b", spec, re.I):
        raise Decline(f"{where}: '{out.name}old' is not defined as the value before the edge",
                      "ambiguous")
    if not all(_CELL_IDENT.fullmatch(h) for h in table.header):
        raise Decline(f"{where}: header {list(table.header)} is not a list of names",
                      "malformed")
    data_inputs = [p for p in iface.ports if p.direction == "input" and p is not clock]
    resolved = resolve_names(list(table.header), [*data_inputs, out], spec)
    if resolved is None or any(len(b) != 1 for b in resolved):
        raise Decline(f"{where}: cannot map columns {list(table.header)} to 1-bit ports",
                      "interface")
    names = [b[0] for b in resolved]
    if names.count(out.name) != 1 or names[-1] != out.name:
        raise Decline(f"{where}: the last column must be the output {out.name!r}", "interface")
    in_names = names[:-1]
    want = [b for p in data_inputs for b in p.bits()]
    if sorted(in_names) != sorted(want) or len(set(in_names)) != len(in_names):
        raise Decline(f"{where}: the input columns do not cover the inputs exactly once",
                      "interface")
    n = len(in_names) + 1
    ones: set[int] = set()
    zeros: set[int] = set()
    seen: set[str] = set()
    for row in table.rows:
        pattern = "".join(row[:-1])
        if len(pattern) != n - 1 or not set(pattern) <= {"0", "1"}:
            raise Decline(f"{where}: input cells {row[:-1]} are not single 0/1 values",
                          "malformed")
        if pattern in seen:
            raise Decline(f"{where}: input combination {pattern} appears twice", "malformed")
        seen.add(pattern)
        cell = row[-1]
        old = _old_value(cell, out.name)
        if old is None and cell not in ("0", "1"):
            raise Decline(f"{where}: unknown next-state cell {cell!r}", "malformed")
        for q in (0, 1):
            m = int(pattern, 2) << 1 | q
            value = int(cell) if old is None else (q if old == "old" else 1 - q)
            (ones if value else zeros).add(m)
    if len(seen) != 1 << (n - 1):
        raise Decline(f"{where}: {len(seen)} of {1 << (n - 1)} input combinations given",
                      "malformed")
    f = Function(n, frozenset(ones), frozenset(zeros))
    operands = [*in_names, out.name]
    expr = minimise(f, operands)
    if not matches(expr.text, operands, f):
        raise Decline(f"internal check failed for {out.name}", "internal")
    verilog = (f"module {iface.top} (\n{_ports_decl(iface, {out.name})}\n);\n"
               f"    always @(posedge {clock.name}) begin\n"
               f"        {out.name} <= {expr.text};\n"
               f"    end\nendmodule\n")
    return ClockedSolution("flipflop", out.name, tuple(operands), f, expr, verilog)


# --------------------------------------------------------------------------------------------
# One-dimensional cellular automata (neighbourhood rule tables)
# --------------------------------------------------------------------------------------------

_NEIGHBOUR = {"left": 0, "center": 1, "centre": 1, "right": 2}


def _rule_columns(header: Sequence[str]) -> tuple[list[int], int] | None:
    """Column indices of Left/Center/Right and of the next-state column, if this is a rule
    table."""
    where: dict[int, int] = {}
    nxt: list[int] = []
    for k, cell in enumerate(header):
        low = cell.strip().lower()
        if low in _NEIGHBOUR:
            if _NEIGHBOUR[low] in where:
                return None
            where[_NEIGHBOUR[low]] = k
        elif re.search(r"\bnext\b", low):
            nxt.append(k)
        else:
            return None
    if sorted(where) != [0, 1, 2] or len(nxt) != 1:
        return None
    return [where[0], where[1], where[2]], nxt[0]


def solve_automaton(spec: str, iface: Interface) -> ClockedSolution | None:
    """Solve a rule table applied to every cell of a vector; None when there is none."""
    tables = [(t, cols) for t in pipe_tables(spec) if (cols := _rule_columns(t.header))]
    if not tables:
        return None
    if len(tables) > 1:
        raise Decline("several neighbourhood rule tables", "ambiguous")
    table, (lcr, nxt) = tables[0]
    where = f"rule table at line {table.line}"
    clock = _clock(iface)
    if clock is None:
        raise Decline(f"{where}: no clock input", "interface")
    outputs = [p for p in iface.ports if p.direction == "output"]
    others = [p for p in iface.ports if p.direction == "input" and p is not clock]
    if len(outputs) != 1 or outputs[0].width < 3:
        raise Decline(f"{where}: needs one vector output of at least 3 cells", "interface")
    state = outputs[0]
    width = state.width
    loads = [p for p in others if p.width == 1]
    datas = [p for p in others if p.width == width]
    if len(loads) != 1 or len(datas) != 1 or len(others) != 2:
        raise Decline(f"{where}: expected exactly a 1-bit load and a {width}-bit data input",
                      "interface")
    load, data = loads[0], datas[0]
    if state.msb is None or state.lsb is None or state.msb < state.lsb or state.lsb != 0:
        raise Decline(f"{where}: the state must be declared [{width - 1}:0] to tell left "
                      "from right", "ambiguous")
    if not re.search(rf"\b{re.escape(load.name)}\b[^.]*\bload(?:ed)?\s+with\s+"
                     rf"{re.escape(data.name)}\b", spec, re.I | re.S):
        raise Decline(f"{where}: the spec does not say {load.name!r} loads {data.name!r}",
                      "ambiguous")
    low_bound = rf"{re.escape(state.name)}\[-1\]"
    high_bound = rf"{re.escape(state.name)}\[{width}\]"
    if not (re.search(low_bound, spec) and re.search(high_bound, spec)
            and re.search(r"\bboundar(?:y|ies)\b[^.]*\b(?:zero|off|0)\b", spec, re.I | re.S)):
        raise Decline(f"{where}: the boundary cells are not stated to be zero", "ambiguous")
    if re.search(r"\b(?:wrap\w*|circular|toroid\w*|cyclic)\b", spec, re.I):
        raise Decline(f"{where}: wrap-around boundaries are not supported", "unsupported")
    if _RESET.search(spec):
        raise Decline(f"{where}: the spec mentions a reset", "unsupported")
    _require_posedge(spec, where)
    ones: set[int] = set()
    zeros: set[int] = set()
    for row in table.rows:
        pattern = "".join(row[k] for k in lcr)
        value = row[nxt]
        if len(pattern) != 3 or not set(pattern) <= {"0", "1"} or value not in ("0", "1"):
            raise Decline(f"{where}: row {row} is not 0/1 cells", "malformed")
        m = int(pattern, 2)
        if m in ones or m in zeros:
            raise Decline(f"{where}: neighbourhood {pattern} appears twice", "malformed")
        (ones if value == "1" else zeros).add(m)
    if len(ones) + len(zeros) != 8:
        raise Decline(f"{where}: {len(ones) + len(zeros)} of 8 neighbourhoods given",
                      "malformed")
    f = Function(3, frozenset(ones), frozenset(zeros))
    taken = {p.name for p in iface.ports}
    left, right = (_fresh(base, taken) for base in ("left", "right"))
    operands = [left, state.name, right]
    expr = minimise(f, operands)
    if not matches(expr.text, operands, f):
        raise Decline(f"internal check failed for {state.name}", "internal")
    text = expr.text.replace("1'b0", f"{{{width}{{1'b0}}}}").replace(
        "1'b1", f"{{{width}{{1'b1}}}}")
    top_bit = width - 1
    # the vector is drawn most significant cell first: q[i]'s left neighbour is q[i+1]
    verilog = (f"module {iface.top} (\n{_ports_decl(iface, {state.name})}\n);\n"
               f"    wire [{top_bit}:0] {left} = {{1'b0, {state.name}[{top_bit}:1]}};\n"
               f"    wire [{top_bit}:0] {right} = {{{state.name}[{top_bit - 1}:0], 1'b0}};\n"
               f"    always @(posedge {clock.name}) begin\n"
               f"        if ({load.name})\n"
               f"            {state.name} <= {data.name};\n"
               f"        else\n"
               f"            {state.name} <= {text};\n"
               f"    end\nendmodule\n")
    return ClockedSolution("automaton", state.name, tuple(operands), f, expr, verilog)


def _fresh(base: str, taken: set[str]) -> str:
    name = base
    for k in itertools.count(1):
        if name not in taken:
            break
        name = f"{base}_{k}"
    taken.add(name)
    return name
