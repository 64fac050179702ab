"""``yosys-synth``: does the design synthesise, and into what?

Simulation cannot see what synthesis infers. This stage reports inferred latches (usually an
incomplete combinational ``if``/``case``), combinational loops and conflicting drivers, plus the
generic cell count as a cheap size signal.

``check`` runs after ``proc; flatten`` and before ``synth``: loops crossing module boundaries
are visible there and cells still carry their source lines, which ABC's renamed cells would not.
``-q`` keeps stdout small; the full log (where ``proc_dlatch`` reports latches, outside any
warning) goes to a file that is read back.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from rtlforge.core.hookspecs import Register, hookimpl
from rtlforge.core.interfaces import ValidationContext, Validator
from rtlforge.core.models import Feedback, StageResult, ToolSpec, Verdict
from rtlforge.eda.feedback import make_feedback, parse_yosys
from rtlforge.eda.stages import (
    bad_identifier,
    clip_log,
    compiled_sources,
    flood_feedback,
    source_texts,
    timeout_feedback,
    tools_of,
)
from rtlforge.eda.tools import YOSYS, YOSYS_MACROS
from rtlforge.sandbox import runfiles

_LOG = ".rtlforge-yosys.log"
_LOG_READ_LIMIT = 16 * 1024 * 1024
_SYNTH_START = "Executing SYNTH pass"
_LATCH = re.compile(r"^Latch inferred for signal", re.MULTILINE)
_LOOP = re.compile(r"found logic loop in module", re.IGNORECASE)
_MULTI = re.compile(r"multiple conflicting drivers", re.IGNORECASE)
#: Yosys 0.23 prints "Number of cells: N"; newer releases print "N cells".
_CELLS = re.compile(r"^\s*(?:Number of cells:\s+(\d+)|(\d+)\s+cells)\s*$", re.MULTILINE)


@dataclass(frozen=True)
class YosysSynth(Validator):
    """Generic ``synth`` of the design top; latches warn, loops and multiple drivers fail.

    Attributes:
        fail_on_latch: an inferred latch fails the design (by default it is a warning: some
            specs ask for one).
        fail_on_comb_loop: a combinational loop fails the design.
        fail_on_multiple_drivers: a net with conflicting drivers fails the design.
        timeout: wall-clock seconds for the yosys run; None uses the pipeline's stage timeout.
        yosys: the yosys executable (a name on PATH or a path).
    """

    name: ClassVar[str] = "yosys-synth"
    stage: ClassVar[str] = "synth"
    order: ClassVar[int] = 300
    toolchain: ClassVar[str] = "yosys"
    tools: ClassVar[tuple[ToolSpec, ...]] = (YOSYS,)

    fail_on_latch: bool = False
    fail_on_comb_loop: bool = True
    fail_on_multiple_drivers: bool = True
    timeout: float | None = None  # None: the pipeline's stage timeout
    yosys: str = "yosys"

    def tool_names(self) -> Sequence[str]:
        return (self.yosys,)

    def predefined_macros(self) -> tuple[str, ...]:
        return YOSYS_MACROS

    def script(self, top: str, sources: Sequence[str]) -> str:
        return "; ".join((
            f"read_verilog -sv {' '.join(sources)}",
            f"hierarchy -check -top {top}",
            "proc", "flatten", "check",
            f"synth -top {top}",
            "stat",
        ))

    def validate(self, ctx: ValidationContext) -> StageResult:
        start = time.perf_counter()
        bad = bad_identifier(ctx.top, "top module", stage=self.name)
        if bad is not None:
            return StageResult(name=self.name, verdict=Verdict.ERROR, feedback=(bad,))
        files = source_texts(ctx)
        timeout = self.timeout or ctx.timeout
        log_path = ctx.workdir / _LOG
        log_path.unlink(missing_ok=True)
        script = self.script(ctx.top, compiled_sources(ctx.design_files))
        run = ctx.runner.run([self.yosys, "-q", "-l", _LOG, "-p", script], cwd=ctx.workdir,
                             timeout=timeout, tool=YOSYS)
        text = runfiles.read_text(ctx.workdir, _LOG, _LOG_READ_LIMIT, truncate=True) or ""
        # Errors go to stderr under -q and are in the log too; keep whichever has more.
        log = text if len(text) >= len(run.output) else run.output
        metrics: dict[str, Any] = {}

        def done(verdict: Verdict, feedback: Sequence[Feedback]) -> StageResult:
            return StageResult(
                name=self.name, verdict=verdict, seconds=time.perf_counter() - start,
                feedback=tuple(feedback), tools=tools_of(run), log=clip_log(log),
                metrics=metrics,
            )

        if run.timed_out:
            return done(Verdict.TIMEOUT, [timeout_feedback("yosys", timeout, stage=self.name)])
        if run.output_overflow:
            return done(Verdict.ERROR, [flood_feedback("yosys", run, stage=self.name)])
        if run.returncode != 0:
            feedback = parse_yosys(log, stage=self.name, files=files)
            if not any(fb.severity == "error" for fb in feedback):
                tail = " | ".join(log.strip().splitlines()[-3:])
                feedback.append(make_feedback(
                    "elaboration", f"yosys failed (exit {run.returncode}): {tail}",
                    stage=self.name, files=files))
            return done(Verdict.ERROR, feedback)

        # synth repeats `check` on the mapped netlist: count loops and drivers once, before it.
        before, _, after = log.partition(_SYNTH_START)
        feedback = parse_yosys(before, stage=self.name, files=files)
        seen = {(fb.category, fb.message) for fb in feedback}
        feedback += [
            fb for fb in parse_yosys(after, stage=self.name, files=files)
            if fb.category not in ("comb_loop", "multiple_drivers")
            and (fb.category, fb.message) not in seen
        ]
        cells = [int(a or b) for a, b in _CELLS.findall(after)]
        metrics.update(
            cells=cells[-1] if cells else None,
            latches=len(_LATCH.findall(log)),
            comb_loops=len(_LOOP.findall(before)),
            multiple_drivers=len(_MULTI.findall(before)),
        )
        fatal = {
            "latch": self.fail_on_latch,
            "comb_loop": self.fail_on_comb_loop,
            "multiple_drivers": self.fail_on_multiple_drivers,
        }
        feedback = [
            fb.model_copy(update={"severity": "error"}) if fatal.get(fb.category) else fb
            for fb in feedback
        ]
        failed = any(fb.severity == "error" for fb in feedback)
        return done(Verdict.FAIL if failed else Verdict.PASS, feedback)


@hookimpl
def register_validators(register: Register) -> None:
    register(YosysSynth)
