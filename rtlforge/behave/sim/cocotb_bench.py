"""BEHAVE-Sim's cocotb backend: Python drives the design through cocotb, on Icarus.

The issue names cocotb as the optional backend and the baseline the file-driven testbench is
measured against. Here the testbench's logic runs as a cocotb test (:mod:`.cocotb_tb`, copied
into the run directory) that reads the same stimulus files and writes the same transaction log,
so the verdict comes from the same judge; only who drives the pins differs (Python through VPI,
three timer callbacks a cycle, instead of compiled Verilog).

Like the cocotb validator, it runs the simulator from a small driver script in a separate
Python process, started through the sandbox: once to build (Icarus compiles the design alone,
gated as a design) and once to test. cocotb needs Python in the jail (its runtime is bound for
runs that start the interpreter) and Icarus's ``vvp`` loading cocotb's VPI library.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from rtlforge.behave.sim.protocols import Protocol
from rtlforge.behave.sim.run import SimRun, design_files, icarus_build_failure, read_run_log
from rtlforge.behave.sim.stimulus import BACKPRESSURE_CYCLES
from rtlforge.behave.sim.task import BehaveTask, reset_input_bits
from rtlforge.behave.sim.testbench import (
    GAP_BITS,
    LOG_FILE,
    MAX_VIOLATION_LINES,
    STIM_FILE,
    TestbenchPlan,
    bp_file,
    clock_start_values,
    cycle_schedule,
    drive_offset,
)
from rtlforge.core.errors import ToolMissingError
from rtlforge.core.models import Candidate, SourceFile
from rtlforge.eda.stages import compiled_sources
from rtlforge.eda.tools import ICARUS, PYTHON, VVP
from rtlforge.sandbox import runfiles
from rtlforge.sandbox.jail import interpreter
from rtlforge.sandbox.runner import SandboxRunner, find_tool

__all__ = ["bench_config", "simulate_cocotb"]

TEST_MODULE = "behave_cocotb_tb"
CONFIG = "behave_cocotb.json"  # as in cocotb_tb.py
ERROR_FILE = "behave_cocotb_error.txt"
PORT_FILE = "behave_cocotb_ports.txt"
DRIVER = "behave_cocotb_driver.py"
DRIVER_CONFIG = "behave_cocotb_run.json"
BUILD_DIR = ".behave-cocotb-build"
RESULTS = "behave_cocotb_results.xml"
#: Driver exit codes (the driver's own, never the simulator's).
BUILD_FAILED, NO_COCOTB = 3, 5

_DRIVER_SOURCE = f'''\
"""Written by rtlforge: build or run BEHAVE-Sim's cocotb test (argv: config.json build|test)."""
import json
import shutil
import sys
import tempfile
import traceback
from pathlib import Path

cfg = json.loads(Path(sys.argv[1]).read_text())
# Run as `python -I` from the harness directory: the run directory is never on sys.path (here
# or, through cocotb's PYTHONPATH, in the simulator); the test module comes from the harness.
sys.path[:0] = [cfg["harness"], *cfg["pythonpath"]]
try:
    from cocotb_tools.runner import get_runner
    runner = get_runner("icarus")
except Exception:
    traceback.print_exc()
    sys.exit({NO_COCOTB})
if sys.argv[2] == "build":
    try:
        runner.build(sources=cfg["sources"], hdl_toplevel=cfg["toplevel"],
                     build_dir=cfg["build_dir"], always=True, timescale=("1ns", "1ps"))
    except (Exception, SystemExit):
        traceback.print_exc()
        sys.exit({BUILD_FAILED})
    sys.exit(0)
try:
    runner.test(test_module=cfg["module"], hdl_toplevel=cfg["toplevel"],
                build_dir=cfg["build_dir"], test_dir=cfg["harness"],
                extra_env={{"BEHAVE_RUN_DIR": cfg["workdir"]}},
                hdl_toplevel_lang="verilog", results_xml=cfg["results"],
                timescale=("1ns", "1ps"))
except (Exception, SystemExit):
    traceback.print_exc()  # the log file says what happened
sys.exit(0)
'''


def bench_config(task: BehaveTask, plan: TestbenchPlan) -> dict[str, Any]:
    """What the cocotb test needs to drive ``task`` as ``plan``'s Verilog testbench does."""
    data = task.data_input
    static = {e.name for i in task.static_inputs for e in i.endpoints}
    zero = [e.pin for i in task.interfaces if i.direction == "input" for e in i.endpoints]
    for iface in task.interfaces:
        for pin, port in iface.pins.items():
            if (iface.direction == "input") != (pin == "ready"):
                zero.append(port)
    reset = task.reset
    return {
        "clock": task.clock if task.clock and not task.combinational else None,
        "reset": None if reset is None else {
            "signal": reset.signal, "active": 0 if reset.active == "low" else 1,
            "cycles": reset.cycles,
            # [reset] inputs: (pin, bits) driven while reset is active
            "held": [(e.pin, bits) for e, bits in reset_input_bits(task)],
            # [reset] extra: further reset ports, (pin, active level)
            "extra": [(x.signal, int(x.active == "high")) for x in reset.extra]},
        # the testbench's cycle (testbench.cycle_schedule) and the further clocks' levels
        "schedule": [e.model_dump() for e in cycle_schedule(task)],
        "drive_offset": drive_offset(task),
        "clocks": [list(c) for c in clock_start_values(task)],
        "input": {"name": data.name, "protocol": data.protocol.value,
                  "valid": data.pins.get("valid") or data.pins.get("start"),
                  "ready": data.pins.get("ready")
                  if data.protocol is Protocol.READY_VALID else None},
        "endpoints": [(e.pin, e.width, e.name in static) for e in task.input_endpoints],
        "data_width": sum(e.width for e in task.input_endpoints),
        "gap_bits": GAP_BITS,
        "outputs": [{
            "name": o.name, "protocol": o.protocol.value, "sampled": o.sampled,
            "pins": [(e.pin, e.width) for e in o.endpoints],
            "valid": o.pins.get("valid") or o.pins.get("done"),
            "ready": o.pins.get("ready") if o.protocol is Protocol.READY_VALID else None,
            "bp_file": bp_file(o) if o.protocol is Protocol.READY_VALID else None,
        } for o in task.outputs],
        "zero_pins": zero,
        "drain": plan.drain_cycles, "stall": plan.stall_limit,
        "bp_cycles": BACKPRESSURE_CYCLES, "max_violations": MAX_VIOLATION_LINES,
        "stim_file": STIM_FILE, "log_file": LOG_FILE,
    }


def _cocotb_version() -> str:
    from importlib import metadata

    try:
        return metadata.version("cocotb")
    except metadata.PackageNotFoundError:
        raise ToolMissingError("cocotb>=2", "the cocotb backend needs cocotb 2 in this "
                               "Python: pip install 'cocotb>=2'") from None


def simulate_cocotb(task: BehaveTask, plan: TestbenchPlan, candidate: Candidate,
                    runner: SandboxRunner, *, timeout_s: float = 120.0) -> SimRun:
    """Build ``candidate`` with Icarus through cocotb's runner and drive it from Python with
    ``plan``'s stimulus; sandbox and tool errors propagate as in :func:`~.run.simulate`."""
    version = _cocotb_version()
    if not version.split(".")[0].isdigit() or int(version.split(".")[0]) < 2:
        raise ToolMissingError("cocotb>=2", f"cocotb {version} is installed; the cocotb "
                               "backend needs cocotb 2")
    find_tool(ICARUS)
    find_tool(VVP)
    bench = (Path(__file__).with_name("cocotb_tb.py")).read_text(encoding="utf-8")
    harness = Path(tempfile.mkdtemp(prefix="rtlforge-behave-harness-"))
    try:
        harness.chmod(0o755)
        runfiles.write_new(harness, f"{TEST_MODULE}.py", bench)
        runfiles.write_new(harness, DRIVER, _DRIVER_SOURCE)
        return _simulate(task, plan, candidate, runner, harness, timeout_s)
    finally:
        shutil.rmtree(harness, ignore_errors=True)


def _simulate(task: BehaveTask, plan: TestbenchPlan, candidate: Candidate,
              runner: SandboxRunner, harness: Path, timeout_s: float) -> SimRun:
    ours = (CONFIG, ERROR_FILE, PORT_FILE, DRIVER, DRIVER_CONFIG, BUILD_DIR, RESULTS,
            f"{TEST_MODULE}.py")
    with runner.workspace(prefix="rtlforge-behave-cocotb-") as workdir:
        design = design_files(plan, candidate, ours)
        runner.put(workdir, [SourceFile(name=n, content=c) for n, c in plan.files.items()],
                   role="trusted")
        design = runner.put(workdir, design, role="design", readable=[f.name for f in design])
        run_config = {
            "workdir": str(workdir), "module": TEST_MODULE, "toplevel": task.top,
            "sources": [str(workdir / s) for s in compiled_sources(f.name for f in design)],
            "build_dir": str(workdir / BUILD_DIR), "results": str(workdir / RESULTS),
            "harness": str(harness), "pythonpath": runfiles.host_pythonpath(workdir),
        }
        runner.put(workdir, [
            SourceFile(name=CONFIG, content=json.dumps(bench_config(task, plan)))],
            role="trusted")
        runfiles.write_new(harness, DRIVER_CONFIG, json.dumps(run_config))
        driver = [interpreter(), "-I", str(harness / DRIVER), str(harness / DRIVER_CONFIG)]
        start = time.perf_counter()
        build = runner.run([*driver, "build"], cwd=workdir, timeout=timeout_s, tool=PYTHON,
                           ro_paths=[harness])
        compile_s = time.perf_counter() - start
        if build.returncode == NO_COCOTB:
            raise ToolMissingError("cocotb>=2", "cocotb_tools.runner is not importable in the "
                                   f"sandboxed Python: {build.output[-300:]}")
        failed = icarus_build_failure(build, design, timeout_s, compile_s)
        if failed is not None:
            return failed
        start = time.perf_counter()
        test = runner.run([*driver, "test"], cwd=workdir, timeout=timeout_s, tool=PYTHON,
                          ro_paths=[harness])
        sim_s = time.perf_counter() - start
        if test.timed_out:
            return SimRun(status="timeout", compile_s=compile_s, sim_s=sim_s,
                          message=f"the cocotb simulation did not finish within {timeout_s:g} s")
        port = runfiles.read_text(workdir, PORT_FILE, 64 * 1024, truncate=True)
        if port is not None:
            return SimRun(status="compile_error", compile_s=compile_s, sim_s=sim_s,
                          message=port[:500])
        crash = runfiles.read_text(workdir, ERROR_FILE, 1024 * 1024, truncate=True)
        if crash is not None:
            return SimRun(status="crashed", compile_s=compile_s, sim_s=sim_s,
                          message="the cocotb testbench failed: " + crash[-1500:])
        log = read_run_log(workdir, test.output)
        if isinstance(log, str):
            return SimRun(status="crashed", compile_s=compile_s, sim_s=sim_s, message=log)
        return SimRun(status="ok", log=log, compile_s=compile_s, sim_s=sim_s,
                      message=test.output[-1000:])
