"""Find the waveform table in a spec and write it out again, cleaned, for the waveform role.

VerilogEval v2's "read the simulation waveforms" problems give the circuit as a table: a header
line ``time  a  b  q`` and one row per time step (``15ns  0  1  0``), values in binary, decimal or
hex, ``x`` where unknown. A model reads it more reliably when the columns are aligned, grouped
into inputs and outputs, the rows numbered, and clock edges marked, so the role replaces the
table's lines in the spec by that rendering. Pure functions: no I/O, bounded by the spec.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

__all__ = ["WaveformTable", "parse_waveform_table", "render_table", "replace_table"]

_TIME = re.compile(r"^\d+(?:\.\d+)?\s*(?:[munpf]?s)?$", re.IGNORECASE)
_NAME = re.compile(r"^[A-Za-z_][\w\[\]:]*$")
_VALUE = re.compile(r"^[0-9a-fA-FxXzZ_'?-]+$")
#: A table longer than this is cut (a spec is prompt text; the model does not need more).
MAX_ROWS = 256


@dataclass(frozen=True)
class WaveformTable:
    """A spec's waveform table: column names (time first), rows of text values, and the
    0-based line span ``[first, last)`` it occupies in the spec."""

    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    first_line: int
    last_line: int

    @property
    def signals(self) -> tuple[str, ...]:
        return self.columns[1:]


def _header(line: str) -> tuple[str, ...] | None:
    tokens = tuple(line.split())
    if len(tokens) >= 3 and tokens[0].lower() == "time" and all(
            _NAME.match(t) for t in tokens[1:]):
        return tokens
    return None


def _row(line: str, width: int) -> tuple[str, ...] | None:
    tokens = tuple(line.split())
    if len(tokens) == width and _TIME.match(tokens[0]) and all(
            _VALUE.match(t) for t in tokens[1:]):
        return tokens
    return None


def parse_waveform_table(spec: str) -> WaveformTable | None:
    """The first waveform table in ``spec`` (a ``time`` header and at least two rows), or None.

    A blank line may separate the header from the rows; the table ends at the first line that
    is not a row with one value per column.
    """
    lines = spec.splitlines()
    for i, line in enumerate(lines):
        columns = _header(line)
        if columns is None:
            continue
        j = i + 1
        while j < len(lines) and not lines[j].strip() and j == i + 1:
            j += 1
        rows: list[tuple[str, ...]] = []
        while j < len(lines) and len(rows) < MAX_ROWS:
            row = _row(lines[j], len(columns))
            if row is None:
                break
            rows.append(row)
            j += 1
        if len(rows) >= 2:
            return WaveformTable(columns=columns, rows=tuple(rows), first_line=i, last_line=j)
    return None


def _rises(previous: str | None, value: str) -> bool:
    return previous == "0" and value == "1"


def render_table(table: WaveformTable, *, inputs: Collection[str] = (),
                 outputs: Collection[str] = (), clock: str | None = None) -> str:
    """The table with numbered rows, inputs before outputs (``|`` between the groups), aligned
    columns, and ``<- clk rises`` on the rows where the clock goes from 0 to 1.

    Columns that are neither a known input nor a known output stay in their own group, last.
    """
    index = {name: k + 1 for k, name in enumerate(table.columns[1:])}
    groups = [
        [n for n in table.signals if n in inputs],
        [n for n in table.signals if n in outputs],
        [n for n in table.signals if n not in inputs and n not in outputs],
    ]
    groups = [g for g in groups if g]
    header = ["row", "time", *_grouped(groups, str)]
    body: list[list[str]] = []
    notes: list[str] = []
    previous: str | None = None
    for number, row in enumerate(table.rows, start=1):
        body.append([str(number), row[0],
                     *_grouped(groups, lambda name, r=row: r[index[name]])])
        if clock is not None and clock in index:
            value = row[index[clock]]
            notes.append(f"<- {clock} rises" if _rises(previous, value) else "")
            previous = value
        else:
            notes.append("")
    widths = [max(len(r[c]) for r in (header, *body)) for c in range(len(header))]

    def line(cells: Sequence[str], note: str = "") -> str:
        text = "  ".join(cell.ljust(w) for cell, w in zip(cells, widths, strict=True))
        return f"{text}  {note}".rstrip()

    described = []
    if inputs:
        described.append("inputs: " + ", ".join(n for n in table.signals if n in inputs))
    if outputs:
        described.append("outputs: " + ", ".join(n for n in table.signals if n in outputs))
    title = f"Waveform table ({len(table.rows)} rows"
    title += f"; {'; '.join(described)})" if described else ")"
    return "\n".join([title + ":", line(header),
                      *(line(cells, note) for cells, note in zip(body, notes, strict=True))])


def _grouped(groups: Sequence[Sequence[str]], cell: Callable[[str], str]) -> list[str]:
    out: list[str] = []
    for k, group in enumerate(groups):
        if k:
            out.append("|")
        out.extend(cell(name) for name in group)
    return out


def replace_table(spec: str, table: WaveformTable, rendered: str) -> str:
    """``spec`` with the table's lines replaced by ``rendered`` (indented like the header)."""
    lines = spec.splitlines()
    indent = re.match(r"^\s*", lines[table.first_line])
    pad = indent.group(0) if indent else ""
    new = [pad + part for part in rendered.splitlines()]
    return "\n".join([*lines[:table.first_line], *new, *lines[table.last_line:]])
