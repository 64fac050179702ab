"""Helpers every simulator and synthesis stage shares, so they judge a run the same way.

Log clipping, testbench-top inference, feedback for timeouts and output floods, turning a
simulation run into a verdict, and the one Icarus compile that lint and simulation share.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Mapping, Sequence

from rtlforge.core.interfaces import ValidationContext
from rtlforge.core.models import Feedback, StageResult, ToolInfo, Verdict
from rtlforge.eda.feedback import is_benign_sorry, make_feedback, parse_iverilog
from rtlforge.eda.modules import top_modules
from rtlforge.eda.tools import ICARUS
from rtlforge.eda.verdicts import end_marker, judge, marker
from rtlforge.sandbox.runner import ToolRun

#: Files handed to a compiler; headers (.vh/.svh) are only ever `include'd.
COMPILED_SUFFIXES = (".v", ".sv")
#: StageResult.log is for people; the full output is in the run bundle.
LOG_LIMIT = 4096
#: Compiler warnings attached to a simulation result (they often explain a mismatch).
MAX_COMPILE_WARNINGS = 10
#: Names we pass to a tool or splice into a Yosys script: plain identifiers only.
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_$]*$")
#: Module names that read as a testbench, used when several modules could be the top.
_TB_NAME = re.compile(r"(^tb|tb$|_tb_|test|bench)", re.IGNORECASE)
_ROOT_MISSING = re.compile(r'Unable to find the root module "?([^"\s]+)"?', re.IGNORECASE)


def compiled_sources(names: Iterable[str]) -> list[str]:
    """The names a compiler should read, in order (headers and data files dropped)."""
    return [n for n in names if n.lower().endswith(COMPILED_SUFFIXES)]


def clip_log(text: str, limit: int = LOG_LIMIT) -> str:
    """Head and tail of a tool log: the first error and the final summary both matter."""
    if len(text) <= limit:
        return text
    note = f"\n... [{len(text) - limit} characters cut] ...\n"
    keep = limit - len(note)
    head = keep // 2
    return text[:head] + note + text[len(text) - (keep - head):]


def source_texts(ctx: ValidationContext) -> dict[str, str]:
    """File name -> original text, for source context in feedback.

    Taken from the task and candidate, not the run directory: the instrumented testbench there
    carries the run's nonce, which must never reach feedback shown to the design's author.
    """
    files = {f.name: f.content for f in (*ctx.task.support, *ctx.task.testbench)}
    files.update({f.name: f.content for f in ctx.candidate.files})
    return files


def task_sources(ctx: ValidationContext) -> list[str]:
    """Support files, then the testbench: both precede the design on a compile line."""
    return compiled_sources([f.name for f in (*ctx.task.support, *ctx.task.testbench)])


def scrub(text: str, ctx: ValidationContext) -> str:
    """Simulator output without the run's nonce marker, clipped for StageResult.log."""
    nonce = ctx.options.get("nonce")
    if nonce:
        text = text.replace(marker(nonce), "").replace(end_marker(nonce), "")
    return clip_log(text)


def tools_of(*runs: ToolRun | None) -> tuple[ToolInfo, ...]:
    seen: dict[str, ToolInfo] = {}
    for run in runs:
        if run is not None and run.tool is not None:
            seen.setdefault(run.tool.name, run.tool)
    return tuple(seen.values())


def bad_identifier(name: str, what: str, *, stage: str) -> Feedback | None:
    """Feedback when ``name`` is not a plain identifier (it would be spliced into tool input)."""
    if _IDENTIFIER.match(name):
        return None
    return make_feedback("missing_module", f"{what} {name!r} is not a plain Verilog identifier",
                         stage=stage, files={})


def attribute_to_task(feedback: Sequence[Feedback], task_files: set[str]) -> list[Feedback]:
    """Errors located in the testbench usually mean the design's interface is wrong: say so."""
    out = []
    for fb in feedback:
        if fb.severity == "error" and fb.file in task_files:
            note = (f"Reported in the task's file {fb.file}, which you cannot change: check the "
                    "module name, port names and port widths your design exposes.")
            fb = fb.model_copy(update={"hint": f"{note} {fb.hint or ''}".strip()})
        out.append(fb)
    return out


def timeout_feedback(what: str, seconds: float, *, stage: str) -> Feedback:
    return make_feedback(
        "timeout", f"{what} did not finish within {seconds:g} s (killed); a simulation that "
        "never reaches $finish, or an infinite zero-delay loop, looks like this",
        stage=stage, files={})


def flood_feedback(what: str, run: ToolRun, *, stage: str) -> Feedback:
    cut = len(run.stdout) + len(run.stderr)
    return make_feedback(
        "output_flood", f"{what} printed more than {cut} bytes and was stopped", stage=stage,
        files={})


def simulation_verdict(
    run: ToolRun, ctx: ValidationContext, *, stage: str, files: Mapping[str, str], what: str,
) -> tuple[Verdict, list[Feedback]]:
    """Verdict of one simulator run: timeout and flood first, then the testbench's own words."""
    if run.timed_out:
        return Verdict.TIMEOUT, [timeout_feedback(what, ctx.timeout, stage=stage)]
    if run.output_overflow:
        return Verdict.FAIL, [flood_feedback(what, run, stage=stage)]
    judgement = judge(run.output, ctx.task.pass_rule, nonce=ctx.options.get("nonce"),
                      stage=stage, files=files)
    feedback = list(judgement.feedback)
    if judgement.verdict is not Verdict.PASS and run.signal is not None:
        feedback.append(make_feedback(
            "other", f"{what} was killed by signal {run.signal} (a resource limit or a crash)",
            stage=stage, files=files))
    return judgement.verdict, feedback


def infer_testbench_top(ctx: ValidationContext) -> str | None:
    """The testbench module nobody instantiates, or None when that is ambiguous.

    Only the testbench files are parsed, so design modules (and any stray test module a model
    added to its design) never compete; each text's parse is cached, so every candidate of a
    task shares it.
    """
    if ctx.task.testbench_top:
        return ctx.task.testbench_top
    tops = top_modules([f.content for f in ctx.task.testbench
                        if f.name.lower().endswith(COMPILED_SUFFIXES)])
    if len(tops) > 1:
        tops = [t for t in tops if _TB_NAME.search(t)]
    return tops[0] if len(tops) == 1 else None


def icarus_compile_verdict(
    run: ToolRun, *, stage: str, files: Mapping[str, str], strict_sorry: bool, timeout: float,
) -> tuple[Verdict, list[Feedback]]:
    """Verdict of an ``iverilog`` compile: PASS, ERROR (with findings) or TIMEOUT."""
    if run.timed_out:
        return Verdict.TIMEOUT, [timeout_feedback("iverilog", timeout, stage=stage)]
    if run.output_overflow:
        return Verdict.ERROR, [flood_feedback("iverilog", run, stage=stage)]
    feedback = []
    for fb in parse_iverilog(run.output, stage=stage, files=files):
        if strict_sorry and fb.category == "unsupported" and is_benign_sorry(fb.message):
            fb = fb.model_copy(update={"severity": "error"})
        missing = _ROOT_MISSING.search(fb.message)
        if missing:
            fb = make_feedback("missing_module",
                               f"top module {missing.group(1)!r} is not defined: {fb.message}",
                               stage=stage, files=files)
        feedback.append(fb)
    failed = run.returncode != 0 or any(fb.severity == "error" for fb in feedback)
    if run.returncode != 0 and not any(fb.severity == "error" for fb in feedback):
        crashed = run.signal is not None or (run.returncode or 0) >= 128
        tail = " | ".join(run.output.strip().splitlines()[-3:])
        category = "unsupported" if crashed else "elaboration"
        message = (f"iverilog crashed (exit {run.returncode}) on this design: {tail}" if crashed
                   else f"iverilog failed (exit {run.returncode}): {tail}")
        feedback.append(make_feedback(category, message, stage=stage, files=files))
    return (Verdict.ERROR if failed else Verdict.PASS), feedback


def lint_result(name: str, verdict: Verdict, feedback: Sequence[Feedback], run: ToolRun,
                start: float) -> StageResult:
    """A lint stage's result: one tool run, its findings and their counts by severity."""
    return StageResult(
        name=name, verdict=verdict, seconds=time.perf_counter() - start,
        feedback=tuple(feedback), tools=tools_of(run), log=clip_log(run.output),
        metrics={"errors": sum(f.severity == "error" for f in feedback),
                 "warnings": sum(f.severity == "warning" for f in feedback)},
    )


def icarus_flags(warnings: Sequence[str]) -> list[str]:
    return ["-g2012", *(f"-W{w}" for w in warnings)]


#: The compiled simulation; a dot-name, so no candidate file can collide with it.
SIM_IMAGE = ".rtlforge-sim.vvp"


def icarus_build(ctx: ValidationContext, iverilog: str, warnings: Sequence[str]) -> ToolRun:
    """Compile testbench + design once per validation: lint and simulation share the build."""
    top = infer_testbench_top(ctx)
    argv = (iverilog, *icarus_flags(warnings), *(["-s", top] if top else []), "-o", SIM_IMAGE,
            *task_sources(ctx), *compiled_sources(ctx.design_files))
    key = ("iverilog-build", argv)
    run = ctx.artifacts.get(key)
    if run is None:
        run = ctx.runner.run(list(argv), cwd=ctx.workdir, timeout=ctx.timeout, tool=ICARUS)
        ctx.artifacts[key] = run
    return run
