"""Run a design in the generated testbench through the sandbox and read its transaction log.

The design is untrusted: it is put into the run directory with the gate's ``design`` role
(readable: its own files only), and checked not to reach into the testbench. The testbench,
stimulus and backpressure files are ours: the testbench is gated as a testbench (its
``$readmemh``/``$fopen`` name only the run-directory files listed as available), the hex files
are data we generated, written as ``trusted`` (no HDL text in them). Icarus compiles once and
``vvp`` runs once per check; the log is a file only the testbench writes (the gate refuses file
I/O in a design), so what it says is what the testbench saw.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

from rtlforge.behave.sim.testbench import LOG_FILE, TB_FILE, TB_TOP, TestbenchPlan
from rtlforge.core.errors import InvalidSourceError, SandboxError, SecurityViolation
from rtlforge.core.models import Candidate, Feedback, SourceFile
from rtlforge.eda.stages import (
    SIM_IMAGE,
    compiled_sources,
    icarus_compile_verdict,
    icarus_flags,
    read_dump,
)
from rtlforge.eda.tools import ICARUS, VVP
from rtlforge.sandbox import runfiles
from rtlforge.sandbox.runner import SandboxRunner, ToolRun

__all__ = [
    "SIM_BACKENDS",
    "LogEvent",
    "RunLog",
    "SimBackend",
    "SimRun",
    "design_files",
    "parse_log",
    "put_run_files",
    "read_run_log",
    "simulate",
]

#: The simulators a check can run on (``check_rtl(backend=...)``, ``--backend``).
SimBackend = Literal["icarus", "verilator", "cocotb"]
SIM_BACKENDS: tuple[str, ...] = get_args(SimBackend)

#: The log is read up to this size; a longer one is cut (and the run judged on what is there).
LOG_LIMIT = 64 * 1024 * 1024


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Accept(_Frozen):
    cycle: int
    index: int
    stalled: int


class OutputEvent(_Frozen):
    cycle: int
    iface: str
    hex: str
    first: int
    stalled: int


class LogEvent(_Frozen):
    cycle: int
    iface: str
    kind: str


class RunLog(_Frozen):
    accepts: tuple[Accept, ...] = ()
    outputs: tuple[OutputEvent, ...] = ()
    samples: dict[str, dict[int, str]] = Field(default_factory=dict)
    resets: tuple[int, ...] = ()
    violations: tuple[LogEvent, ...] = ()
    watchdog: int | None = None
    first_offer: int | None = None  # cycle the first input transaction was offered
    ended: bool = False
    cycles: int = 0
    truncated: bool = False


class SimRun(_Frozen):
    """What one simulation gave: a compile problem, a timeout, or a log."""

    status: str  # ok | compile_error | timeout | crashed
    log: RunLog | None = None
    feedback: tuple[Feedback, ...] = ()
    message: str = ""
    compile_s: float = 0.0
    sim_s: float = 0.0
    #: The compiled simulation came from a build cache (no compile in this check).
    cached: bool = False


def parse_log(text: str, *, truncated: bool = False) -> RunLog:
    """The events of a transaction log (format in :mod:`.testbench`); junk lines skipped."""
    accepts: list[Accept] = []
    outputs: list[OutputEvent] = []
    samples: dict[str, dict[int, str]] = {}
    resets: list[int] = []
    violations: list[LogEvent] = []
    watchdog = first_offer = None
    ended = False
    cycle = 0
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 2 or not parts[0].isdigit():
            continue
        cycle = int(parts[0])
        tag = parts[1]
        try:
            if tag == "A" and len(parts) == 4:
                accepts.append(Accept(cycle=cycle, index=int(parts[2]), stalled=int(parts[3])))
            elif tag == "O" and len(parts) == 6:
                outputs.append(OutputEvent(cycle=cycle, iface=parts[2], hex=parts[3].lower(),
                                           first=int(parts[4]), stalled=int(parts[5])))
            elif tag == "S" and len(parts) == 4:
                samples.setdefault(parts[2], {})[cycle] = parts[3].lower()
            elif tag == "R":
                resets.append(cycle)
            elif tag == "V" and len(parts) >= 4:
                violations.append(LogEvent(cycle=cycle, iface=parts[2], kind=parts[3]))
            elif tag == "W":
                watchdog = cycle
            elif tag == "F" and first_offer is None:
                first_offer = cycle
            elif tag == "E":
                ended = True
        except ValueError:
            continue
    return RunLog(accepts=tuple(accepts), outputs=tuple(outputs), samples=samples,
                  resets=tuple(resets), violations=tuple(violations), watchdog=watchdog,
                  first_offer=first_offer, ended=ended, cycles=cycle, truncated=truncated)


def design_files(plan: TestbenchPlan, candidate: Candidate, reserved: tuple[str, ...] = (),
                 ) -> tuple[SourceFile, ...]:
    """The design's files renamed where they would overwrite one of ours (or ``reserved``)."""
    taken = {TB_FILE, LOG_FILE, SIM_IMAGE, *plan.files, *reserved}
    names = runfiles.design_file_names([f.name for f in candidate.files], taken)
    return tuple(f if new == f.name else SourceFile(name=new, content=f.content)
                 for f, new in zip(candidate.files, names, strict=True))


def put_run_files(plan: TestbenchPlan, candidate: Candidate, runner: SandboxRunner,
                  workdir: Path, *, reserved: tuple[str, ...] = ()) -> tuple[SourceFile, ...]:
    """Put the stimulus, the testbench and the design into ``workdir``, each under its gate
    role, and check the design does not reach into the testbench; return the design files
    (renamed where a name is ours or in ``reserved``)."""
    design = design_files(plan, candidate, reserved)
    try:  # our stimulus: refused only when it is larger than a workspace file may be
        runner.put(workdir, [SourceFile(name=n, content=c) for n, c in plan.files.items()],
                   role="trusted")
    except InvalidSourceError as exc:
        raise SandboxError(f"the generated stimulus cannot be put into the run directory "
                           f"({exc}): use fewer transactions or narrower interfaces") from exc
    tb = SourceFile(name=TB_FILE, content=plan.text)
    try:  # ours, before the design's: a refusal here is our bug, never the design's fault
        runner.put(workdir, [tb], role="testbench", readable=[*plan.files, TB_FILE])
    except SecurityViolation as exc:
        raise SandboxError(f"the gate refused the generated testbench: {exc}") from exc
    design = runner.put(workdir, design, role="design", readable=[f.name for f in design])
    if not runner.unsafe_skip_gate:
        runner.gate.contained(design, [tb])
    return design


def read_run_log(workdir: Path, output: str) -> RunLog | str:
    """The run's transaction log, or why there is none (the simulator's last words)."""
    dump = read_dump(Path(workdir), LOG_FILE, LOG_LIMIT)
    if dump is None:
        return "the simulation wrote no transaction log: " + output[-1000:]
    return parse_log(dump[0], truncated=dump[1])


def icarus_build_failure(build: ToolRun, design: tuple[SourceFile, ...], timeout_s: float,
                         compile_s: float) -> SimRun | None:
    """The run's result when Icarus did not compile the design (the design's compile error,
    or a timeout), None when it did: the Icarus and cocotb backends judge a build alike."""
    texts = {f.name: f.content for f in design}
    verdict, feedback = icarus_compile_verdict(build, stage="behave-sim", files=texts,
                                               strict_sorry=False, timeout=timeout_s)
    if verdict.value == "pass":
        return None
    status = "timeout" if build.timed_out else "compile_error"
    return SimRun(status=status, feedback=tuple(feedback), compile_s=compile_s,
                  message=build.output[-2000:])


def early_end_run(sim: ToolRun, *, compile_s: float, sim_s: float, cached: bool = False,
                  ) -> SimRun:
    """The run of a simulation that compiled, ran and left no log: it ended before the
    testbench's first act (a design's ``$finish``/``$fatal`` at time 0, an output flood, a
    crash), the design's doing like any other early end, so an empty log, with how it ended."""
    why = ("flooded its output" if sim.output_overflow
           else f"was killed by signal {sim.signal}" if sim.signal is not None
           else f"exited with status {sim.returncode}")
    return SimRun(status="ok", log=RunLog(), compile_s=compile_s, sim_s=sim_s, cached=cached,
                  message=f"the simulation {why} before the testbench opened its log: "
                          + sim.output[-1000:])


def simulate(plan: TestbenchPlan, candidate: Candidate, runner: SandboxRunner, *,
             timeout_s: float = 120.0) -> SimRun:
    """Compile and run ``candidate`` in ``plan``'s testbench; sandbox errors propagate (the
    caller turns infrastructure errors into ``infra_error`` and design errors into verdicts)."""
    with runner.workspace(prefix="rtlforge-behave-") as workdir:
        design = put_run_files(plan, candidate, runner, workdir)
        argv = ["iverilog", *icarus_flags(("implicit", "portbind")), "-s", TB_TOP, "-o",
                SIM_IMAGE, TB_FILE, *compiled_sources(f.name for f in design)]
        start = time.perf_counter()
        build = runner.run(argv, cwd=workdir, timeout=timeout_s, tool=ICARUS)
        compile_s = time.perf_counter() - start
        failed = icarus_build_failure(build, design, timeout_s, compile_s)
        if failed is not None:
            return failed
        start = time.perf_counter()
        sim = runner.run(["vvp", "-n", SIM_IMAGE], cwd=workdir, timeout=timeout_s, tool=VVP)
        sim_s = time.perf_counter() - start
        if sim.timed_out:
            return SimRun(status="timeout", compile_s=compile_s, sim_s=sim_s,
                          message=f"vvp did not finish within {timeout_s:g} s")
        log = read_run_log(workdir, sim.output)
        if isinstance(log, str):
            return early_end_run(sim, compile_s=compile_s, sim_s=sim_s)
        return SimRun(status="ok", log=log, compile_s=compile_s, sim_s=sim_s,
                      message=sim.output[-1000:])
