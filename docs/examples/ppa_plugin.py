"""A PPA estimator plugin: a crude area model from the size of the source.

Real estimators synthesise the design with tools run through ``runner`` (the sandbox) and
declare those tools in ``tools`` so ``rtlforge doctor`` can check them; this one only counts,
which keeps the example free of tools.
"""

from __future__ import annotations

from typing import Any, ClassVar

from rtlforge import hookimpl
from rtlforge.core.hookspecs import Register
from rtlforge.core.interfaces import PPAEstimator
from rtlforge.core.models import Candidate, PPAResult


class LineAreaEstimator(PPAEstimator):
    """Area proportional to the non-blank source lines; fixed delay and power."""

    name: ClassVar[str] = "line-area"

    def __init__(self, *, um2_per_line: float = 10.0, delay_ns: float = 1.0) -> None:
        """Args:
            um2_per_line: area charged per non-blank source line, in square micrometres.
            delay_ns: the delay every design is given.
        """
        self.um2_per_line = um2_per_line
        self.delay_ns = delay_ns

    def estimate(self, candidate: Candidate, top: str, runner: Any, *,
                 clock: str | None = None, period_ns: float | None = None) -> PPAResult:
        lines = sum(1 for f in candidate.files for line in f.content.splitlines()
                    if line.strip())
        return PPAResult(area_um2=lines * self.um2_per_line, delay_ns=self.delay_ns,
                         power_mw=0.1)


@hookimpl
def register_ppa_estimators(register: Register) -> None:
    register(LineAreaEstimator)
