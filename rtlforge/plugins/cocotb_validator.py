"""``cocotb``: run a task's cocotb (2.x) test module against the design.

The cocotb Python runner builds and runs the simulator from inside Python, and a test can hang
the simulator, call ``sys.exit`` or crash it. So the whole thing runs in a separate Python
process started through the sandboxed runner: a small driver script, once to build and once to
test, each under its own timeout.

The verdict comes only from the JUnit XML the cocotb regression manager writes, at a path named
with the run's nonce: the design shares the simulator's stdout and could print anything there.
"""

from __future__ import annotations

import json
import sys
import time
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path
from typing import Any, ClassVar

from rtlforge.core.feedback import make_feedback, parse_verilator
from rtlforge.core.hookspecs import Register, hookimpl
from rtlforge.core.interfaces import ValidationContext, Validator
from rtlforge.core.models import Feedback, StageResult, Task, ToolInfo, Verdict
from rtlforge.core.runner import ToolRun
from rtlforge.plugins.iverilog import (
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

_DRIVER = ".rtlforge_cocotb_driver.py"
_CONFIG = ".rtlforge-cocotb.json"
_BUILD_DIR = ".rtlforge-cocotb-build"
#: Driver exit codes (the driver's own, never the simulator's).
_BUILD_FAILED, _IMPORT_FAILED, _NO_COCOTB = 3, 4, 5
_MAX_FAILED_TESTS = 10

_DRIVER_SOURCE = f'''\
"""Written by rtlforge: build or test one cocotb run (argv: config.json build|test)."""
import importlib
import json
import sys
import traceback
from pathlib import Path


def main() -> int:
    cfg = json.loads(Path(sys.argv[1]).read_text())
    phase = sys.argv[2]
    sys.path.insert(0, cfg["workdir"])
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
    try:
        importlib.import_module(cfg["module"])
    except (Exception, SystemExit):
        traceback.print_exc()
        return {_IMPORT_FAILED}
    try:
        runner.test(test_module=cfg["module"], hdl_toplevel=cfg["toplevel"],
                    build_dir=cfg["build_dir"], test_dir=cfg["workdir"],
                    hdl_toplevel_lang="verilog", results_xml=cfg["results"],
                    seed=cfg["seed"], timescale=tuple(cfg["timescale"]))
    except (Exception, SystemExit):
        traceback.print_exc()  # the verdict is read from the results file regardless
    return 0


sys.exit(main())
'''


def read_results(path: Path) -> tuple[int, list[tuple[str, str]]] | None:
    """(tests run, [(failed test, message)]) from cocotb's JUnit XML; None if unreadable."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
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
    """Build the design with the chosen simulator and run the task's cocotb tests on it."""

    name: ClassVar[str] = "cocotb"
    stage: ClassVar[str] = "simulate"

    simulator: str = "icarus"  # "verilator" needs Verilator >= 5.036 for cocotb 2
    build_timeout: float = 120.0
    timescale: tuple[str, str] = ("1ns", "1ps")
    build_args: tuple[str, ...] = ()
    seed: int = 1  # fixed so that a verdict is reproducible (and cacheable)
    python: str = sys.executable

    def applies(self, task: Task) -> bool:
        return task.cocotb_module is not None

    def tool_names(self) -> Sequence[str]:
        return ("iverilog", "vvp") if self.simulator == "icarus" else (self.simulator,)

    def cache_key(self) -> dict[str, Any]:
        try:
            version = metadata.version("cocotb")
        except metadata.PackageNotFoundError:
            version = None
        return {"name": self.name, "cocotb": version,
                **{k: v for k, v in asdict(self).items() if k != "python"}}

    def validate(self, ctx: ValidationContext) -> StageResult:
        start = time.perf_counter()
        files = source_texts(ctx)
        module_file = ctx.task.cocotb_module
        if module_file is None:
            return self._result(start, Verdict.ERROR, [make_feedback(
                "other", "the task has no cocotb test module", stage=self.name, files=files)])
        module = module_file.name.removesuffix(".py")
        toplevel = ctx.task.testbench_top or ctx.top
        problem = bad_identifier(toplevel, "cocotb toplevel", stage=self.name)
        if problem is None and not (module_file.name.endswith(".py") and module.isidentifier()):
            problem = make_feedback(
                "other", f"cocotb test module file {module_file.name!r} is not an importable "
                "name (want <identifier>.py)", stage=self.name, files=files)
        if problem is not None:
            return self._result(start, Verdict.ERROR, [problem])

        nonce = ctx.options.get("nonce") or "run"
        results = ctx.workdir / f".rtlforge-cocotb-{nonce}.xml"
        results.unlink(missing_ok=True)
        sources = compiled_sources(
            [f.name for f in (*ctx.task.support, *ctx.task.testbench)] + ctx.design_files)
        config = {
            "workdir": str(ctx.workdir), "simulator": self.simulator, "module": module,
            "toplevel": toplevel, "sources": [str(ctx.workdir / s) for s in sources],
            "build_dir": str(ctx.workdir / _BUILD_DIR), "timescale": list(self.timescale),
            "build_args": list(self.build_args), "results": str(results), "seed": self.seed,
        }
        (ctx.workdir / _CONFIG).write_text(json.dumps(config))
        (ctx.workdir / _DRIVER).write_text(_DRIVER_SOURCE)
        driver = [self.python, _DRIVER, _CONFIG]

        build = ctx.runner.run([*driver, "build"], cwd=ctx.workdir, timeout=self.build_timeout)
        tools = tools_of(build)
        if build.returncode == _NO_COCOTB:
            return self._result(start, Verdict.INFRA_ERROR, [make_feedback(
                "tool_missing", "cocotb (>= 2) is not importable by "
                f"{self.python}: pip install 'cocotb>=2' ({_last_line(build.output)})",
                stage=self.name, files=files)], tools, build.output)
        verdict, feedback = self._build_verdict(build, files)
        if verdict is not Verdict.PASS:
            return self._result(start, verdict, feedback, tools, build.output)

        test = ctx.runner.run([*driver, "test"], cwd=ctx.workdir, timeout=ctx.timeout)
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

    def _build_verdict(self, build: ToolRun,
                       files: dict[str, str]) -> tuple[Verdict, list[Feedback]]:
        if self.simulator == "icarus":
            verdict, feedback = icarus_compile_verdict(
                build, stage=self.name, files=files, strict_sorry=False,
                timeout=self.build_timeout)
            return verdict, feedback
        if build.timed_out:
            return Verdict.TIMEOUT, [timeout_feedback("the cocotb build", self.build_timeout,
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
