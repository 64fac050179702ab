"""PPA (power, performance, area) estimators: ``yosys-sta`` (default) and ``yosys-abc``.

``yosys-sta``: yosys maps the design onto a liberty library (``stat -liberty`` gives the area),
then OpenSTA times the mapped netlist (critical-path arrival) and estimates power from a global
switching activity. ``yosys-abc`` stops after mapping and reads ABC's own ``stime`` delay: about
twice as fast, for screening and ranking only (see ``docs/ppa.md``).

OpenSTA loads a big liberty file slowly (sky130: ~0.5 s) and times a small netlist in ~5 ms, so
by default each worker thread keeps one sandboxed ``sta`` process alive, feeds it commands over
stdin and reads up to a sentinel. A query that overruns its deadline kills the process, which is
restarted for the next one; ``persistent=False`` runs one ``sta`` per design instead.

Every number leaving this module is in ns, um^2 and mW whatever the library's own units. Nothing
here ever returns a placeholder: a design that cannot be measured raises :class:`PPAError`.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.metadata
import importlib.util
import itertools
import json
import math
import os
import re
import selectors
import shutil
import sys
import threading
import time
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from rtlforge.core.errors import (
    DesignError,
    InvalidSourceError,
    RtlforgeError,
    SandboxError,
    SecurityViolation,
    ToolMissingError,
    is_infra,
)
from rtlforge.core.hookspecs import Register, hookimpl
from rtlforge.core.interfaces import PPAEstimator, PPAResult
from rtlforge.core.models import Candidate, SourceFile, ToolInfo, ToolSpec
from rtlforge.core.untrusted import load_json
from rtlforge.eda.liberty import (
    GENERIC_LIBERTY,
    SKY130_DONT_USE,
    LibertyError,
    LibertyInfo,
    latch_techmap,
    liberty_info,
    prepare_liberty,
)
from rtlforge.eda.stages import clip_log, compiled_sources
from rtlforge.eda.tools import STA, YOSYS, YOSYS_ABC, YOSYS_MACROS
from rtlforge.sandbox import runfiles
from rtlforge.sandbox.runner import Limits, SandboxRunner, find_tool

if TYPE_CHECKING:
    import subprocess

__all__ = ["PPAError", "PPATimeoutError", "YosysAbcPPA", "YosysStaPPA", "resolve_liberty"]


class PPAError(DesignError):
    """The design could not be measured: it does not synthesise, has no timed path, ...

    A design error: an estimator that cannot run at all (tool missing, sandbox down, a liberty
    the tools cannot read) raises an infrastructure or configuration error instead.

    ``log`` carries the relevant tool output (clipped) for people and refinement agents.
    """

    def __init__(self, message: str, *, stage: str, log: str = "") -> None:
        super().__init__(message)
        self.stage = stage
        self.log = clip_log(log)


class PPATimeoutError(PPAError):
    """A PPA tool ran out of time on this design (its own limit, like a ``timeout`` verdict)."""


#: Ports taken as the clock when the caller names none (compared case-insensitively).
CLOCK_NAMES = ("clk", "clock", "clk_i", "i_clk", "clk_in", "aclk")
#: When none of those is an input of a sequential design: 1-bit inputs named like a clock of
#: one of several domains (wclk, rclk, clk_a, sys_clk, clk50) and not like a clock *enable*.
_CLOCK_LIKE = re.compile(r"(?:[a-z0-9]{1,4}_?)?(?:clk|clock)(?:_?[a-z0-9]{1,4})?|clk|clock")
_NOT_A_CLOCK = re.compile(r"(?:en|ena|enable|sel|gate|cnt|count|out)$")
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")  # spliced into yosys and Tcl: no '$', no '\'
_NETLIST = "rtlforge_netlist.v"
#: Largest log or netlist read back from a run directory (a run's files are capped at 256 MB).
_READ_LIMIT = 256 * 1024 * 1024
_STA_NETLIST = "rtlforge_sta_netlist.v"
_STA_SCRIPT = "rtlforge_sta.tcl"
_VIRTUAL_CLOCK = "rtlforge_vclk"


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


# ---------------------------------------------------------------------------------- synthesis

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


# ---------------------------------------------------------------------------------- estimators


#: ``yosys=`` choices: the in-jail pyosys worker, the ``yosys`` binary, or pyosys when installed.
YOSYS_BACKENDS = ("auto", "pyosys", "binary")
_WORKER_SCRIPT = Path(__file__).resolve().parents[2] / "eda" / "yosys_worker.py"
_YOSYS_VERSION = re.compile(r"Yosys\s+(\S+)")


@functools.lru_cache(maxsize=1)
def pyosys_location() -> tuple[Path, str] | None:
    """The installed pyosys package directory and its version, found without importing it
    (pyosys parses untrusted Verilog only inside the jail, never in this process)."""
    try:
        spec = importlib.util.find_spec("pyosys")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    package = Path(next(iter(spec.submodule_search_locations))).resolve()
    try:
        version = importlib.metadata.version("pyosys")
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    return package, version


class _WorkerDied(Exception):
    """The persistent worker exited mid-request; retried once on a fresh one."""


class _YosysWorker:
    """One sandboxed pyosys fork server (:mod:`rtlforge.eda.yosys_worker`) with the liberty
    parsed; used by one thread at a time. Designs reach it through its own workspace."""

    def __init__(self, runner: SandboxRunner, liberty: Path, package: Path, *, timeout: float,
                 max_jobs: int) -> None:
        self.runner = runner
        self.liberty = liberty
        self.package = package
        self.timeout = timeout
        self.max_jobs = max_jobs
        self.jobs = 0
        self.version: str | None = None
        self.scratch = ""
        self.proc: subprocess.Popen[bytes] | None = None
        self._workspace = runner.workspace(prefix="rtlforge-yosys-")
        self.workdir = self._workspace.__enter__()

    def _start(self) -> None:
        # The fork server itself uses next to no CPU; each job's child inherits the cap.
        limits = self.runner.limits.model_copy(update={"timeout_s": self.timeout,
                                                       "cpu_s": max(3600, int(self.timeout) + 5)})
        self.proc = self.runner.spawn([sys.executable, "-I", str(_WORKER_SCRIPT)], self.workdir,
                                      limits=limits, ro_paths=[self.liberty, self.package],
                                      merge_stderr=False)
        self.jobs = 0
        ready = self._exchange({"liberty": str(self.liberty),
                                "path": str(self.package.parent)}, timeout=300)
        if not ready.get("ready"):
            self.stop()
            raise SandboxError(f"the pyosys worker did not start: {ready.get('error')}")
        self.scratch = str(ready["scratch"])
        self.version = str(ready["version"]) if ready.get("version") else None

    def stop(self) -> None:
        if self.proc is not None:
            SandboxRunner.kill(self.proc)
            self.proc = None
        if self.scratch and self.runner.isolation == "none":  # else it lived in the jail
            shutil.rmtree(self.scratch, ignore_errors=True)
        self.scratch = ""

    def close(self) -> None:
        self.stop()
        self._workspace.__exit__(None, None, None)

    def _exchange(self, message: dict[str, Any], *, timeout: float) -> dict[str, Any]:
        assert self.proc is not None and self.proc.stdin is not None
        assert self.proc.stdout is not None
        body = json.dumps(message).encode()
        try:
            self.proc.stdin.write(len(body).to_bytes(4, "big") + body)
            self.proc.stdin.flush()
        except OSError as exc:
            self.stop()
            raise _WorkerDied(f"the yosys worker is gone: {exc}") from exc
        deadline = time.monotonic() + timeout
        buf = bytearray()
        need: int | None = None
        fd = self.proc.stdout.fileno()
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while need is None or len(buf) < need:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    self.stop()
                    raise PPATimeoutError(f"the yosys worker ran past {timeout:g} s",
                                          stage="synth")
                if not sel.select(timeout=min(remaining, 1.0)):
                    continue
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    self.stop()
                    raise _WorkerDied("the yosys worker exited")
                buf += chunk
                if need is None and len(buf) >= 4:
                    need = 4 + int.from_bytes(buf[:4], "big")
                    if need > 64 * self.runner.limits.output_bytes:
                        self.stop()
                        raise PPAError("the yosys worker's reply is too large", stage="synth")
        reply = load_json(bytes(buf[4:need]))
        if not isinstance(reply, dict):
            self.stop()
            raise _WorkerDied(f"unexpected reply {reply!r}")
        return reply

    def synthesise(self, files: Sequence[SourceFile], commands: Sequence[str],
                   outputs: Sequence[str]) -> dict[str, Any]:
        """Put ``files`` into the worker's workspace, run ``commands`` in a fresh fork (``{out}``
        in a command is the job's output folder) and return the reply. The files are removed
        afterwards, so no design can read another's."""
        if self.proc is not None and self.jobs >= self.max_jobs:
            self.stop()
        try:
            for attempt in (0, 1):
                try:
                    if self.proc is None or self.proc.poll() is not None:
                        self.stop()
                        self._start()
                    self.runner.put(self.workdir, files, role="design")
                    self.jobs += 1
                    out = f"{self.scratch}/job"
                    return self._exchange(
                        {"commands": [c.replace("{out}", out) for c in commands],
                         "outputs": list(outputs), "timeout": self.timeout,
                         "log_limit": 400_000},
                        timeout=self.timeout + 30)
                except _WorkerDied as exc:
                    if attempt:  # died twice on the same design: blame the design
                        raise PPAError("the yosys worker crashed on this design",
                                       stage="synth", log=str(exc)) from None
            raise AssertionError("unreachable")
        finally:
            for name in os.listdir(self.workdir):
                with contextlib.suppress(OSError):
                    os.unlink(self.workdir / name)


def _close_all(procs: list[Any], workers: list[Any], lock: threading.Lock) -> None:
    with lock:
        for proc in (*procs, *workers):
            proc.close()
        procs.clear()
        workers.clear()


def _json_stats(text: str | None, top: str) -> tuple[dict[str, int], float | None]:
    """Cell counts and (with ``-liberty``) area from ``stat -json``: the design totals when
    the design keeps a hierarchy, else the top module's."""
    if not text:
        return {}, None
    data = load_json(text)
    block = data.get("design") or data.get("modules", {}).get(f"\\{top}") or {}
    counts = {str(k): int(v) for k, v in block.get("num_cells_by_type", {}).items()}
    area = block.get("area")
    return counts, float(area) if area is not None else None


class _YosysFlow(PPAEstimator):
    """Shared yosys front half: write the candidate, synthesise, map onto the library.

    ``yosys="pyosys"`` synthesises in a persistent sandboxed pyosys worker per thread (yosys and
    the liberty load once; each design runs in a fresh fork); ``"binary"`` runs one ``yosys``
    process per design; ``"auto"`` (default) takes pyosys when it is installed (the
    ``rtlforge[pyosys]`` extra). The two are different yosys versions, whose numbers differ:
    the version is in :meth:`cache_key` and in every result's ``tools``.
    """

    name: ClassVar[str]

    def __init__(self, *, liberty: str | Path | None = None,
                 dont_use: Sequence[str] | None = None, timeout: float = 300.0,
                 flatten: bool = True, yosys: str = "auto", max_jobs: int = 2000) -> None:
        """Args:
            liberty: the liberty file to map onto (``.lib`` or ``.lib.gz``); None uses the
                bundled generic library.
            dont_use: cells the mapper must not use; None applies the library's known preset
                (sky130: probe and lpflow cells).
            timeout: wall-clock seconds for synthesis of one design.
            flatten: flatten the hierarchy before mapping (``synth -flatten``).
            yosys: ``auto`` (pyosys when installed, else the binary), ``pyosys`` (a persistent
                sandboxed worker) or ``binary`` (one yosys process per design).
            max_jobs: designs one pyosys worker synthesises before it is restarted.
        """
        if yosys not in YOSYS_BACKENDS:
            raise ValueError(f"yosys must be one of {YOSYS_BACKENDS}, not {yosys!r}")
        self.liberty_source = liberty
        self.dont_use = tuple(dont_use) if dont_use is not None else None
        self.timeout = timeout
        self.flatten = flatten
        self.yosys = yosys
        self.max_jobs = max_jobs
        self._liberty: tuple[Path, LibertyInfo] | None = None
        self._init_sessions()

    def predefined_macros(self) -> tuple[str, ...]:
        # pyosys and the binary run the same read_verilog frontend
        return YOSYS_MACROS

    def _init_sessions(self) -> None:
        self._local = threading.local()
        self._procs: list[Any] = []  # persistent sta processes
        self._workers: list[Any] = []  # persistent yosys workers
        self._procs_lock = threading.Lock()
        self._finalizer = weakref.finalize(self, _close_all, self._procs, self._workers,
                                           self._procs_lock)

    # Picklable for process pools: live processes stay behind, each copy starts its own.
    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        for key in ("_local", "_procs", "_workers", "_procs_lock", "_finalizer"):
            state.pop(key, None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._init_sessions()

    def close(self) -> None:
        """Stop this estimator's worker processes (also done at garbage collection and exit)."""
        _close_all(self._procs, self._workers, self._procs_lock)
        self._local = threading.local()

    def __enter__(self) -> _YosysFlow:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def liberty(self) -> tuple[Path, LibertyInfo]:
        """Prepared lazily: constructing an estimator (e.g. to list plugins) reads no files."""
        if self._liberty is None:
            self._liberty = resolve_liberty(self.liberty_source, self.dont_use)
        return self._liberty

    @property
    def backend(self) -> str:
        """``pyosys`` or ``binary``: what ``yosys=`` resolves to here."""
        if self.yosys == "binary" or (self.yosys == "auto" and pyosys_location() is None):
            return "binary"
        if pyosys_location() is None:
            raise ToolMissingError("pyosys", "Install the pyosys extra: `pip install "
                                   "'rtlforge[pyosys]'`, or use the yosys binary "
                                   "(--yosys binary, yosys='binary').")
        return "pyosys"

    def yosys_version(self) -> str:
        """``pyosys X`` or ``yosys X``: the synthesis tool and version results depend on."""
        if self.backend == "pyosys":
            found = pyosys_location()
            return f"pyosys {found[1] if found else 'unknown'}"
        found = _YOSYS_VERSION.search(find_tool(YOSYS).version or "")
        return f"yosys {found.group(1) if found else 'unknown'}"

    def cache_key(self) -> dict[str, Any]:
        path, _ = self.liberty
        return {"name": self.name, "liberty": path.name, "flatten": self.flatten,
                "yosys": self.yosys_version()}

    def _abc_command(self, lib: Path, period_ns: float | None) -> str:
        delay = f" -D {period_ns * 1000:g}" if period_ns else ""
        return f"abc -liberty {lib}{delay}"

    def _worker(self, runner: SandboxRunner) -> _YosysWorker:
        worker: _YosysWorker | None = getattr(self._local, "yosys", None)
        if worker is None or worker.runner is not runner:
            found = pyosys_location()
            assert found is not None
            worker = _YosysWorker(runner, self.liberty[0], found[0], timeout=self.timeout,
                                  max_jobs=self.max_jobs)
            with self._procs_lock:
                self._workers.append(worker)
            self._local.yosys = worker
        return worker

    def _synthesise(self, candidate: Candidate, top: str, runner: SandboxRunner, workdir: Path,
                    period_ns: float | None) -> _Synth:
        _check_identifier(top, "top module")
        if period_ns is not None and not (math.isfinite(period_ns) and period_ns > 0):
            raise ValueError(f"period_ns must be a positive number, not {period_ns!r}")
        lib, _ = self.liberty
        sources = compiled_sources(f.name for f in candidate.files)
        if not sources:
            raise PPAError("the candidate has no Verilog source file", stage="synth")
        front = (f"read_verilog -sv {' '.join(sources)}",
                 f"hierarchy -check -top {top}",
                 f"synth {'-flatten ' if self.flatten else ''}-top {top}")
        back = (f"dfflibmap -liberty {lib}",
                self._abc_command(lib, period_ns),
                # -purge drops internal aliases of ports, which write_verilog would emit as
                # `assign {a, b} = ...`: OpenSTA 2019 cannot read a concatenation on the left.
                "opt_clean -purge")
        if self.backend == "pyosys":
            return self._synthesise_pyosys(candidate, top, runner, workdir, front, back)
        try:
            runner.put(workdir, candidate.files, role="design")
        except (SecurityViolation, InvalidSourceError) as exc:
            raise PPAError(f"refused by the security check: {exc}", stage="security") from exc
        # yosys 0.23 maps no latch: the library's latch cell is put in by a techmap instead.
        latches = latch_techmap(lib)
        if latches is not None:
            back = (back[0], f"techmap -map {latches}", *back[1:])
        script = "; ".join((*front, *back, f"stat -liberty {lib}",
                            f"write_verilog -noattr {_NETLIST}"))
        run = runner.run(["yosys", "-q", "-l", "yosys.log", "-p", script], cwd=workdir,
                         timeout=self.timeout, ro_paths=[lib, *([latches] if latches else [])],
                         tool=YOSYS)
        log = runfiles.read_text(workdir, "yosys.log", _READ_LIMIT, truncate=True)
        log = run.output if log is None else log
        if run.timed_out:
            raise PPATimeoutError(f"yosys ran past {self.timeout:g} s", stage="synth", log=log)
        if not run.ok:
            raise _synth_failure(
                top, _YOSYS_ERROR.findall(run.output) or _YOSYS_ERROR.findall(log), log)
        before_map, _, mapped_log = log.partition("Executing DFFLIBMAP pass")
        generic, mapped = _stat_blocks(before_map), _stat_blocks(mapped_log)
        area = _AREA.findall(mapped_log)
        if mapped and not mapped[-1]:
            raise _no_cells(top, log)
        unmapped = sorted(c for c in (mapped[-1] if mapped else ()) if c.startswith("$"))
        if unmapped:  # stat prints no area for them: say what they are first
            raise PPAError(_unmapped_reason(unmapped), stage="synth", log=log)
        if not mapped or not area:
            raise PPAError("yosys printed no liberty statistics", stage="synth", log=log)
        return self._synth_result(
            top, log, generic[-1] if generic else {}, mapped[-1], float(area[-1]),
            _STIME.findall(mapped_log),
            runfiles.read_text(workdir, _NETLIST, _READ_LIMIT) or "", runner, workdir, run.seconds,
            run.tool)

    def _synthesise_pyosys(self, candidate: Candidate, top: str, runner: SandboxRunner,
                           workdir: Path, front: Sequence[str], back: Sequence[str]) -> _Synth:
        lib, _ = self.liberty
        worker = self._worker(runner)
        start = time.perf_counter()
        commands = (*front, "tee -q -o {out}/generic.json stat -json", *back,
                    f"tee -q -o {{out}}/mapped.json stat -json -liberty {lib}",
                    f"write_verilog -noattr {{out}}/{_NETLIST}")
        try:
            reply = worker.synthesise(candidate.files, commands,
                                      ("generic.json", "mapped.json", _NETLIST))
        except (SecurityViolation, InvalidSourceError) as exc:
            raise PPAError(f"refused by the security check: {exc}", stage="security") from exc
        seconds = time.perf_counter() - start
        log = str(reply.get("log", ""))
        outputs = reply.get("outputs") or {}
        if reply.get("timed_out"):
            raise PPATimeoutError(f"yosys ran past {self.timeout:g} s", stage="synth", log=log)
        if reply.get("rc") != 0 or not outputs.get(_NETLIST):
            raise _synth_failure(top, _YOSYS_ERROR.findall(log), log, reply.get("rc"))
        generic, _ = _json_stats(outputs.get("generic.json"), top)
        mapped, area = _json_stats(outputs.get("mapped.json"), top)
        if not mapped:
            raise _no_cells(top, log)
        unmapped = sorted(c for c in mapped if c.startswith("$"))
        if unmapped:
            raise PPAError(_unmapped_reason(unmapped), stage="synth", log=log)
        if area is None:
            raise PPAError("yosys printed no liberty statistics", stage="synth", log=log)
        # The same tool as the binary (the version line tells them apart), loaded from pyosys.
        tool = ToolInfo(name="yosys", version=worker.version, path=str(worker.package))
        return self._synth_result(top, log, generic, mapped, area, _STIME.findall(log),
                                  outputs[_NETLIST], runner, workdir, seconds, tool)

    def _synth_result(self, top: str, log: str, generic: dict[str, int],
                      mapped: dict[str, int], area: float, stime: list[str], netlist_text: str,
                      runner: SandboxRunner, workdir: Path, seconds: float,
                      tool: ToolInfo | None) -> _Synth:
        if not mapped:
            raise _no_cells(top, log)
        unmapped = sorted(c for c in mapped if c.startswith("$"))
        if unmapped:
            raise PPAError(_unmapped_reason(unmapped), stage="synth", log=log)
        flops = sum(n for c, n in generic.items() if _SEQUENTIAL.match(c))
        # Not put anywhere yet: gating a netlist costs as much as timing it, so it is gated
        # once, where a tool reads it (the persistent sta's workspace, or ``workdir``).
        text = _split_concat_assigns(netlist_text)
        return _Synth(
            area_um2=area, cells=sum(mapped.values()), flops=flops, cell_counts=mapped,
            netlist=workdir / _NETLIST, netlist_text=text, inputs=_netlist_inputs(text),
            stime_ps=float(stime[-1]) if stime else None, seconds=seconds, tool=tool,
        )

    def _details(self, synth: _Synth, **extra: Any) -> dict[str, Any]:
        _, info = self.liberty
        return {
            "estimator": self.name,
            "units": {"area": "um^2", "delay": "ns", "power": "mW",
                      "liberty": info.units.as_dict()},
            "liberty_name": info.name,
            "sequential": synth.flops > 0,
            "flops": synth.flops,
            "cell_counts": synth.cell_counts,
            **extra,
        }


class YosysAbcPPA(_YosysFlow):
    """Screening: liberty area plus ABC's ``stime`` delay; power is leakage only.

    ``stime`` times the mapped logic ABC sees (flops cut out) with ABC's own load model, so it
    reads lower than OpenSTA; it is for ranking candidates cheaply, not for reporting. Dynamic
    power needs switching activity and a timer, so ``power_mw`` is the summed
    ``cell_leakage_power`` of the mapped cells and ``details["power_kind"] == "leakage"``.
    """

    name: ClassVar[str] = "yosys-abc"
    tools: ClassVar[tuple[ToolSpec, ...]] = (YOSYS, YOSYS_ABC)

    _SCRIPT = ("+strash;&get,-n;&fraig,-x;&put;scorr;dc2;dretime;strash;&get,-n;&dch,-f;"
               "&nf{D};&put;stime,-p")

    def _abc_command(self, lib: Path, period_ns: float | None) -> str:
        # yosys' default liberty script, plus `stime -p` to print the mapped critical path.
        delay = f",-D,{period_ns * 1000:g}" if period_ns else ""
        return f"abc -liberty {lib} -script {self._SCRIPT.format(D=delay)}"

    def estimate(self, candidate: Candidate, top: str, runner: SandboxRunner, *,
                 clock: str | None = None, period_ns: float | None = None) -> PPAResult:
        lib, info = self.liberty
        with runner.workspace(prefix="rtlforge-ppa-") as workdir:
            synth = self._synthesise(candidate, top, runner, workdir, period_ns)
        if synth.stime_ps is None:
            raise PPAError("ABC printed no stime delay (no combinational logic?)", stage="abc")
        leak = cell_leakage(lib)
        missing = sorted(c for c in synth.cell_counts if c not in leak)
        if missing:
            raise PPAError(f"no cell_leakage_power for {missing} in {info.name}", stage="power")
        power_mw = sum(leak[c] * n for c, n in synth.cell_counts.items()) * info.units.leakage_mw
        delay_ns = synth.stime_ps / 1000.0
        _finite_positive(area_um2=synth.area_um2, delay_ns=delay_ns, power_mw=power_mw)
        return PPAResult(
            area_um2=synth.area_um2, delay_ns=delay_ns, power_mw=power_mw, cells=synth.cells,
            liberty=_liberty_label(self.liberty_source, info),
            tools=tuple(t for t in (synth.tool,) if t is not None),
            details=self._details(synth, power_kind="leakage", delay_source="abc stime",
                                  period_ns=period_ns, seconds={"synth": synth.seconds}),
        )


# ---------------------------------------------------------------------------------- OpenSTA

_ARRIVAL = re.compile(r"^\s*(-?[0-9.eE+]+)\s+data arrival time", re.M)
_SLACK = re.compile(r"^\s*(-?[0-9.eE+]+)\s+slack \((MET|VIOLATED)\)", re.M)
_POWER = re.compile(r"^Total\s+([0-9.eE+-]+)\s+([0-9.eE+-]+)\s+([0-9.eE+-]+)\s+([0-9.eE+-]+)",
                    re.M)
#: Printed by the catch wrapper; the marker is built in Tcl so an echoed command never matches.
_TCL_ERROR = re.compile(r"^RTLFORGE-ERROR: (.*)$", re.M)


def _catch(body: str) -> str:
    """Run ``body`` so a Tcl error prints one ``RTLFORGE-ERROR:`` line instead of aborting."""
    return ("if {[catch {" + body + "} rtlforge_err]} "
            '{ puts "RTLFORGE[string toupper -error]: [string map {\\n { }} $rtlforge_err]" }')


class _StaProcess:
    """One long-lived sandboxed ``sta`` with the library loaded; used by one thread at a time."""

    _ids = itertools.count()

    def __init__(self, runner: SandboxRunner, liberty: Path, *, timeout: float,
                 max_queries: int) -> None:
        self.runner = runner
        self.liberty = liberty
        self.timeout = timeout
        self.max_queries = max_queries
        self.queries = 0
        self.proc: subprocess.Popen[bytes] | None = None
        self._workspace = runner.workspace(prefix="rtlforge-sta-")
        self.workdir = self._workspace.__enter__()

    def _start(self) -> None:
        # cpu_s caps the lifetime; recycling after max_queries keeps us well inside it.
        limits = self.runner.limits.model_copy(update={"timeout_s": self.timeout,
                                                       "cpu_s": 3600})
        self.proc = self.runner.spawn(["sta", "-no_splash", "-no_init"], self.workdir,
                                      limits=limits, ro_paths=[self.liberty], tool=STA)
        self.queries = 0
        out = self._exchange(f"read_liberty {{{self.liberty}}}", timeout=max(self.timeout, 120))
        error = _TCL_ERROR.search(out)
        if error:
            self.stop()  # the library's fault, not any design's: every query would fail
            raise LibertyError(f"sta cannot read {self.liberty.name}: {error.group(1)}")

    def stop(self) -> None:
        if self.proc is not None:
            SandboxRunner.kill(self.proc)
            self.proc = None

    def close(self) -> None:
        self.stop()
        self._workspace.__exit__(None, None, None)

    def _exchange(self, body: str, *, timeout: float) -> str:
        assert self.proc is not None and self.proc.stdin is not None
        assert self.proc.stdout is not None
        tag = next(self._ids)
        sentinel = f"@@RTLFORGE-{tag}@@".encode()
        payload = (_catch(body) + f'\nputs "@@RTLFORGE-[expr {{{tag}}}]@@"\n'
                   "flush stdout\n")
        try:
            self.proc.stdin.write(payload.encode())
            self.proc.stdin.flush()
        except OSError as exc:
            self.stop()
            raise _StaDied(f"sta is gone: {exc}") from exc
        deadline = time.monotonic() + timeout
        buf = bytearray()
        fd = self.proc.stdout.fileno()
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while sentinel not in buf:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    self.stop()
                    raise PPATimeoutError(f"sta ran past {timeout:g} s", stage="sta",
                                          log=buf.decode(errors="replace"))
                if not sel.select(timeout=min(remaining, 1.0)):
                    continue
                chunk = os.read(fd, 65536)
                if not chunk:
                    self.stop()
                    raise _StaDied(buf.decode(errors="replace"))
                buf += chunk
                if len(buf) > self.runner.limits.output_bytes * 8:
                    self.stop()
                    raise PPAError("sta output flood", stage="sta")
        return buf[: buf.index(sentinel)].decode(errors="replace")

    def query(self, body: str, netlist: str) -> str:
        """Read ``netlist`` (text) and run ``body`` on it, both from files in sta's own
        workspace (sta reads stdin a line at a time; its jail sees nothing else)."""
        self.runner.put(self.workdir, [SourceFile(name=_STA_NETLIST, content=netlist)],
                        role="netlist")
        self.runner.put(self.workdir, [SourceFile(name=_STA_SCRIPT, content=body + "\n")],
                        role="trusted")
        return self._query(f"source {{{self.workdir / _STA_SCRIPT}}}")

    def _query(self, body: str) -> str:
        if self.proc is not None and self.queries >= self.max_queries:
            self.stop()  # old netlists accumulate in sta's memory: start afresh now and then
        for attempt in (0, 1):
            try:
                if self.proc is None or self.proc.poll() is not None:
                    self.stop()
                    self._start()
                self.queries += 1
                return self._exchange(body, timeout=self.timeout)
            except _StaDied as exc:
                if attempt:  # died twice on the same design: blame the design
                    raise PPAError("sta crashed on this netlist", stage="sta",
                                   log=str(exc)) from None
        raise AssertionError("unreachable")


class _StaDied(Exception):
    """The persistent sta exited mid-query (crash or CPU limit); retried once on a fresh one."""




class YosysStaPPA(_YosysFlow):
    """Full flow: yosys mapping + ``stat -liberty`` area, OpenSTA delay and power.

    ``delay_ns`` is the worst data arrival time: input-to-output for combinational designs (under
    a virtual clock), register-to-register or I/O for sequential ones. That is what bounds the
    clock period, not the latency of an operation: pass ``cycles=N`` to :meth:`estimate` and
    ``details["latency_ns"]`` gives ``N * delay_ns``. Power is OpenSTA's ``report_power`` under
    one global ``activity`` (toggles per clock on every net) at ``period_ns``.
    """

    name: ClassVar[str] = "yosys-sta"
    tools: ClassVar[tuple[ToolSpec, ...]] = (YOSYS, YOSYS_ABC, STA)

    def __init__(self, *, liberty: str | Path | None = None,
                 dont_use: Sequence[str] | None = None, activity: float = 0.1,
                 period_ns: float = 10.0, input_transition_ns: float = 0.05,
                 output_load_pf: float = 0.005, persistent: bool = True,
                 timeout: float = 300.0, sta_timeout: float = 60.0, max_queries: int = 500,
                 flatten: bool = True, yosys: str = "auto", max_jobs: int = 2000) -> None:
        """Args:
            activity: toggles per clock period on every net, for ``report_power`` (0 to 2].
            period_ns: the clock period (or the virtual clock's, for combinational designs).
            input_transition_ns: the slew set on every input.
            output_load_pf: the load set on every output.
            persistent: keep one OpenSTA process per thread between designs (False starts one
                per design).
            sta_timeout: wall-clock seconds for one OpenSTA query.
            max_queries: designs one persistent OpenSTA answers before it is restarted.

        The other options are :class:`_YosysFlow`'s (yosys-abc's).
        """
        super().__init__(liberty=liberty, dont_use=dont_use, timeout=timeout, flatten=flatten,
                         yosys=yosys, max_jobs=max_jobs)
        if not 0 < activity <= 2:
            raise ValueError(f"activity is toggles per clock period, in (0, 2]: {activity!r}")
        for key, value in (("period_ns", period_ns), ("input_transition_ns", input_transition_ns),
                           ("output_load_pf", output_load_pf)):
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"{key} must be a positive number, not {value!r}")
        self.activity = activity
        self.period_ns = period_ns
        self.input_transition_ns = input_transition_ns
        self.output_load_pf = output_load_pf
        self.persistent = persistent
        self.sta_timeout = sta_timeout
        self.max_queries = max_queries

    def __enter__(self) -> YosysStaPPA:
        return self

    def cache_key(self) -> dict[str, Any]:
        return {**super().cache_key(), "activity": self.activity, "period_ns": self.period_ns,
                "input_transition_ns": self.input_transition_ns,
                "output_load_pf": self.output_load_pf}

    # ------------------------------------------------------------------ constraints

    def _pick_clock(self, synth: _Synth, clock: str | None) -> str | None:
        """The clock port(s), comma-separated: ``clock`` (a task's hint or the caller's), else
        the first 1-bit input with a usual clock name, else, for a sequential design only,
        every 1-bit input whose name reads as a clock (``wclk``, ``clk_a``: designs with
        several clock domains). None: combinational, timed under a virtual clock."""
        names = {name: width for name, width in synth.inputs}
        if clock is not None:
            picked = [c.strip() for c in clock.split(",") if c.strip()]
            if not picked:
                raise ValueError(f"clock names no port: {clock!r}")
            for name in picked:
                _check_identifier(name, "clock")
                if name not in names:
                    raise PPAError(f"clock port {name!r} is not an input of the design "
                                   f"(inputs: {sorted(names)})", stage="sta")
            return ",".join(dict.fromkeys(picked))
        for name, width in synth.inputs:
            if width == 1 and name.lower() in CLOCK_NAMES:
                return name
        if not synth.flops:
            return None
        found = [name for name, width in synth.inputs
                 if width == 1 and _CLOCK_LIKE.fullmatch(name.lower())
                 and not _NOT_A_CLOCK.search(name.lower())]
        if found:
            return ",".join(found)
        raise PPAError("sequential design with no recognisable clock port (looked for "
                       f"{', '.join(CLOCK_NAMES)} and names like wclk or clk_a among its 1-bit "
                       f"inputs {sorted(n for n, w in synth.inputs if w == 1)}); name it with "
                       "--clock NAME (several: --clock A,B) or the task's metadata "
                       "ppa_clock", stage="sta")

    def sta_commands(self, netlist: Path, top: str, clock: str | None, period_ns: float) -> str:
        """The Tcl that times and powers one linked netlist (library units throughout)."""
        units = self.liberty[1].units
        period = units.to_lib_time(period_ns)
        clocks = clock.split(",") if clock is not None else []
        if not clocks:
            clk, inputs = _VIRTUAL_CLOCK, "[all_inputs]"
            make_clock = f"create_clock -name {clk} -period {period:g}"
        else:
            ports = " ".join(clocks)
            clk, inputs = clocks[0], f"[delete_from_list [all_inputs] [get_ports {{{ports}}}]]"
            make_clock = "; ".join(f"create_clock -name {c} -period {period:g} "
                                   f"[get_ports {{{c}}}]" for c in clocks)
        # Several clocks: unrelated domains (cross-domain paths go through synchronisers and are
        # not timed); every input and output is constrained against each clock, so the paths
        # inside each domain are.
        extra = clocks[1:]
        groups = (f"set_clock_groups -asynchronous {' '.join(f'-group {{{c}}}' for c in clocks)}"
                  if extra else "")
        more_in = "".join(f"; set_input_delay 0 -clock {c} -add_delay $rtlforge_in"
                          for c in extra)
        more_out = "".join(f"; set_output_delay 0 -clock {c} -add_delay $rtlforge_out"
                           for c in extra)
        return "\n".join(line for line in (
            f"read_verilog {{{netlist}}}",
            f"link_design {top}",
            make_clock,
            groups,
            f"set rtlforge_in {inputs}",
            "if {[llength $rtlforge_in]} { set_input_delay 0 -clock "
            f"{clk} $rtlforge_in{more_in}; set_input_transition "
            f"{units.to_lib_time(self.input_transition_ns):g} $rtlforge_in }}",
            "set rtlforge_out [all_outputs]",
            f"if {{[llength $rtlforge_out]}} {{ set_output_delay 0 -clock {clk} $rtlforge_out"
            f"{more_out}; set_load {units.to_lib_cap(self.output_load_pf):g} $rtlforge_out }}",
            "report_checks -path_delay max -digits 6",
            f"set_power_activity -global -activity {self.activity:g}",
            "report_power -digits 6",
        ) if line)

    # ------------------------------------------------------------------ running sta

    def _session(self, runner: SandboxRunner) -> _StaProcess:
        proc: _StaProcess | None = getattr(self._local, "proc", None)
        if proc is None or proc.runner is not runner:
            proc = _StaProcess(runner, self.liberty[0], timeout=self.sta_timeout,
                               max_queries=self.max_queries)
            with self._procs_lock:
                self._procs.append(proc)
            self._local.proc = proc
        return proc

    _unique = itertools.count()

    def _run_sta(self, synth: _Synth, top: str, clock: str | None, period_ns: float,
                 runner: SandboxRunner, workdir: Path) -> str:
        lib = self.liberty[0]
        if self.persistent:
            # A fresh module name per query: sta keeps every netlist it has read.
            unique = f"{top}__rtlforge{next(self._unique)}"
            text = re.sub(rf"^module\s+{re.escape(top)}\b", f"module {unique}",
                          synth.netlist_text, count=1, flags=re.M)
            session = self._session(runner)
            out = session.query(
                self.sta_commands(session.workdir / _STA_NETLIST, unique, clock, period_ns),
                text)
        else:
            runner.put(workdir, [SourceFile(name=synth.netlist.name,
                                            content=synth.netlist_text)], role="netlist")
            body = self.sta_commands(synth.netlist, top, clock, period_ns)
            runner.put(workdir, [SourceFile(
                name=_STA_SCRIPT,
                content=f"read_liberty {{{lib}}}\n{_catch(chr(10) + body + chr(10))}\nexit\n")],
                role="trusted")
            run = runner.run(["sta", "-no_splash", "-no_init", "-exit", _STA_SCRIPT],
                             cwd=workdir, timeout=self.sta_timeout, ro_paths=[lib], tool=STA)
            if run.timed_out:
                raise PPATimeoutError(f"sta ran past {self.sta_timeout:g} s", stage="sta",
                                      log=run.output)
            out = run.output
            if not run.ok and not _TCL_ERROR.search(out):
                raise PPAError(f"sta failed (exit {run.returncode})", stage="sta", log=out)
        error = _TCL_ERROR.search(out)
        if error:
            raise PPAError(f"sta: {error.group(1).strip()}", stage="sta", log=out)
        return out

    def estimate(self, candidate: Candidate, top: str, runner: SandboxRunner, *,
                 clock: str | None = None, period_ns: float | None = None,
                 cycles: int | None = None) -> PPAResult:
        _, info = self.liberty
        start = time.perf_counter()
        sta_tool = find_tool(STA)  # fail fast (ToolMissingError) before synthesising
        with runner.workspace(prefix="rtlforge-ppa-") as workdir:
            synth = self._synthesise(candidate, top, runner, workdir, period_ns)
            picked = self._pick_clock(synth, clock)
            period = period_ns if period_ns is not None else self.period_ns
            t_sta = time.perf_counter()
            out = self._run_sta(synth, top, picked, period, runner, workdir)
            sta_seconds = time.perf_counter() - t_sta
        # One path per path group (clock, async recovery/removal, ...): the worst is the largest
        # arrival. The slack section repeats each arrival negated, which max() passes over.
        arrivals = [float(v) for v in _ARRIVAL.findall(out)]
        slacks = [float(v) for v, _ in _SLACK.findall(out)]
        power = _POWER.search(out)
        if not arrivals or power is None:
            raise PPAError("OpenSTA found no timing path or power figure (is the logic "
                           "constant or disconnected?)", stage="sta", log=out)
        scale = info.units.time_ns
        delay_ns = max(arrivals) * scale
        # report_power prints watts whatever the library's units (checked against leakage).
        internal, switching, leakage, total = (float(g) * 1e3 for g in power.groups())
        _finite_positive(area_um2=synth.area_um2, delay_ns=delay_ns, power_mw=total)
        details = self._details(
            synth, clock=picked or _VIRTUAL_CLOCK, virtual_clock=picked is None,
            period_ns=period, activity=self.activity,
            slack_ns=min(slacks) * scale if slacks else None,
            power_breakdown_mw={"internal": internal, "switching": switching,
                                "leakage": leakage},
            power_kind="total", delay_source="opensta arrival",
            input_transition_ns=self.input_transition_ns, output_load_pf=self.output_load_pf,
            sta_mode="persistent" if self.persistent else "oneshot",
            seconds={"synth": synth.seconds, "sta": sta_seconds,
                     "total": time.perf_counter() - start},
        )
        if cycles is not None:
            if cycles < 1:
                raise ValueError(f"cycles must be >= 1, not {cycles}")
            details.update(cycles=cycles, latency_ns=cycles * delay_ns)
        return PPAResult(
            area_um2=synth.area_um2, delay_ns=delay_ns, power_mw=total, cells=synth.cells,
            liberty=_liberty_label(self.liberty_source, info),
            tools=tuple(t for t in (synth.tool, sta_tool) if t is not None), details=details,
        )


# ---------------------------------------------------------------------------------- plugin

ESTIMATORS: dict[str, type[_YosysFlow]] = {YosysStaPPA.name: YosysStaPPA,
                                           YosysAbcPPA.name: YosysAbcPPA}


@hookimpl
def register_ppa_estimators(register: Register) -> None:
    register(YosysStaPPA)
    register(YosysAbcPPA)


def _read_design(path: Path) -> str:
    import click

    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise click.UsageError(f"{path} is not a UTF-8 text file") from exc


def _check_top(files: Sequence[SourceFile], top: str) -> None:
    """A --top that no file declares is a usage error now, not a yosys log later."""
    import click

    from rtlforge.eda.modules import scan_modules

    scans = [scan_modules(f.content) for f in files]
    if not all(scan.ok for scan in scans):
        return  # a text the scanner cannot read: yosys has the last word
    declared = [name for scan in scans for name in scan.declared]
    names = ", ".join(f.name for f in files)
    if not declared:
        raise click.UsageError(f"no module declaration found in {names}")
    if top not in declared:
        raise click.UsageError(f"--top {top!r}: no such module in {names} "
                               f"(declared: {', '.join(declared)})")


@hookimpl
def register_commands(cli: Any) -> None:
    import click

    @cli.command(name="ppa")
    @click.argument("designs", nargs=-1, required=True,
                    type=click.Path(exists=True, dir_okay=False, path_type=Path))
    @click.option("--top", required=True, help="Top module.")
    @click.option("--liberty", type=click.Path(exists=True, dir_okay=False, path_type=Path),
                  help="Liberty file (.lib or .lib.gz); default: the bundled generic library.")
    @click.option("--clock", help="Clock port, or several comma-separated (default: "
                  "clk/clock/clk_i... if present, else clock-like names such as wclk,rclk).")
    @click.option("--period", type=click.FloatRange(min=0, min_open=True),
                  help="Clock period in ns (default 10; also the abc -D target when given).")
    @click.option("--estimator", type=click.Choice(sorted(ESTIMATORS)), default="yosys-sta",
                  show_default=True)
    @click.option("--activity", type=click.FloatRange(min=0, max=2, min_open=True),
                  default=0.1, show_default=True, help="Global switching activity (yosys-sta).")
    @click.option("--yosys", "yosys_backend", type=click.Choice(YOSYS_BACKENDS), default="auto",
                  show_default=True,
                  help="pyosys: the in-jail pyosys worker; binary: the yosys executable; "
                       "auto: pyosys when installed.")
    @click.option("--timeout", type=click.FloatRange(min=0.1), default=300.0, show_default=True)
    @click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
    def ppa(designs: tuple[Path, ...], top: str, liberty: Path | None, clock: str | None,
            period: float | None, estimator: str, activity: float, yosys_backend: str,
            timeout: float, as_json: bool) -> None:
        """Area (um^2), critical-path delay (ns) and power (mW) of DESIGN files."""
        import json
        import sys

        from rtlforge.cmdline import EXIT_INFRA, EXIT_NOT_PASSED
        from rtlforge.core.models import SourceFile

        try:
            files = tuple(SourceFile(name=p.name, content=_read_design(p)) for p in designs)
            _check_top(files, top)
            candidate = Candidate(files=files)
            options: dict[str, Any] = {"liberty": liberty, "timeout": timeout,
                                       "yosys": yosys_backend}
            if estimator == "yosys-sta":
                options.update(activity=activity, persistent=False)
            est = ESTIMATORS[estimator](**options)
            est.liberty  # noqa: B018 - a bad liberty file is a usage error, reported now
        except (ValueError, UnicodeDecodeError, LibertyError) as exc:
            raise click.UsageError(str(exc)) from exc
        try:
            result = est.estimate(candidate, top, SandboxRunner(Limits(timeout_s=timeout)),
                                  clock=clock, period_ns=period)
        except RtlforgeError as exc:
            if is_infra(exc):  # tool missing, sandbox down: nothing is known about the design
                click.echo(f"error: {exc}", err=True)
                sys.exit(EXIT_INFRA)
            stage, log = (exc.stage, exc.log) if isinstance(exc, PPAError) else (None, "")
            message = str(exc)
            if as_json:
                click.echo(json.dumps({"error": message, "stage": stage}))
            else:
                # the message carries the tool's error lines; the whole log (banner and all)
                # only with -v
                click.echo(f"error: {message}", err=True)
                if log and click.get_current_context().find_root().params.get("verbose"):
                    click.echo(log[-2000:], err=True)
            sys.exit(EXIT_NOT_PASSED)
        summary = {
            "area_um2": result.area_um2, "delay_ns": result.delay_ns,
            "power_mw": result.power_mw, "cells": result.cells, "liberty": result.liberty,
            "estimator": estimator, "units": result.details["units"],
            "details": result.details, "tools": [t.model_dump() for t in result.tools],
        }
        if as_json:
            click.echo(json.dumps(summary))
            return
        click.echo(f"area   {result.area_um2:12.3f} um^2   ({result.cells} cells)")
        click.echo(f"delay  {result.delay_ns:12.4f} ns")
        click.echo(f"power  {result.power_mw:12.6f} mW   ({result.details['power_kind']})")
        click.echo(f"liberty {result.liberty}")

