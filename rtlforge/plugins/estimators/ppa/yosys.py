"""The yosys run of every flow (a pyosys worker in the jail, or the binary) and ``yosys-abc``:
mapping onto the liberty and reading ABC's own ``stime`` delay, for screening and ranking."""

from __future__ import annotations

import contextlib
import functools
import importlib.metadata
import importlib.util
import json
import math
import os
import re
import selectors
import shutil
import threading
import time
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from rtlforge.core.errors import (
    InvalidSourceError,
    SandboxError,
    SecurityViolation,
    ToolMissingError,
)
from rtlforge.core.interfaces import PPAEstimator, PPAResult
from rtlforge.core.models import Candidate, SourceFile, ToolInfo, ToolSpec
from rtlforge.core.untrusted import load_json
from rtlforge.eda.liberty import (
    LibertyInfo,
    latch_techmap,
)
from rtlforge.eda.stages import compiled_sources
from rtlforge.eda.tools import YOSYS, YOSYS_ABC, YOSYS_MACROS
from rtlforge.plugins.estimators.ppa.errors import PPAError, PPATimeoutError
from rtlforge.plugins.estimators.ppa.liberty import _liberty_label, cell_leakage, resolve_liberty
from rtlforge.plugins.estimators.ppa.synthesis import (
    _AREA,
    _SEQUENTIAL,
    _STIME,
    _YOSYS_ERROR,
    _check_identifier,
    _finite_positive,
    _netlist_inputs,
    _no_cells,
    _split_concat_assigns,
    _stat_blocks,
    _Synth,
    _synth_failure,
    _unmapped_reason,
)
from rtlforge.sandbox import runfiles
from rtlforge.sandbox.jail import interpreter
from rtlforge.sandbox.runner import SandboxRunner, find_tool

if TYPE_CHECKING:
    import subprocess

_NETLIST = "rtlforge_netlist.v"
#: Largest log or netlist read back from a run directory (a run's files are capped at 256 MB).
_READ_LIMIT = 256 * 1024 * 1024



# ---------------------------------------------------------------------------------- estimators


#: ``yosys=`` choices: the in-jail pyosys worker, the ``yosys`` binary, or pyosys when installed.
YOSYS_BACKENDS = ("auto", "pyosys", "binary")
_WORKER_SCRIPT = Path(__file__).resolve().parents[3] / "eda" / "yosys_worker.py"
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
        self.proc = self.runner.spawn([interpreter(), "-I", str(_WORKER_SCRIPT)], self.workdir,
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
