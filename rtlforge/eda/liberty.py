"""Liberty (``.lib``) files as the PPA tools need them: unpacked, dont-use marked, units known.

Neither yosys 0.23 nor the 2019 OpenSTA reads ``.lib.gz``, and yosys 0.23's ``abc`` has no
``-dont_use`` flag (ABC does honour a ``dont_use : true;`` attribute). So a library is unpacked
once into a content-addressed cache, with the excluded cells marked in that copy. Keys are the
source bytes plus the dont-use patterns, so parallel workers converge on the same file, and
writes are atomic (temp file + rename) so none of them ever reads a half-written library.

Units differ between libraries (sky130: pF; Nangate: fF; the bundled generic library: ps), and
OpenSTA reports and accepts numbers in the first library's units, so every number crossing the
tool boundary is converted with :class:`LibertyUnits`.
"""

from __future__ import annotations

import fnmatch
import functools
import gzip
import hashlib
import os
import re
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rtlforge.core.cachedir import cache_dir
from rtlforge.core.errors import ConfigError

__all__ = [
    "GENERIC_LIBERTY",
    "NANGATE45_DONT_USE",
    "SKY130_DONT_USE",
    "LatchCell",
    "LibertyError",
    "LibertyInfo",
    "LibertyUnits",
    "default_cache_dir",
    "latch_cells",
    "latch_techmap",
    "liberty_info",
    "prepare_liberty",
]

#: The small synthetic library shipped with rtlforge (see ``rtlforge/eda/data/README.md``).
GENERIC_LIBERTY = Path(__file__).resolve().parent / "data" / "generic.lib"

#: Cells OpenROAD-flow-scripts and lambdapdk keep out of synthesis for sky130_fd_sc_hd: probe
#: cells and the low-power (isolation, retention, ...) family ABC would otherwise map onto.
SKY130_DONT_USE: tuple[str, ...] = (
    "sky130_fd_sc_hd__probe_p_8",
    "sky130_fd_sc_hd__probec_p_8",
    "sky130_fd_sc_hd__lpflow_*",
)
#: Nangate45 needs nothing excluded for these flows.
NANGATE45_DONT_USE: tuple[str, ...] = ()

#: Bumped when the transformation below changes, so stale cached copies are not reused.
_FORMAT = "rtlforge-liberty-v1"
_CELL = re.compile(r'^([ \t]*)cell\s*\(\s*"?([^"\s)]+)"?\s*\)\s*\{', re.MULTILINE)


class LibertyError(ConfigError):
    """A liberty file is missing, unreadable or lacks what the PPA flow needs."""


def default_cache_dir() -> Path:
    """``liberty`` under :func:`~rtlforge.core.cachedir.cache_dir`."""
    return Path(cache_dir("liberty"))


def _read_text(path: Path) -> str:
    try:
        raw = path.read_bytes()
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise LibertyError(f"cannot read liberty file {path}: {exc}") from exc
    return raw.decode("utf-8", errors="replace")


def _read_head(path: Path, size: int = 1 << 18) -> str:
    """The first ``size`` bytes (unpacked): enough for any library header, cheap for 12 MB."""
    try:
        with path.open("rb") as raw:
            magic = raw.read(2)
        opener = gzip.open if magic == b"\x1f\x8b" else open
        with opener(path, "rb") as fh:
            return fh.read(size).decode("utf-8", errors="replace")
    except (OSError, EOFError) as exc:
        raise LibertyError(f"cannot read liberty file {path}: {exc}") from exc


def mark_dont_use(text: str, patterns: Sequence[str]) -> tuple[str, list[str]]:
    """Insert ``dont_use : true;`` at the top of every cell whose name matches a glob."""
    if not patterns:
        return text, []
    marked: list[str] = []
    parts: list[str] = []
    last = 0
    for match in _CELL.finditer(text):
        name = match.group(2)
        if any(fnmatch.fnmatchcase(name, pat) for pat in patterns):
            parts.append(text[last:match.end()])
            parts.append(f"\n{match.group(1)}  dont_use : true;")
            last = match.end()
            marked.append(name)
    parts.append(text[last:])
    return "".join(parts), marked


_memo: dict[tuple[str, int, int, tuple[str, ...], str], Path] = {}
_memo_lock = threading.Lock()


def prepare_liberty(path: str | Path, *, dont_use: Sequence[str] = (),
                    cache_dir: str | Path | None = None) -> Path:
    """An unpacked copy of ``path`` (``.lib`` or ``.lib.gz``) with ``dont_use`` cells marked.

    Returns a path inside the cache; the same input always yields the same path. A plain ``.lib``
    with no patterns is still copied, so the caller never hands tools a file that may change.
    """
    src = Path(path).expanduser().resolve()
    try:
        stat = src.stat()
    except OSError as exc:
        raise LibertyError(f"liberty file {src} not found: {exc}") from exc
    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    patterns = tuple(sorted(set(dont_use)))
    memo_key = (str(src), stat.st_mtime_ns, stat.st_size, patterns, str(cache))
    with _memo_lock:
        hit = _memo.get(memo_key)
    if hit is not None and hit.exists():
        return hit

    digest = hashlib.sha256()
    try:
        digest.update(src.read_bytes())
    except OSError as exc:
        raise LibertyError(f"cannot read liberty file {src}: {exc}") from exc
    digest.update("\0".join((_FORMAT, *patterns)).encode())
    stem = src.name.removesuffix(".gz").removesuffix(".lib")
    target = cache / f"{stem}-{digest.hexdigest()[:16]}.lib"
    if not target.exists():
        text, marked = mark_dont_use(_read_text(src), patterns)
        missing = [p for p in patterns if not any(fnmatch.fnmatchcase(c, p) for c in marked)]
        if missing:
            raise LibertyError(f"dont-use patterns match no cell in {src.name}: {missing}")
        try:
            cache.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=cache, prefix=f".{stem}-", suffix=".tmp")
            try:
                with os.fdopen(fd, "w") as fh:
                    fh.write(text)
                os.replace(tmp, target)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        except OSError as exc:
            raise LibertyError(f"cannot write the liberty cache {cache}: {exc}") from exc
    with _memo_lock:
        _memo[memo_key] = target
    return target


# ---------------------------------------------------------------------------------- units

_TIME = {"s": 1e9, "ms": 1e6, "us": 1e3, "ns": 1.0, "ps": 1e-3, "fs": 1e-6}
_CAP = {"f": 1e12, "mf": 1e9, "uf": 1e6, "nf": 1e3, "pf": 1.0, "ff": 1e-3}
_POWER = {"w": 1e3, "mw": 1.0, "uw": 1e-3, "nw": 1e-6, "pw": 1e-9, "fw": 1e-12}
_UNIT = re.compile(r'^\s*(time_unit|leakage_power_unit)\s*:\s*"?\s*([0-9.eE+-]+)\s*([A-Za-z]+)"?',
                   re.MULTILINE)
_CAP_UNIT = re.compile(r'capacitive_load_unit\s*\(\s*([0-9.eE+-]+)\s*,\s*"?([A-Za-z]+)"?\s*\)')
_LIB_NAME = re.compile(r'^\s*library\s*\(\s*"?([^")\s]+)"?\s*\)', re.MULTILINE)


@dataclass(frozen=True)
class LibertyUnits:
    """Scale factors from the library's units to rtlforge's (ns, pF, mW).

    A value ``v`` read from or given to a tool in library units is ``v * time_ns`` nanoseconds,
    ``v * cap_pf`` picofarads, and (leakage) ``v * leakage_mw`` milliwatts.
    """

    time_ns: float
    cap_pf: float
    leakage_mw: float
    time_unit: str
    cap_unit: str
    leakage_unit: str

    def to_lib_time(self, ns: float) -> float:
        return ns / self.time_ns

    def to_lib_cap(self, pf: float) -> float:
        return pf / self.cap_pf

    def as_dict(self) -> dict[str, str]:
        return {"time": self.time_unit, "capacitance": self.cap_unit,
                "leakage_power": self.leakage_unit, "area": "um^2"}


@dataclass(frozen=True)
class LibertyInfo:
    name: str
    path: Path
    units: LibertyUnits


def _scale(table: dict[str, float], number: str, unit: str, what: str, path: Path) -> float:
    try:
        return float(number) * table[unit.lower()]
    except (KeyError, ValueError):
        raise LibertyError(f"{path.name}: unsupported {what} unit {number}{unit}") from None


@functools.lru_cache(maxsize=32)
def _info(src: Path, _mtime_ns: int) -> LibertyInfo:
    text = _read_head(src)
    first_cell = _CELL.search(text)
    header = text[: first_cell.start()] if first_cell else text
    name = _LIB_NAME.search(header)
    if name is None:
        raise LibertyError(f"{src.name}: no 'library (...)' group; is it a liberty file?")
    found = {key: (num, unit) for key, num, unit in _UNIT.findall(header)}
    cap = _CAP_UNIT.search(header)
    # Liberty defaults when an attribute is absent: 1ns, 1pF, 1uW (per the Liberty reference).
    t_num, t_unit = found.get("time_unit", ("1", "ns"))
    l_num, l_unit = found.get("leakage_power_unit", ("1", "uW"))
    c_num, c_unit = cap.groups() if cap else ("1", "pf")
    units = LibertyUnits(
        time_ns=_scale(_TIME, t_num, t_unit, "time", src),
        cap_pf=_scale(_CAP, c_num, c_unit, "capacitance", src),
        leakage_mw=_scale(_POWER, l_num, l_unit, "leakage power", src),
        time_unit=f"{t_num}{t_unit}",
        cap_unit=f"{float(c_num):g}{c_unit.lower()}",
        leakage_unit=f"{l_num}{l_unit}",
    )
    return LibertyInfo(name=name.group(1), path=src, units=units)


def liberty_info(path: str | Path) -> LibertyInfo:
    """The library name and units, read from the header (before the first cell)."""
    src = Path(path).expanduser().resolve()
    try:
        mtime = src.stat().st_mtime_ns
    except OSError as exc:
        raise LibertyError(f"liberty file {src} not found: {exc}") from exc
    return _info(src, mtime)


# ---------------------------------------------------------------------------------- latches

_LATCH_GROUP = re.compile(r"\blatch\s*\(\s*\"?(\w+)\"?\s*(?:,\s*\"?\w*\"?\s*)?\)\s*\{([^{}]*)\}")
_ATTR = re.compile(r'\b(\w+)\s*:\s*"?([^";]*)"?\s*;')
_PIN = re.compile(r'\bpin\s*\(\s*"?(\w+)"?\s*\)\s*\{')
_PIN_FUNCTION = re.compile(r'\bfunction\s*:\s*"([^"]*)"')
_AREA_ATTR = re.compile(r"^\s*area\s*:\s*([0-9.eE+-]+)\s*;", re.M)
_DONT_USE = re.compile(r"\bdont_use\s*:\s*true\b")


@dataclass(frozen=True)
class LatchCell:
    """A plain D latch of a library: ``q`` follows ``data`` while ``enable`` is at
    ``active_high`` (and holds otherwise); no set, clear or scan."""

    name: str
    enable: str
    active_high: bool
    data: str
    q: str
    area: float


def latch_cells(path: str | Path) -> list[LatchCell]:
    """The usable plain D latches of a (prepared) liberty file, smallest first."""
    text = _read_text(Path(path))
    starts = [(m.start(), m.group(2)) for m in _CELL.finditer(text)]
    found: list[LatchCell] = []
    for (start, name), (end, _) in zip(starts, [*starts[1:], (len(text), "")], strict=True):
        body = text[start:end]
        group = _LATCH_GROUP.search(body)
        if group is None or _DONT_USE.search(body):
            continue
        attrs = dict(_ATTR.findall(group.group(2)))
        if set(attrs) - {"enable", "data_in"} or not {"enable", "data_in"} <= set(attrs):
            continue  # set/clear or other behaviour: not a plain latch
        enable, data = attrs["enable"].strip(), attrs["data_in"].strip()
        active_high = not enable.startswith("!")
        enable = enable.lstrip("!").strip()
        if not (enable.isidentifier() and data.isidentifier()):
            continue
        pins = [m.group(1) for m in _PIN.finditer(body)]
        q = None
        for pin_match in _PIN.finditer(body):
            function = _PIN_FUNCTION.search(body, pin_match.end())
            nxt = body.find("pin", pin_match.end())
            if function and (nxt < 0 or function.start() < nxt) and \
                    function.group(1).strip() == group.group(1):
                q = pin_match.group(1)
                break
        area = _AREA_ATTR.search(body)
        if q is None or enable not in pins or data not in pins or area is None:
            continue
        found.append(LatchCell(name=name, enable=enable, active_high=active_high, data=data,
                               q=q, area=float(area.group(1))))
    return sorted(found, key=lambda c: (c.area, c.name))


def latch_techmap(prepared: Path) -> Path | None:
    """A yosys techmap file mapping ``$_DLATCH_P_``/``$_DLATCH_N_`` onto the library's
    smallest plain latch of that polarity (else of the other, behind an inverter), next to
    ``prepared`` in the cache; None when the library has no such latch.

    yosys 0.23's ``dfflibmap`` maps flip-flops only, so a design with a latch could not be
    measured at all; newer yosys maps latches itself and does not need this.
    """
    target = prepared.with_name(prepared.name.removesuffix(".lib") + "-latchmap-v1.v")
    if target.exists():
        return target
    cells = latch_cells(prepared)
    if not cells:
        return None
    lines = [f"// rtlforge: latch mapping generated from {prepared.name}"]
    for polarity in ("P", "N"):
        high = polarity == "P"
        cell = next((c for c in cells if c.active_high == high), cells[0])  # smallest first
        invert = high != cell.active_high
        enable = "en" if invert else "E"
        lines += [f"module \\$_DLATCH_{polarity}_ (input E, input D, output Q);"]
        if invert:
            lines += ["  wire en;", "  \\$_NOT_ inv (.A(E), .Y(en));"]
        lines += [f"  {cell.name} _TECHMAP_REPLACE_ (.{cell.enable}({enable}), "
                  f".{cell.data}(D), .{cell.q}(Q));", "endmodule"]
    try:
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".latchmap-", suffix=".tmp")
        with os.fdopen(fd, "w") as fh:
            fh.write("\n".join(lines) + "\n")
        os.replace(tmp, target)
    except OSError as exc:
        raise LibertyError(f"cannot write the latch map {target}: {exc}") from exc
    return target
