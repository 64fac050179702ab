"""A validator plugin for the Ray executor's tests: it kills its own worker process.

Imported by name on the Ray workers (the test puts this folder on their ``PYTHONPATH``), the way
a third-party plugin module travels in a :class:`~rtlforge.core.plugins.HostSpec`. A candidate
holding ``// KILL-ONCE`` kills the worker the first time any process sees it (a marker file in
``marker_dir`` remembers), so its retry validates normally; ``// KILL-ALWAYS`` kills every time.
"""

from __future__ import annotations

import hashlib
import os
import signal
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from rtlforge.core.hookspecs import Register, hookimpl
from rtlforge.core.interfaces import ValidationContext, Validator
from rtlforge.core.models import StageResult, Verdict


@dataclass
class WorkerKiller(Validator):
    """Passes every candidate, after killing the process on the marked ones."""

    name: ClassVar[str] = "worker-killer"
    order: ClassVar[int] = 150  # between lint and simulation
    marker_dir: str = ""

    def validate(self, ctx: ValidationContext) -> StageResult:
        source = "".join(f.content for f in ctx.candidate.files)
        if "// KILL-ALWAYS" in source:
            os.kill(os.getpid(), signal.SIGKILL)
        if "// KILL-ONCE" in source:
            marker = Path(self.marker_dir) / hashlib.sha256(source.encode()).hexdigest()
            try:
                marker.touch(exist_ok=False)
            except FileExistsError:
                pass
            else:
                os.kill(os.getpid(), signal.SIGKILL)
        return StageResult(name=self.name, verdict=Verdict.PASS)


@hookimpl
def register_validators(register: Register) -> None:
    register(WorkerKiller)
