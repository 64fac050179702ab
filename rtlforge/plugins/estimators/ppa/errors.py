"""Why a design has no PPA: its own fault (:class:`PPAError`), or a run past its deadline."""

from __future__ import annotations

from rtlforge.core.errors import DesignError
from rtlforge.eda.stages import clip_log


class PPAError(DesignError):
    """The design could not be measured: it does not synthesise, has no timed path, ...

    A design error: an estimator that cannot run at all (tool missing, sandbox down, a liberty
    the tools cannot read) raises an infrastructure or configuration error instead.

    ``log`` carries the relevant tool output (clipped) for people and refinement agents.
    """

    def __init__(self, message: str, *, stage: str, log: str = "") -> None:
        super().__init__(message)
        self.stage = stage
        self.log = clip_log(log)


class PPATimeoutError(PPAError):
    """A PPA tool ran out of time on this design (its own limit, like a ``timeout`` verdict)."""
