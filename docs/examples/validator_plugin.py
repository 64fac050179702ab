"""A validator plugin: refuse ``initial`` blocks in a design.

Simulators run ``initial`` blocks, synthesis flows drop them, so a design that relies on one
passes its testbench and then behaves differently in silicon. This stage catches that before
simulation. It runs no tool; one that does calls ``ctx.runner.run(argv, cwd=ctx.workdir,
timeout=ctx.timeout, tool=SPEC)`` so the tool runs in the sandbox.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import ClassVar

from rtlforge import hookimpl
from rtlforge.core.hookspecs import Register
from rtlforge.core.interfaces import ValidationContext, Validator
from rtlforge.core.models import Feedback, StageResult, Verdict

_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)
_INITIAL = re.compile(r"\binitial\b")


@dataclass(frozen=True)
class NoInitialBlocks(Validator):
    """Fails a design that contains an ``initial`` block.

    Attributes:
        warn_only: report ``initial`` blocks as warnings and let the design pass.
    """

    name: ClassVar[str] = "no-initial"
    stage: ClassVar[str] = "lint"
    order: ClassVar[int] = 150  # after lint (100), before simulation (200)

    warn_only: bool = False

    def validate(self, ctx: ValidationContext) -> StageResult:
        start = time.perf_counter()
        findings = []
        for source in ctx.candidate.files:
            # Blank out comments but keep their newlines, so line numbers stay right.
            code = _COMMENTS.sub(lambda m: "\n" * m.group(0).count("\n"), source.content)
            for match in _INITIAL.finditer(code):
                findings.append(Feedback(
                    category="initial_block", stage=self.name, file=source.name,
                    line=code.count("\n", 0, match.start()) + 1,
                    message="initial blocks are ignored by synthesis",
                    hint="Give registers their start value through a reset instead.",
                    severity="warning" if self.warn_only else "error"))
        failed = any(f.severity == "error" for f in findings)
        return StageResult(name=self.name, verdict=Verdict.FAIL if failed else Verdict.PASS,
                           feedback=tuple(findings), seconds=time.perf_counter() - start,
                           metrics={"initial_blocks": len(findings)})


@hookimpl
def register_validators(register: Register) -> None:
    register(NoInitialBlocks)
