"""Helpers every simulator and synthesis stage shares, so they judge a run the same way.

Log clipping, testbench-top inference, feedback for timeouts and output floods, turning a
simulation run into a verdict, and the one Icarus compile that lint and simulation share.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from rtlforge.core.interfaces import ValidationContext
from rtlforge.core.models import Feedback, SourceFile, StageResult, ToolInfo, Verdict
from rtlforge.eda.feedback import (
    is_benign_sorry,
    make_feedback,
    parse_iverilog,
    parse_verilator,
)
from rtlforge.eda.mismatches import fill_from_dump, timescale_unit
from rtlforge.eda.modules import top_modules
from rtlforge.eda.tools import ICARUS
from rtlforge.eda.verdicts import end_marker, judge, marker
from rtlforge.sandbox import runfiles
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
#: ``$dumpfile("wave.vcd")`` in a testbench: a dump the testbench itself writes.
_TB_DUMPFILE = re.compile(r'\$dumpfile\s*\(\s*"([A-Za-z0-9_.-]+)"\s*\)')
#: How much of a testbench's own dump is read for the values at a failing check.
DUMP_READ_LIMIT = 8 * 1024 * 1024


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
    nonce = ctx.nonce
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


def testbench_time_unit(ctx: ValidationContext) -> str | None:
    """The unit of the testbench's first `` `timescale`` (what its bare ``$time`` prints)."""
    for f in ctx.task.testbench:
        if f.name.lower().endswith(COMPILED_SUFFIXES) and (unit := timescale_unit(f.content)):
            return unit
    return None


def read_dump(workdir: Path, name: str, limit: int) -> tuple[str, bool] | None:
    """The first ``limit`` bytes of a dump in the run directory (whole lines), and whether it
    was longer; None when there is none. Only names our side chose are ever read."""
    try:  # a planted link, FIFO or hard link raises PlantedFileError: the run's doing
        head = runfiles.read_head(workdir, name, limit)
    except ValueError:  # a name reaching outside the run directory is never read
        return None
    if head is None:
        return None
    data, longer = head
    if longer:
        data = data[:data.rfind(b"\n", 0, limit) + 1]
    return data.decode("utf-8", errors="replace"), longer


def testbench_dump(ctx: ValidationContext) -> str | None:
    """The dump the testbench itself wrote (VerilogEval's ``wave.vcd``), if it wrote one.

    The name comes from the task's testbench text, never from the design (which the gate does
    not let dump or write files).
    """
    for f in ctx.task.testbench:
        found = _TB_DUMPFILE.search(f.content)
        if found and not found[1].startswith("."):
            dump = read_dump(Path(ctx.workdir), found[1], DUMP_READ_LIMIT)
            return dump[0] if dump else None
    return None


#: An Icarus "sorry:" line: the tool could not do what was written.
_SORRY = re.compile(r"^(?:[^:\s][^:]*:\d+:\s*)?(?:vvp\.tgt\s+)?sorry:", re.IGNORECASE)


def tool_unsupported(tool_text: str, *, stage: str, files: Mapping[str, str]) -> list[Feedback]:
    """Icarus ``sorry:`` findings (bar the benign ones) in text only the tool writes.

    Never given the simulation's stdout: the design prints there as freely as the testbench,
    and a wrong design printing ``sorry:`` would turn its ``fail`` into ``error``.
    """
    lines = [line for line in tool_text.splitlines()
             if _SORRY.match(line) and not is_benign_sorry(line)]
    return parse_iverilog("\n".join(lines), stage=stage, files=files) if lines else []


def simulation_verdict(
    run: ToolRun, ctx: ValidationContext, *, stage: str, files: Mapping[str, str], what: str,
    dump: str | None = None, unsupported_in_stderr: bool = False,
) -> tuple[Verdict, list[Feedback]]:
    """Verdict of one simulator run: timeout and flood first, then the testbench's own words.

    The verdict's class comes from the tool's own channels, never from what the design prints:
    ``error`` only when the simulator's stderr says it could not run what was written
    (``unsupported_in_stderr``: vvp writes its runtime ``sorry:`` there, and a design under the
    gate cannot write to stderr; a verilated binary's stderr carries the design's ``$error``
    text, so it is not read). Compile-time ``sorry:`` is the compile step's verdict. Then
    pass/fail from the testbench's marked lines. A failure's feedback carries the first failing
    checks; ``dump`` (a VCD of the run, else the testbench's own, if any) supplies the values
    where the testbench prints none.
    """
    if run.timed_out:
        return Verdict.TIMEOUT, [timeout_feedback(what, ctx.timeout, stage=stage)]
    if run.output_overflow:
        return Verdict.FAIL, [flood_feedback(what, run, stage=stage)]
    unsupported = (tool_unsupported(run.stderr, stage=stage, files=files)
                   if unsupported_in_stderr else [])
    if unsupported:
        return Verdict.ERROR, unsupported
    unit = testbench_time_unit(ctx)
    judgement = judge(run.output, ctx.task.pass_rule, nonce=ctx.nonce,
                      stage=stage, files=files, time_unit=unit,
                      outputs=[p.name for p in ctx.task.ports if p.direction == "output"])
    feedback = list(judgement.feedback)
    if any(fb.mismatches for fb in feedback):
        dump = dump if dump is not None else testbench_dump(ctx)
        if dump is not None:
            top = infer_testbench_top(ctx)
            feedback = [fb.model_copy(update={"mismatches": fill_from_dump(
                fb.mismatches, dump, time_unit=unit, scope=top)}) if fb.mismatches else fb
                for fb in feedback]
    if judgement.verdict is not Verdict.PASS and run.signal is not None:
        feedback.append(make_feedback(
            "other", f"{what} was killed by signal {run.signal} (a resource limit or a crash)",
            stage=stage, files=files))
    return judgement.verdict, feedback


def infer_testbench_top(ctx: ValidationContext) -> str | None:
    """The testbench module nobody instantiates, or None when that is ambiguous, by the name
    the tools know it by in this run (:meth:`ValidationContext.tool_name`).

    Only the testbench files are parsed, so design modules (and any stray test module a model
    added to its design) never compete; each text's parse is cached, so every candidate of a
    task shares it.
    """
    if ctx.task.testbench_top:
        return ctx.tool_name(ctx.task.testbench_top)
    tops = top_modules([f.content for f in ctx.task.testbench
                        if f.name.lower().endswith(COMPILED_SUFFIXES)])
    if len(tops) > 1:
        tops = [t for t in tops if _TB_NAME.search(t)]
    return ctx.tool_name(tops[0]) if len(tops) == 1 else None


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


def verilator_build_verdict(run: ToolRun, *, stage: str, files: Mapping[str, str],
                            timeout: float) -> tuple[Verdict, list[Feedback]]:
    """Verdict of a Verilator lint or build run: PASS (maybe with warnings), ERROR or TIMEOUT.

    Shared by the Verilator validators and BEHAVE-Sim's Verilator backend."""
    if run.timed_out:
        return Verdict.TIMEOUT, [timeout_feedback("verilator", timeout, stage=stage)]
    if run.output_overflow:
        return Verdict.ERROR, [flood_feedback("verilator", run, stage=stage)]
    feedback = parse_verilator(run.output, stage=stage, files=files)
    errors = [fb for fb in feedback if fb.severity == "error"]
    if run.returncode != 0 and not errors:
        tail = " | ".join(run.output.strip().splitlines()[-3:])
        feedback.append(make_feedback(
            "elaboration", f"verilator failed (exit {run.returncode}): {tail}", stage=stage,
            files=files))
    failed = run.returncode != 0 or bool(errors)
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
#: The harness module that dumps a run's waves when asked, and where it dumps them: both ours,
#: so the design chooses neither (the gate does not let a design dump or open files at all).
WAVE_MODULE = "rtlforge_wave_dump"
WAVE_FILE = ".rtlforge-wave.vcd"


def wave_harness(ctx: ValidationContext, limit_bytes: int) -> SourceFile:
    """Put the dump module into the run directory (as a trusted file) and return it.

    ``$dumpvars(0, <testbench top>)`` records every signal of the testbench and the design
    under it; ``$dumplimit`` stops the dump (not the run) at ``limit_bytes``. It is elaborated
    as the first root, so its ``$dumpfile`` opens before a testbench's own.
    """
    top = infer_testbench_top(ctx)
    taken = set(ctx.design_files) | {f.name for f in (*ctx.task.testbench, *ctx.task.support)}
    name = next(n for i in range(len(taken) + 1)
                if (n := f"{WAVE_MODULE}{i or ''}.v") not in taken)
    text = (f"module {WAVE_MODULE};\n  initial begin\n    $dumpfile(\"{WAVE_FILE}\");\n"
            f"    $dumplimit({int(limit_bytes)});\n    $dumpvars{f'(0, {top})' if top else ''};\n"
            "  end\nendmodule\n")
    harness = SourceFile(name=name, content=text)
    ctx.runner.put(ctx.workdir, [harness], role="trusted")
    return harness


def icarus_build(ctx: ValidationContext, iverilog: str, warnings: Sequence[str],
                 harness: SourceFile | None = None) -> ToolRun:
    """Compile testbench + design once per validation: lint and simulation share the build.

    ``harness`` (from :func:`wave_harness`) is compiled in as an extra root, first.
    """
    top = infer_testbench_top(ctx)
    roots = [*([WAVE_MODULE] if harness and top else []), *([top] if top else [])]
    extra = [harness.name] if harness else []
    argv = (iverilog, *icarus_flags(warnings), *(a for r in roots for a in ("-s", r)),
            "-o", SIM_IMAGE, *task_sources(ctx), *compiled_sources(ctx.design_files), *extra)
    key = ("iverilog-build", argv)
    run = ctx.artifacts.get(key)
    if run is None:
        run = ctx.runner.run(list(argv), cwd=ctx.workdir, timeout=ctx.timeout, tool=ICARUS)
        ctx.artifacts[key] = run
    return run
