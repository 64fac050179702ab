"""``cvdp``: run an NVIDIA CVDP problem's own harness on the answer, without Docker, in the jail.

The CVDP framework lays out a project (``/code/{rtl,verif,docs,rundir}``, the harness's ``src/``
also at ``/src``), writes the input context and then the model's files into it, and runs each
compose service with ``/code/rundir`` as working directory; the problem passes when every
service exits 0. This validator does the same inside the run directory: ``code/`` stands for
``/code``, ``rundir/`` for ``/rundir``, and container paths in harness files, ``.env`` values
and commands are rewritten to them (:func:`rtlforge.tasks.cvdp.map_container_paths`). Each
service runs as its own sandboxed tool run of :mod:`cvdp_driver` (``python -I``), which runs
the service's pytest in-process and reports what happened in a file only it can name.

Verdicts, per service in compose order (the first one that does not pass decides):

- ``pass``: the service's pytest (or script) exited 0;
- ``fail``: an answer file is missing, or a test failed: a cocotb test, a lint or synthesis
  check, a simulation that ended without results;
- ``error``: the design does not compile (the cocotb runner's build command failed);
- ``timeout``: the service ran past its time;
- ``infra_error``: the harness could not run: a tool, cocotb or pytest missing, a test module
  that cannot be imported, the runner called with arguments this cocotb does not take or a
  cocotb 1 API (``'Logic' object has no attribute 'integer'``), a collection error, a
  simulator other than Icarus. Never a verdict on the design.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import re
import secrets
import shutil
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from rtlforge.core.errors import ToolMissingError
from rtlforge.core.hookspecs import Register, hookimpl
from rtlforge.core.interfaces import ValidationContext, Validator
from rtlforge.core.models import Feedback, StageResult, Task, ToolInfo, ToolSpec, Verdict
from rtlforge.eda.feedback import make_feedback, parse_iverilog
from rtlforge.eda.stages import clip_log, flood_feedback, timeout_feedback
from rtlforge.eda.tools import ICARUS, ICARUS_MACROS, PYTHON, VERILATOR, VVP, YOSYS
from rtlforge.sandbox import runfiles
from rtlforge.sandbox.jail import interpreter
from rtlforge.sandbox.runner import ToolRun, find_tool

if TYPE_CHECKING:
    from rtlforge.tasks.cvdp import CvdpHarness, CvdpService

# rtlforge.tasks.cvdp is imported where it is used: every pipeline build imports this module to
# read the validator's stage, and most never meet a CVDP task.

_DRIVER = "cvdp_driver.py"
_CONFIG = "rtlforge-cvdp.json"
_INI = "rtlforge-cvdp-pytest.ini"
_REPORT_PREFIX = ".rtlforge-cvdp-"
_REPORT_LIMIT = 4 * 1024 * 1024
_MAX_FEEDBACK = 10
#: A run directory path spliced into harness text and commands: plain characters only.
_PLAIN_PATH = re.compile(r"[A-Za-z0-9_./+-]+")
#: The tools a harness runs, found by name in its files.
_TOOL_WORDS = {"verilator": VERILATOR, "yosys": YOSYS}
#: Tools some CVDP harnesses run that rtlforge does not provide (commercial simulators and
#: formal or layout flows): a harness naming one that is not on PATH cannot run here.
_OTHER_TOOLS = ("xrun", "irun", "xcelium", "vcs", "vsim", "qrun", "jg", "jasper", "sby", "eqy",
                "openroad", "dc_shell", "genus", "innovus")
#: Output kept of one service run: cocotb and pytest are talkative, and a run over it is
#: judged a flood (the design printing without end), so this sits well above a real log.
_OUTPUT_BYTES = 16 * 1024 * 1024
#: cocotb 2 errors that say the harness was written for another cocotb: an attribute its value
#: types or modules lost (``.integer``, ``cocotb.fork``), a keyword it no longer takes.
_COCOTB_API = re.compile(
    r"'(?:Logic|LogicArray|Array|Range|BinaryValue|Bit|Timer|Clock)' object has no attribute"
    r"|module 'cocotb[\w.]*' has no attribute|No module named 'cocotb[\w.]*'"
    r"|unexpected keyword argument|cannot import name '\w+' from 'cocotb")


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


@functools.cache
def _driver_source() -> str:
    return (Path(__file__).with_name(_DRIVER)).read_text(encoding="utf-8")


@dataclass(frozen=True)
class Judged:
    """One service's outcome: its verdict and what to tell the author."""

    verdict: Verdict
    feedback: tuple[Feedback, ...] = ()
    metrics: dict[str, Any] = field(default_factory=dict)


def _fb(category: str, message: str, files: Mapping[str, str], *, file: str | None = None,
        line: int | None = None) -> Feedback:
    return make_feedback(category, message, stage="cvdp", files=files, file=file, line=line)


def judge_service(service: str, report: Mapping[str, Any] | None, run: ToolRun,
                  files: Mapping[str, str], timeout: float) -> Judged:
    """The verdict of one service from the driver's report and the tool run around it.

    Only the report (written by our driver, named by a secret) and the run's own exit facts
    decide; the service's printed output is used for feedback text alone, since the design
    shares it."""
    where = f"service {service!r}"
    if run.timed_out:
        return Judged(Verdict.TIMEOUT, (timeout_feedback(f"CVDP {where}", timeout,
                                                         stage="cvdp"),))
    if run.output_overflow:
        return Judged(Verdict.FAIL, (flood_feedback(f"CVDP {where}", run, stage="cvdp"),))
    if report is None:
        return Judged(Verdict.INFRA_ERROR, (_fb(
            "infra", f"{where}: the harness driver stopped without a report (exit "
            f"{run.returncode}): {_last(run.output)}", files),))
    status = report.get("status")
    if status == "missing":
        return Judged(Verdict.INFRA_ERROR, (_fb(
            "tool_missing", f"{where}: cocotb or pytest cannot be imported in the jail: "
            f"{report.get('message')} (pip install 'rtlforge[cvdp]')", files),))
    if status == "harness_error":
        category = "cocotb_api" if report.get("cocotb_api") else "harness"
        return Judged(Verdict.INFRA_ERROR, (_fb(category, f"{where}: {report.get('message')}",
                                                files),))
    if status != "ran":
        return Judged(Verdict.INFRA_ERROR, (_fb(
            "infra", f"{where}: the harness could not run ({status}): "
            f"{report.get('message')}", files),))
    metrics = {"exit": report.get("exit"), "tests": len(report.get("items", {})),
               "sim_runs": len(report.get("sims", []))}
    if report.get("exit") == 0:
        return Judged(Verdict.PASS, metrics=metrics)
    return _judge_failure(where, report, files, metrics, run.output)


def _judge_failure(where: str, report: Mapping[str, Any], files: Mapping[str, str],
                   metrics: dict[str, Any], output: str) -> Judged:
    """A service that exited non-zero: the design's fault or the harness's."""
    logs: Mapping[str, str] = report.get("logs") or {}
    design: list[Feedback] = []
    unfound = report.get("unfound") or []
    infra: list[Feedback] = []
    for sim in report.get("sims", []):
        results = sim.get("results")
        if results is None and unfound:  # the simulator could not find the test module either
            infra.append(_fb("harness", f"{where}: the simulation of {sim.get('nodeid')} ended "
                             f"without results, and its test module {', '.join(unfound)} is "
                             "not on the harness's Python path", files))
            continue
        if results is None:  # the simulator stopped (a crash, a limit): the design's run
            design.append(_fb("no_verdict", f"{where}: the simulation of {sim.get('nodeid')} "
                              f"ended without cocotb results ({sim.get('message')})", files))
            continue
        real = [f for f in results.get("failed", []) if not _COCOTB_API.search(
            f"{f.get('type')}: {f.get('message')}")]
        design += [_fb("sim_mismatch", f"{where}: cocotb test {f.get('name')} failed "
                       f"({sim.get('nodeid')}): {f.get('type')}: {f.get('message')}", files)
                   for f in real]
    builds = [b for b in report.get("builds", []) if not b.get("ok")]
    infra += [_fb("cocotb_api", f"{where}: {a.get('message')}", files)
              for a in report.get("api", [])]
    infra += [_fb(h.get("category") or "harness", f"{where}: {h.get('message')}", files)
              for h in report.get("harness", [])]
    infra += [_fb("harness", f"{where}: pytest could not collect {c.get('nodeid')}: "
                  f"{c.get('message')}", files) for c in report.get("collect_errors", [])]
    for sim in report.get("sims", []):
        for failure in (sim.get("results") or {}).get("failed", []):
            text = f"{failure.get('type')}: {failure.get('message')}"
            if _COCOTB_API.search(text):
                infra.append(_fb("cocotb_api", f"{where}: cocotb test {failure.get('name')} "
                                 f"uses an API this cocotb lacks: {text}", files))
    failures = report.get("failures", [])
    infra += [_fb("harness", f"{where}: {f.get('nodeid')} cannot import: {f.get('message')}",
                  files) for f in failures if f.get("import_error")]
    infra += [_fb("harness", f"{where}: {f.get('nodeid')} failed in its {f.get('when')} "
                  f"(a fixture of the harness): {f.get('type')}: {f.get('message')}", files)
              for f in failures if f.get("when") in ("setup", "teardown")]
    if builds and not design:
        feedback: list[Feedback] = []
        for build in builds:
            # the build's log file, else the run's output: only a compiler speaks before the
            # simulation starts, so this is the compiler's text (used for feedback alone)
            log = build.get("log") or output
            feedback += [f for f in parse_iverilog(log, stage="cvdp", files=files)
                         if f.severity == "error"]
            if not feedback:
                feedback.append(_fb("elaboration", f"{where}: the design does not compile "
                                    f"({build.get('message')}): {_last(log)}", files))
        return Judged(Verdict.ERROR, tuple(feedback[:_MAX_FEEDBACK]), metrics)
    if design:
        return Judged(Verdict.FAIL, tuple(design[:_MAX_FEEDBACK]), metrics)
    exit_code = report.get("exit")
    if infra or exit_code not in (1,):
        if not infra:
            infra.append(_fb("harness", f"{where}: pytest stopped with exit status {exit_code} "
                             "(interrupted, internal or usage error, or no test collected)",
                             files))
        return Judged(Verdict.INFRA_ERROR, tuple(infra[:_MAX_FEEDBACK]), metrics)
    # a check of the harness's own failed (lint, synthesis, an assertion): the design's fault
    checks = [_fb("check_failed", f"{where}: {f.get('nodeid')} failed: {f.get('type')}: "
                  f"{f.get('message')}", files) for f in failures if f.get("when") == "call"]
    if not checks:
        checks.append(_fb("check_failed", f"{where}: a test failed (exit {exit_code})", files))
    for name, text in list(logs.items())[:2]:
        if text.strip():
            checks.append(_fb("check_log", f"{name}: ...{text.strip()[-1200:]}", files))
    return Judged(Verdict.FAIL, tuple(checks[:_MAX_FEEDBACK]), metrics)


def _last(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else "(no output)"


@dataclass(frozen=True)
class CvdpValidator(Validator):
    """Run a CVDP task's compose services (sim, lint, synth) on the answer's files.

    Attributes:
        timeout: wall-clock seconds per service; None uses the pipeline's stage timeout (a
            problem parametrised over many HDL parameters may need several minutes).
        python: the interpreter that runs the harness driver in the jail (it must import
            pytest and cocotb >= 2).
    """

    name: ClassVar[str] = "cvdp"
    stage: ClassVar[str] = "simulate"
    order: ClassVar[int] = 200
    toolchain: ClassVar[str] = "cvdp"  # its own harness: never picked as a --simulator
    tools: ClassVar[tuple[ToolSpec, ...]] = (ICARUS, VVP, VERILATOR, YOSYS)

    timeout: float | None = None
    python: str = field(default_factory=interpreter)

    def applies(self, task: Task) -> bool:
        from rtlforge.tasks.cvdp import is_cvdp_task

        return is_cvdp_task(task)

    def tool_names(self) -> Sequence[str]:
        return ("iverilog", "vvp", "verilator", "yosys")

    def predefined_macros(self) -> tuple[str, ...]:
        # The simulation compiles the design with Icarus through cocotb's runner, which adds no
        # define of its own; a harness's lint (Verilator) and synthesis (Yosys) read it too,
        # and the gate's raw scan covers their branches (docs/cvdp.md).
        return ICARUS_MACROS

    def cache_key(self) -> dict[str, Any]:
        return {"name": self.name, "cocotb": _version("cocotb"), "pytest": _version("pytest"),
                "driver": _driver_source(),
                **{k: v for k, v in asdict(self).items() if k != "python"}}

    def validate(self, ctx: ValidationContext) -> StageResult:
        start = time.perf_counter()
        from rtlforge.tasks.cvdp import harness_of

        harness = harness_of(ctx.task)
        if harness is None:
            return _result(start, Verdict.ERROR, [make_feedback(
                "other", "the task has no CVDP harness", stage=self.name, files={})])
        files = {f.name: f.content for f in ctx.candidate.files}
        have = set(files)
        missing = [p for p in harness.outputs if harness.placed[p] not in have]
        if missing:
            return _result(start, Verdict.FAIL, [make_feedback(
                "missing_file", f"the answer does not give {', '.join(missing)} (the task "
                f"wants {', '.join(harness.outputs)})", stage=self.name, files=files)])
        unsupported = sorted({s.env.get("SIM", "icarus") for s in harness.services} - {"icarus"})
        if unsupported:
            return _result(start, Verdict.INFRA_ERROR, [make_feedback(
                "tool_missing", f"the harness simulates with {', '.join(unsupported)}; the "
                "cvdp validator runs Icarus only", stage=self.name, files=files)])
        workdir = str(ctx.workdir)
        if not _PLAIN_PATH.fullmatch(workdir):
            return _result(start, Verdict.INFRA_ERROR, [make_feedback(
                "sandbox", f"run directory {workdir!r} has characters that cannot be spliced "
                "into harness text", stage=self.name, files=files)])
        tools = self._tools(harness)
        for package in ("pytest", "cocotb_tools"):
            if importlib.util.find_spec(package) is None:
                raise ToolMissingError(package, "pip install 'rtlforge[cvdp]' (cocotb >= 2 "
                                       "and pytest run the CVDP harness)")
        folder = Path(tempfile.mkdtemp(prefix="rtlforge-cvdp-harness-"))
        try:
            return self._run(ctx, harness, tools, folder, files, start)
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def _tools(self, harness: CvdpHarness) -> list[ToolInfo]:
        """The tools this harness runs, found on PATH (ToolMissingError: infrastructure)."""
        specs = [ICARUS, VVP]
        text = "\n".join([*harness.files.values(),
                          *(" ".join(s.args) for s in harness.services)])
        specs += [spec for word, spec in _TOOL_WORDS.items()
                  if re.search(rf"\b{word}\b", text)]
        for word in _OTHER_TOOLS:
            if re.search(rf"(?<![\w.-]){word}(?![\w.-])", text) and shutil.which(word) is None:
                raise ToolMissingError(word, f"the harness runs {word}, which is not installed "
                                       "here; rtlforge runs CVDP's open-source flows only")
        return [find_tool(spec) for spec in specs]

    def _run(self, ctx: ValidationContext, harness: CvdpHarness, tools: list[ToolInfo],
             folder: Path, files: dict[str, str], start: float) -> StageResult:
        folder.chmod(0o755)
        workdir = str(ctx.workdir)
        config = self._config(harness, workdir, folder, tools)
        runfiles.write_new(folder, _CONFIG, json.dumps(config))
        runfiles.write_new(folder, _DRIVER, _driver_source())
        runfiles.write_new(folder, _INI, "[pytest]\n")
        path = os.pathsep.join(dict.fromkeys(
            [*(str(Path(t.path).parent) for t in tools if t.path), "/usr/local/bin", "/usr/bin",
             "/bin"]))
        ro_paths = [folder, *{str(Path(os.path.realpath(t.path)).parent.parent)
                              for t in tools if t.path and not t.path.startswith(("/usr/",
                                                                                   "/bin/"))}]
        budget = self.timeout or ctx.timeout
        limits = ctx.runner.limits.model_copy(update={
            "timeout_s": budget,
            "output_bytes": max(ctx.runner.limits.output_bytes, _OUTPUT_BYTES)})
        infos = [*tools]
        metrics: dict[str, Any] = {}
        logs: list[str] = []
        for service in harness.services:
            secret = secrets.token_hex(16)
            run = ctx.runner.run(
                [self.python, "-I", str(folder / _DRIVER), str(folder / _CONFIG), service.name],
                cwd=ctx.workdir, limits=limits, env={"PATH": path}, tool=PYTHON,
                ro_paths=ro_paths, stdin=secret + "\n")
            if run.tool is not None and run.tool not in infos:
                infos.append(run.tool)
            report = self._report(ctx.workdir, secret)
            output = run.output.replace(f"{workdir}/code/", "").replace(f"{workdir}/", "")
            judged = judge_service(service.name, report, run.model_copy(update={
                "stdout": output, "stderr": ""}), files, budget)
            metrics[service.name] = {"verdict": judged.verdict.value,
                                     "seconds": round(run.seconds, 3), **judged.metrics}
            logs.append(f"--- service {service.name}: {judged.verdict.value}\n" + output)
            if judged.verdict is not Verdict.PASS:
                return _result(start, judged.verdict, judged.feedback, infos, "\n".join(logs),
                               {"services": metrics, "failed_service": service.name})
        return _result(start, Verdict.PASS, [], infos, "\n".join(logs), {"services": metrics})

    def _config(self, harness: CvdpHarness, workdir: str, folder: Path,
                tools: list[ToolInfo]) -> dict[str, Any]:
        """What the driver needs: the layout steps, and each service's command and environment
        with container paths moved into this run."""
        project = f"{workdir}/code"
        from rtlforge.tasks.cvdp import container_roots, map_container_paths

        roots = container_roots(workdir)
        layout: list[list[str]] = []
        for path, text in harness.context.items():
            layout.append(["write", f"{project}/{path}", text])
        for path, name in harness.placed.items():
            layout.append(["copy", f"{workdir}/{name}", f"{project}/{path}"])
        for path, text in harness.files.items():
            layout.append(["write", f"{project}/{path}", map_container_paths(text, roots)])
        services = {}
        for service in harness.services:
            services[service.name] = self._service(service, workdir)
        dirs = [f"{project}/{d}" for d in ("rtl", "verif", "docs", "rundir", "src")]
        return {"workdir": workdir, "dirs": [*dirs, f"{workdir}/rundir"], "layout": layout,
                "services": services, "pythonpath": runfiles.host_pythonpath(Path(workdir)),
                "ini": str(folder / _INI), "report_prefix": _REPORT_PREFIX}

    @staticmethod
    def _service(service: CvdpService, workdir: str) -> dict[str, Any]:
        from rtlforge.tasks.cvdp import container_roots, map_container_paths

        roots = container_roots(workdir, service)
        env = {k: map_container_paths(v, roots) for k, v in service.env.items()}
        cwd = roots["/code"] + "/rundir"
        env.update(HOME=cwd, PYTEST_DISABLE_PLUGIN_AUTOLOAD="1", PYTHONDONTWRITEBYTECODE="1")
        return {"kind": service.kind, "cwd": cwd, "env": env,
                "args": [map_container_paths(a, roots) for a in service.args]}

    @staticmethod
    def _report(workdir: Path, secret: str) -> dict[str, Any] | None:
        """The driver's report, with this run's folder taken out of paths (``rtl/x.sv``)."""
        name = f"{_REPORT_PREFIX}{secret}.json"
        try:
            data = runfiles.read_bytes(workdir, name, _REPORT_LIMIT)
        except runfiles.PlantedFileError:  # only the driver or the harness writes it
            return None
        if data is None:
            return None
        text = data.decode("utf-8", errors="replace")
        text = text.replace(f"{workdir}/code/", "").replace(f"{workdir}/", "")
        try:
            report = json.loads(text)
        except ValueError:
            return None
        return report if isinstance(report, dict) else None


def _result(start: float, verdict: Verdict, feedback: Sequence[Feedback],
            tools: Sequence[ToolInfo] = (), log: str = "",
            metrics: dict[str, Any] | None = None) -> StageResult:
    return StageResult(name="cvdp", verdict=verdict, seconds=time.perf_counter() - start,
                       feedback=tuple(feedback), tools=tuple(tools), log=clip_log(log),
                       metrics=metrics or {})


@hookimpl
def register_validators(register: Register) -> None:
    register(CvdpValidator)
