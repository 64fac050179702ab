"""BEHAVE-Sim's Verilator backend: the same generated testbench, compiled once per design.

A Verilator build (Verilog to C++ to a binary) costs seconds, Icarus a few tens of
milliseconds; the verilated binary then runs a long stimulus many times faster than ``vvp``.
The testbench reads its stimulus and backpressure with ``$readmemh`` at run time, so a binary
built for a (testbench, design) pair serves every seed of the same stimulus size:
:class:`VerilatorBuilds` keeps binaries by the hash of the testbench text, the design files,
the Verilator version and the build flags, and a check with a cached binary only runs it.

Everything runs through the sandbox as the Icarus path does: every check puts the stimulus,
the testbench and the design into a workspace under their gate roles (on a cache hit too: a
binary built with the gate off is never a way around it), builds there on a miss and runs the
binary there, its cache directory bound read-only. Build failures are cached too (a design
Verilator rejects is rejected for every seed); timeouts and sandbox errors are not.

Verilator is two-state: X and Z do not exist in it, so the testbench's X monitors
(``x_data``, ``x_valid``, ``x_ready``) cannot fire. Uninitialised state and X assignments
start at seeded random values instead (``--x-initial unique``, ``--x-assign unique``), so a
design that forgets a reset still shows it, as value mismatches.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
import threading
import time
import weakref
from dataclasses import dataclass
from pathlib import Path

from rtlforge.behave.sim.run import SimRun, put_run_files, read_run_log
from rtlforge.behave.sim.testbench import TB_FILE, TB_TOP, TestbenchPlan
from rtlforge.core.errors import ToolMissingError
from rtlforge.core.models import Candidate, SourceFile
from rtlforge.eda.stages import compiled_sources, verilator_build_verdict
from rtlforge.eda.tools import GXX, MAKE, VERILATOR
from rtlforge.sandbox import runfiles
from rtlforge.sandbox.runner import SandboxRunner, find_tool

__all__ = ["Build", "VerilatorBuilds", "simulate_verilator"]

#: Where the build goes in its workspace; a dot-name no design file is renamed into.
BUILD_DIR = ".behave-verilator"
BINARY = "behave_sim"
_MAX_BINARY = 1024 * 1024 * 1024  # a built simulation image copied into the cache
#: Verilator 5 is the first with ``--timing`` (delays in the testbench) and ``--binary``.
MIN_MAJOR = 5
_RELEASE = re.compile(r"Verilator\s+(\d+)\.(\d+)")
_NEED = "verilator>=5.0 (--binary, --timing)"


def build_flags(jobs: int) -> list[str]:
    """The build's flags; part of the cache key (a change of flags is a new binary)."""
    return ["--binary", "--timing", "-j", str(jobs), "-Wno-fatal", "-Wno-lint", "-Wno-style",
            "--x-assign", "unique", "--x-initial", "unique", "--timescale", "1ns/1ps"]


class VerilatorBuilds:
    """Verilated (testbench, design) binaries kept by content, so that a design is compiled
    once and run on many stimuli. Thread-safe (different designs build in parallel, the same
    one once); pass one to every ``check_rtl`` that should share it.

    ``directory``: where binaries are kept (None: a private temporary directory, removed by
    :meth:`close`); ``builds`` and ``hits`` count compiles and reuses. ``verilator`` is the
    executable (a name on PATH or a path), ``jobs`` the parallel C++ compiles of one build,
    ``build_timeout_s`` the build's own wall-clock budget (None: the check's timeout).
    """

    def __init__(self, directory: str | Path | None = None, *, verilator: str = "verilator",
                 jobs: int = 2, build_timeout_s: float | None = None) -> None:
        if jobs < 1:
            raise ValueError(f"jobs must be at least 1, not {jobs}")
        self.verilator = verilator
        self.jobs = jobs
        self.build_timeout_s = build_timeout_s
        self._given = Path(directory).resolve() if directory is not None else None
        self._temp: list[str] = []  # the private directory, shared with the finalizer
        self._finalizer = weakref.finalize(self, _remove_dirs, self._temp)
        self._lock = threading.Lock()
        self._failed: dict[str, SimRun] = {}
        self._building: dict[str, threading.Lock] = {}
        self.builds = 0
        self.hits = 0

    def close(self) -> None:
        """Remove the private directory (a given ``directory`` is kept)."""
        with self._lock:
            _remove_dirs(self._temp)
            self._failed.clear()

    def __enter__(self) -> VerilatorBuilds:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def directory(self) -> Path:
        if self._given is not None:
            self._given.mkdir(parents=True, exist_ok=True)
            return self._given
        if not self._temp:
            self._temp.append(tempfile.mkdtemp(prefix="rtlforge-verilator-builds-"))
        return Path(self._temp[0]).resolve()

    def version(self) -> str:
        """The Verilator's version line; ToolMissingError if it is missing or older than 5
        (make and a C++ compiler are checked too: the build runs them)."""
        info = find_tool(VERILATOR.using(self.verilator))
        found = _RELEASE.search(info.version or "")
        if found is None or int(found[1]) < MIN_MAJOR:
            raise ToolMissingError(_NEED, f"{info.path or self.verilator} reports "
                                   f"{info.version!r}; BEHAVE-Sim's Verilator backend needs "
                                   f"Verilator 5 or later. {VERILATOR.hint}")
        find_tool(MAKE)
        find_tool(GXX)
        return info.version or ""

    def key(self, plan: TestbenchPlan, design: tuple[SourceFile, ...], version: str) -> str:
        text = json.dumps({"verilator": version, "flags": build_flags(self.jobs),
                           "testbench": plan.text,
                           "design": sorted((f.name, f.content) for f in design)})
        return hashlib.sha256(text.encode()).hexdigest()[:40]

    def build(self, plan: TestbenchPlan, design: tuple[SourceFile, ...],
              runner: SandboxRunner, workdir: Path, *, version: str,
              timeout_s: float) -> Build:
        """The binary for ``design`` (already put into ``workdir`` and gated, on every check:
        a cached build never skips the gate) in ``plan``'s testbench: from the cache, or built
        now in ``workdir``. One build per key at a time, so a second check of a design waits
        for the first one's binary instead of building it again."""
        key = self.key(plan, design, version)
        with self._lock:
            key_lock = self._building.setdefault(key, threading.Lock())
            target = self.directory / key / BINARY
        with key_lock:
            with self._lock:
                failed = self._failed.get(key)
                if failed is not None or target.is_file():
                    self.hits += 1
                    return Build(failure=failed, binary=None if failed else target,
                                 cached=True)
            built = self._compile(design, runner, workdir, key, target, timeout_s)
            with self._lock:
                self.builds += 1
                if built.failure is not None and built.failure.status == "compile_error":
                    self._failed[key] = built.failure
            return built

    def _compile(self, design: tuple[SourceFile, ...], runner: SandboxRunner, workdir: Path,
                 key: str, target: Path, timeout_s: float) -> Build:
        budget = self.build_timeout_s or timeout_s
        argv = [self.verilator, *build_flags(self.jobs), "--Mdir", BUILD_DIR, "-o", BINARY,
                "--top-module", TB_TOP, TB_FILE, *compiled_sources(f.name for f in design)]
        start = time.perf_counter()
        run = runner.run(argv, cwd=workdir, timeout=budget, tool=VERILATOR)
        seconds = time.perf_counter() - start
        texts = {f.name: f.content for f in design}
        verdict, feedback = verilator_build_verdict(run, stage="behave-sim", files=texts,
                                                    timeout=budget)
        built = workdir / BUILD_DIR / BINARY
        if verdict.value != "pass" or not built.is_file():
            status = "timeout" if run.timed_out else "compile_error"
            return Build(compile_s=seconds, failure=SimRun(
                status=status, feedback=tuple(feedback), compile_s=seconds,
                message=run.output[-2000:]))
        staging = Path(tempfile.mkdtemp(prefix=f"{key}.", dir=self.directory))
        image = runfiles.read_bytes(workdir, f"{BUILD_DIR}/{BINARY}", _MAX_BINARY)
        runfiles.write_new(staging, BINARY, image or b"")
        os.chmod(staging / BINARY, 0o755)
        try:
            os.replace(staging, target.parent)
        except OSError:  # another process stored the same build first: theirs serves
            shutil.rmtree(staging, ignore_errors=True)
        return Build(binary=target, compile_s=seconds)


@dataclass(frozen=True)
class Build:
    """A build's outcome: the binary, or the failure to report (compile error, timeout)."""

    binary: Path | None = None
    failure: SimRun | None = None
    compile_s: float = 0.0
    cached: bool = False


def _remove_dirs(dirs: list[str]) -> None:
    while dirs:
        shutil.rmtree(dirs.pop(), ignore_errors=True)


def simulate_verilator(plan: TestbenchPlan, candidate: Candidate, runner: SandboxRunner,
                       builds: VerilatorBuilds, *, timeout_s: float = 120.0,
                       x_seed: int = 1) -> SimRun:
    """Build ``candidate`` in ``plan``'s testbench with Verilator (or reuse the build) and run
    it; ``x_seed`` seeds the random values of uninitialised state. Sandbox and tool errors
    propagate as in :func:`~.run.simulate`."""
    version = builds.version()
    with runner.workspace(prefix="rtlforge-behave-vl-") as workdir:
        design = put_run_files(plan, candidate, runner, workdir, reserved=(BUILD_DIR,))
        build = builds.build(plan, design, runner, workdir, version=version,
                             timeout_s=timeout_s)
        if build.failure is not None:
            return build.failure.model_copy(update={"cached": build.cached,
                                                    "compile_s": build.compile_s})
        assert build.binary is not None
        start = time.perf_counter()
        sim = runner.run(["env", str(build.binary), "+verilator+rand+reset+2",
                          f"+verilator+seed+{max(1, x_seed)}"], cwd=workdir,
                         timeout=timeout_s, ro_paths=[build.binary.parent])
        sim_s = time.perf_counter() - start
        if sim.timed_out:
            return SimRun(status="timeout", sim_s=sim_s, compile_s=build.compile_s,
                          cached=build.cached, message="the verilated simulation did not "
                                                       f"finish within {timeout_s:g} s")
        log = read_run_log(workdir, sim.output)
        if isinstance(log, str):
            return SimRun(status="crashed", sim_s=sim_s, compile_s=build.compile_s,
                          cached=build.cached, message=log)
        return SimRun(status="ok", log=log, sim_s=sim_s, compile_s=build.compile_s,
                      cached=build.cached, message=sim.output[-1000:])
