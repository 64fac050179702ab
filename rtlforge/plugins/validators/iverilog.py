"""Icarus Verilog validators: ``iverilog-lint`` (compile the design) and ``iverilog-sim``.

This module also holds the helpers the other simulator plugins share (log clipping, testbench
top inference, turning a simulation run into a verdict), so that Icarus, Verilator and cocotb
judge a run the same way.

Icarus 11 prints ``sorry:`` for constructs it cannot handle and sometimes still exits 0; such a
design would then simulate something other than what was written, so it is an ``error``. Some
of those messages say Icarus degraded harmlessly (it ignores the ``unique`` qualifier, or makes
an ``always_comb`` sensitive to a whole vector instead of one bit); the feedback parser keeps
them as warnings, and ``strict_sorry=True`` makes them errors too.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from rtlforge.core.hookspecs import Register, hookimpl
from rtlforge.core.interfaces import ValidationContext, Validator
from rtlforge.core.models import SourceFile, StageResult, ToolSpec, Verdict
from rtlforge.eda.feedback import make_feedback
from rtlforge.eda.modules import scan_modules
from rtlforge.eda.stages import (
    MAX_COMPILE_WARNINGS,
    SIM_IMAGE,
    WAVE_FILE,
    attribute_to_task,
    bad_identifier,
    clip_log,
    compiled_sources,
    icarus_build,
    icarus_compile_verdict,
    icarus_flags,
    lint_result,
    read_dump,
    scrub,
    simulation_verdict,
    source_texts,
    tools_of,
    wave_harness,
)
from rtlforge.eda.tools import ICARUS, ICARUS_MACROS, VVP

# ------------------------------------------------------------------------------ validators


@dataclass(frozen=True)
class IverilogLint(Validator):
    """Compile the design with Icarus: catches syntax, undeclared names, missing modules.

    With a testbench (and ``with_testbench``) the design is compiled together with it, into the
    image ``iverilog-sim`` then runs: one compile per candidate instead of two. Errors in the
    testbench's files then mean the design's interface is wrong, and say so.

    Attributes:
        warnings: Icarus warning classes to enable (each becomes ``-W<class>``).
        strict_sorry: a benign "sorry: ... not supported" message is an error instead of a
            warning.
        iverilog: the iverilog executable (a name on PATH or a path).
        with_testbench: compile together with the task's testbench when it has one, into the
            image ``iverilog-sim`` reuses; False compiles the design alone.
    """

    name: ClassVar[str] = "iverilog-lint"
    stage: ClassVar[str] = "lint"
    order: ClassVar[int] = 100
    toolchain: ClassVar[str] = "icarus"
    tools: ClassVar[tuple[ToolSpec, ...]] = (ICARUS,)

    warnings: tuple[str, ...] = ("implicit", "portbind")
    strict_sorry: bool = False
    iverilog: str = "iverilog"
    with_testbench: bool = True

    def tool_names(self) -> Sequence[str]:
        return (self.iverilog,)

    def predefined_macros(self) -> tuple[str, ...]:
        return ICARUS_MACROS

    def validate(self, ctx: ValidationContext) -> StageResult:
        start = time.perf_counter()
        files = source_texts(ctx)
        bad = bad_identifier(ctx.top, "top module", stage=self.name)
        if bad is not None:
            return StageResult(name=self.name, verdict=Verdict.ERROR, feedback=(bad,))
        if self.with_testbench and ctx.task.testbench:
            scans = [scan_modules(f.content) for f in ctx.candidate.files]
            # An unparsed file proves nothing: the compiler then reports what is missing.
            declared = any(not scan.ok or ctx.top in scan.declared for scan in scans)
            if not declared:
                return StageResult(name=self.name, verdict=Verdict.ERROR, feedback=(
                    make_feedback("missing_module", f"top module {ctx.top!r} is not defined in "
                                  "the design", stage=self.name, files=files),),
                    seconds=time.perf_counter() - start)
            run = icarus_build(ctx, self.iverilog, self.warnings)
        else:
            argv = [self.iverilog, *icarus_flags(self.warnings), "-s", ctx.top,
                    "-o", ".rtlforge-lint.vvp", *compiled_sources(ctx.design_files)]
            run = ctx.runner.run(argv, cwd=ctx.workdir, timeout=ctx.timeout, tool=ICARUS)
        verdict, feedback = icarus_compile_verdict(
            run, stage=self.name, files=files, strict_sorry=self.strict_sorry,
            timeout=ctx.timeout)
        task_files = {f.name for f in (*ctx.task.testbench, *ctx.task.support)}
        return lint_result(self.name, verdict, attribute_to_task(feedback, task_files), run,
                           start)


@dataclass(frozen=True)
class IverilogSim(Validator):
    """Compile testbench + design with Icarus, run ``vvp`` and read the testbench's verdict.

    ``wave=True`` also dumps the whole testbench (and the design under it) to a VCD, written by
    a harness module of ours inside the run directory, and returns it as the stage's file
    ``wave.vcd``; the dump stops at ``wave_limit_mb`` (the run goes on), and a cut dump ends with
    a ``$comment`` saying so and sets ``metrics["wave_truncated"]``. Off by default: dumping
    slows a simulation down. The dump also gives the values at a failing check where the
    testbench prints none (VerilogEval's).

    Attributes:
        warnings: Icarus warning classes to enable (each becomes ``-W<class>``).
        strict_sorry: a benign "sorry: ... not supported" message is an error instead of a
            warning.
        iverilog: the iverilog executable (a name on PATH or a path).
        vvp: the vvp executable that runs the compiled simulation.
        wave: dump the whole simulation to a VCD returned as the stage's ``wave.vcd`` file.
        wave_limit_mb: size at which the VCD dump stops (the simulation goes on).
    """

    name: ClassVar[str] = "iverilog-sim"
    stage: ClassVar[str] = "simulate"
    order: ClassVar[int] = 200
    toolchain: ClassVar[str] = "icarus"
    tools: ClassVar[tuple[ToolSpec, ...]] = (ICARUS, VVP)
    needs_testbench: ClassVar[bool] = True

    warnings: tuple[str, ...] = ("implicit", "portbind")
    strict_sorry: bool = False
    iverilog: str = "iverilog"
    vvp: str = "vvp"
    wave: bool = False
    wave_limit_mb: float = 16.0

    def tool_names(self) -> Sequence[str]:
        return (self.iverilog, self.vvp)

    def predefined_macros(self) -> tuple[str, ...]:
        return ICARUS_MACROS

    def validate(self, ctx: ValidationContext) -> StageResult:
        start = time.perf_counter()
        files = source_texts(ctx)
        task_files = {f.name for f in (*ctx.task.testbench, *ctx.task.support)}
        limit = max(1024, int(self.wave_limit_mb * 1024 * 1024))
        harness = wave_harness(ctx, limit) if self.wave else None
        build = icarus_build(ctx, self.iverilog, self.warnings, harness)
        verdict, compile_feedback = icarus_compile_verdict(
            build, stage=self.name, files=files, strict_sorry=self.strict_sorry,
            timeout=ctx.timeout)
        compile_feedback = attribute_to_task(compile_feedback, task_files)
        metrics: dict[str, Any] = {"compile_s": round(build.seconds, 4)}
        if verdict is not Verdict.PASS:
            return StageResult(
                name=self.name, verdict=verdict, seconds=time.perf_counter() - start,
                feedback=tuple(compile_feedback), tools=tools_of(build),
                log=clip_log(build.output), metrics=metrics,
            )
        sim = ctx.runner.run([self.vvp, "-n", SIM_IMAGE], cwd=ctx.workdir,
                             timeout=ctx.timeout, tool=VVP)
        metrics["sim_s"] = round(sim.seconds, 4)
        wave = read_dump(ctx.workdir, WAVE_FILE, limit) if harness else None
        verdict, feedback = simulation_verdict(sim, ctx, stage=self.name, files=files,
                                               what="the simulation (vvp)",
                                               dump=wave[0] if wave else None,
                                               unsupported_in_stderr=True)
        warnings = [f for f in compile_feedback if f.severity == "warning"]
        left: tuple[SourceFile, ...] = ()
        if wave is not None:
            text, cut = wave
            if cut:
                text += f"$comment rtlforge: dump truncated at {limit} bytes (wave_limit_mb) $end\n"
            left = (SourceFile(name="wave.vcd", content=text),)
            metrics.update(wave_bytes=len(text), wave_truncated=cut)
        return StageResult(
            name=self.name, verdict=verdict, seconds=time.perf_counter() - start,
            feedback=(*feedback, *warnings[:MAX_COMPILE_WARNINGS]), tools=tools_of(build, sim),
            log=scrub(sim.output, ctx), metrics=metrics, files=left,
        )


@hookimpl
def register_validators(register: Register) -> None:
    register(IverilogLint)
    register(IverilogSim)
