"""The liberty a flow maps onto: resolved from a path, a name or the bundled generic one, and its
cells' leakage (OpenSTA's power report leaves it out for some libraries)."""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from pathlib import Path

from rtlforge.eda.liberty import (
    GENERIC_LIBERTY,
    SKY130_DONT_USE,
    LibertyInfo,
    liberty_info,
    prepare_liberty,
)

# ---------------------------------------------------------------------------------- library


def resolve_liberty(liberty: str | Path | None,
                    dont_use: Sequence[str] | None = None) -> tuple[Path, LibertyInfo]:
    """The cached, dont-use-marked copy of ``liberty`` (None: the bundled generic library).

    ``dont_use=None`` applies the known preset for the library (sky130: probe and lpflow cells).
    """
    source = Path(liberty) if liberty is not None else GENERIC_LIBERTY
    info = liberty_info(source)
    if dont_use is None:
        dont_use = SKY130_DONT_USE if info.name.startswith("sky130_fd_sc_hd") else ()
    return prepare_liberty(source, dont_use=dont_use), info


def _liberty_label(source: str | Path | None, info: LibertyInfo) -> str:
    return "generic" if source is None else f"{info.name} ({Path(source).name})"


_leakage_cache: dict[Path, dict[str, float]] = {}
_leakage_lock = threading.Lock()
_CELL_LEAK = re.compile(
    r'^[ \t]*cell\s*\(\s*"?([^"\s)]+)"?\s*\)\s*\{|^[ \t]*cell_leakage_power\s*:\s*([0-9.eE+-]+)',
    re.MULTILINE)


def cell_leakage(path: Path) -> dict[str, float]:
    """``cell_leakage_power`` of every cell, in the library's leakage unit (cached per file)."""
    with _leakage_lock:
        hit = _leakage_cache.get(path)
    if hit is not None:
        return hit
    table: dict[str, float] = {}
    cell: str | None = None
    for name, value in _CELL_LEAK.findall(path.read_text(errors="replace")):
        if name:
            cell = name
        elif cell is not None and cell not in table:
            table[cell] = float(value)
    with _leakage_lock:
        _leakage_cache[path] = table
    return table
