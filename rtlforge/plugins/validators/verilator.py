"""Verilator validators: ``verilator-lint`` (``--lint-only -Wall``) and ``verilator-sim``.

Verilator is the stricter second opinion: its lint catches width and driver problems Icarus
accepts silently, and ``--binary --timing`` simulates the same testbenches. A build runs g++ and
takes seconds; it is bounded by the stage timeout like every other run (``build_timeout``
sets a budget of its own when builds need more than simulations).

The compiled simulation is started through ``env``: the runner resolves ``argv[0]`` on PATH
(relative to the caller, not the run directory), so a run-directory binary needs a launcher.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from rtlforge.core.hookspecs import Register, hookimpl
from rtlforge.core.interfaces import ValidationContext, Validator
from rtlforge.core.models import StageResult, ToolSpec, Verdict
from rtlforge.eda.stages import (
    MAX_COMPILE_WARNINGS,
    attribute_to_task,
    bad_identifier,
    clip_log,
    compiled_sources,
    infer_testbench_top,
    lint_result,
    scrub,
    simulation_verdict,
    source_texts,
    task_sources,
    tools_of,
)
from rtlforge.eda.stages import verilator_build_verdict as build_verdict
from rtlforge.eda.tools import (
    GXX,
    MAKE,
    VERILATOR,
    VERILATOR_MACROS,
    VERILATOR_TIMING_MACROS,
    command_line_defines,
)

#: Where the build goes; a dot-name, so no candidate file can collide with it.
_MDIR = ".rtlforge-verilator"
_BINARY = "sim"


@dataclass(frozen=True)
class VerilatorLint(Validator):
    """``verilator --lint-only -Wall``: warnings become warning feedback, errors an ``error``.

    Attributes:
        disabled_warnings: Verilator warnings switched off (``-Wno-<name>``): style, not bugs,
            for single-file generated designs.
        timescale: the default timescale for files without one (``--timescale``).
        verilator: the verilator executable (a name on PATH or a path).
    """

    name: ClassVar[str] = "verilator-lint"
    stage: ClassVar[str] = "lint"
    order: ClassVar[int] = 100
    toolchain: ClassVar[str] = "verilator"
    tools: ClassVar[tuple[ToolSpec, ...]] = (VERILATOR,)

    #: Warnings that are style, not bugs, for single-file generated designs.
    disabled_warnings: tuple[str, ...] = ("DECLFILENAME", "UNUSED", "EOFNEWLINE")
    timescale: str = "1ns/1ps"
    verilator: str = "verilator"

    def tool_names(self) -> Sequence[str]:
        return (self.verilator,)

    def predefined_macros(self) -> tuple[str, ...]:
        return VERILATOR_TIMING_MACROS  # lint runs with --timing, like the build

    def validate(self, ctx: ValidationContext) -> StageResult:
        start = time.perf_counter()
        bad = bad_identifier(ctx.top, "top module", stage=self.name)
        if bad is not None:
            return StageResult(name=self.name, verdict=Verdict.ERROR, feedback=(bad,))
        files = source_texts(ctx)
        argv = [self.verilator, "--lint-only", "-Wall", "-Wno-fatal", "--timing",
                "--timescale", self.timescale,
                *(f"-Wno-{w}" for w in self.disabled_warnings),
                "--top-module", ctx.top, *compiled_sources(ctx.design_files)]
        run = ctx.runner.run(argv, cwd=ctx.workdir, timeout=ctx.timeout, tool=VERILATOR)
        verdict, feedback = build_verdict(run, stage=self.name, files=files, timeout=ctx.timeout)
        return lint_result(self.name, verdict, feedback, run, start)


@dataclass(frozen=True)
class VerilatorSim(Validator):
    """Build testbench + design with ``verilator --binary --timing`` and run the result.

    Attributes:
        build_timeout: wall-clock seconds for the C++ build; None uses the stage timeout.
        jobs: parallel compile jobs for the build (``-j``).
        timescale: the default timescale for files without one (``--timescale``).
        extra_args: more arguments passed to verilator as they are.
        verilator: the verilator executable (a name on PATH or a path).
    """

    name: ClassVar[str] = "verilator-sim"
    stage: ClassVar[str] = "simulate"
    order: ClassVar[int] = 200
    toolchain: ClassVar[str] = "verilator"
    #: Verilator builds the simulation with make and a C++ compiler.
    tools: ClassVar[tuple[ToolSpec, ...]] = (VERILATOR, MAKE, GXX)
    needs_testbench: ClassVar[bool] = True

    build_timeout: float | None = None  # None: the stage timeout (``--timeout``)
    jobs: int = 1
    timescale: str = "1ns/1ps"
    extra_args: tuple[str, ...] = ()
    verilator: str = "verilator"

    def tool_names(self) -> Sequence[str]:
        return (self.verilator,)

    def predefined_macros(self) -> tuple[str, ...]:
        base = VERILATOR_MACROS if "--no-timing" in self.extra_args else VERILATOR_TIMING_MACROS
        return (*base, *command_line_defines(self.extra_args))

    def validate(self, ctx: ValidationContext) -> StageResult:
        start = time.perf_counter()
        files = source_texts(ctx)
        task_files = {f.name for f in (*ctx.task.testbench, *ctx.task.support)}
        top = infer_testbench_top(ctx)
        argv = [self.verilator, "--binary", "--timing", "-j", str(self.jobs), "-Wno-fatal",
                "-Wno-lint", "-Wno-style", "--timescale", self.timescale,
                "--Mdir", _MDIR, "-o", _BINARY, *(["--top-module", top] if top else []),
                *self.extra_args, *task_sources(ctx), *compiled_sources(ctx.design_files)]
        budget = self.build_timeout or ctx.timeout
        build = ctx.runner.run(argv, cwd=ctx.workdir, timeout=budget, tool=VERILATOR)
        verdict, build_feedback = build_verdict(build, stage=self.name, files=files,
                                                timeout=budget)
        build_feedback = attribute_to_task(build_feedback, task_files)
        metrics: dict[str, Any] = {"build_s": round(build.seconds, 4)}
        if verdict is not Verdict.PASS:
            return StageResult(
                name=self.name, verdict=verdict, seconds=time.perf_counter() - start,
                feedback=tuple(build_feedback), tools=tools_of(build),
                log=clip_log(build.output), metrics=metrics,
            )
        sim = ctx.runner.run(["env", f"./{_MDIR}/{_BINARY}"], cwd=ctx.workdir,
                             timeout=ctx.timeout)
        metrics["sim_s"] = round(sim.seconds, 4)
        verdict, feedback = simulation_verdict(sim, ctx, stage=self.name, files=files,
                                               what="the verilated simulation")
        warnings = [f for f in build_feedback if f.severity == "warning"]
        return StageResult(
            name=self.name, verdict=verdict, seconds=time.perf_counter() - start,
            feedback=(*feedback, *warnings[:MAX_COMPILE_WARNINGS]), tools=tools_of(build),
            log=scrub(sim.output, ctx), metrics=metrics,
        )


@hookimpl
def register_validators(register: Register) -> None:
    register(VerilatorLint)
    register(VerilatorSim)
