"""``symbolic`` generator: answer Karnaugh-map and truth-table specs exactly, with no model.

The hybrid tier of a generation pipeline: tasks whose spec is a table are solved by
:mod:`.logic_min` (exact minimisation, verified against every specified cell), and
every other request is declined with ``[]`` so the next tier (an LLM) handles it. Declining is
the common, expected outcome; a wrong circuit is never traded for coverage.

The answer is deterministic, so a request gets ``params.n`` identical generations (pass@k
bookkeeping stays uniform with sampling generators); ``replicate=False`` returns just one.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import ClassVar

from rtlforge.core.hookspecs import Register, hookimpl
from rtlforge.core.interfaces import Generation, GenerationRequest, Generator, SamplingParams
from rtlforge.core.log import get_logger
from rtlforge.core.models import Candidate, Provenance
from rtlforge.plugins.generators.symbolic.logic_min import Decline, Solution, solve

log = get_logger("rtlforge.generators.symbolic")


class SymbolicGenerator(Generator):
    """Solves the one K-map or truth table of a spec; declines (``[]``) anything else.

    The spec is ``request.task.spec`` when a task is attached (prompts may wrap it in few-shot
    examples holding other tables), else ``request.prompt``. The task's ``top`` and ``ports``
    are used, and must agree with any module header the spec contains.
    """

    name: ClassVar[str] = "symbolic"

    def __init__(self, *, replicate: bool = True) -> None:
        """Args:
            replicate: return the derived circuit ``n`` times when ``n`` samples are asked for
                (so pass@k bookkeeping matches sampling generators); False returns it once.
        """
        self.replicate = replicate
        #: Why the most recent request of each id (or prompt index) was declined, for reports.
        self.declined: dict[str, str] = {}

    def solve(self, request: GenerationRequest) -> Solution:
        """The solution for one request; raises :class:`.logic_min.Decline`."""
        task = request.task
        if task is None:
            return solve(request.prompt)
        return solve(task.spec, top=task.top, ports=task.ports)

    def generate(
        self, requests: Sequence[GenerationRequest], params: SamplingParams
    ) -> list[list[Generation]]:
        out: list[list[Generation]] = []
        for k, request in enumerate(requests):
            key = request.request_id or (request.task.id if request.task else str(k))
            start = time.perf_counter()
            try:
                solution = self.solve(request)
            except Decline as exc:
                self.declined[key] = str(exc)
                log.debug("symbolic_declined", request=key, reason=str(exc))
                out.append([])
                continue
            self.declined.pop(key, None)
            latency = time.perf_counter() - start
            forms = {o.target: o.expression.form for o in solution.outputs}
            count = params.n if self.replicate else 1
            out.append([
                Generation(
                    text=solution.verilog,
                    generator=self.name,
                    candidate=Candidate.from_source(
                        solution.verilog,
                        top=solution.top,
                        task_id=request.task.id if request.task else None,
                        provenance=Provenance(
                            generator=self.name, prompt_id=request.request_id,
                            sample_index=i, extra={"table": solution.kind, "forms": forms},
                        ),
                    ),
                    latency_s=latency,
                    finish_reason="stop",
                )
                for i in range(count)
            ])
        return out


@hookimpl
def register_generators(register: Register) -> None:
    register(SymbolicGenerator)
