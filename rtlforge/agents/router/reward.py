"""The router's reward: a pure function of the previous and this iteration's records.

The paper's terms, with the choices its text leaves open made explicit (docs/router.md):

- ``sim_pass`` +100 when this iteration reaches simulation pass (the simulate stage passed, or
  the verdict is pass: a pipeline without a simulation stage has nothing better to go on) and
  the previous one had not. Awarded on the rising edge, not per iteration at that level:
  otherwise an episode stuck at "simulates, fails synthesis" earns 160 per iteration and the
  return-maximising policy learns never to finish.
- ``lint_pass`` +60 likewise when lint newly passes; cumulative with ``sim_pass`` (a first-try
  pass earns both: 160).
- ``total_failure`` -50 when the verdict is fail/error/timeout and not even lint passed
  (nothing compiled). An ``infra_error`` says nothing about the design: no design terms at all.
- ``first_try`` +20 when iteration 0 passes.
- ``tokens`` -0.001 per prompt + completion token of this iteration.
- ``low_cells`` +10 and ``timing_met`` +15 only for a functionally passing design (else a broken
  design with few cells would be rewarded). "Low" means at most ``cell_budget`` when one is
  given, else strictly fewer cells than the previous iteration measured.
- ``stages`` +5 per stage passed beyond the previous iteration (the first counts from zero); a
  regression is not penalised beyond losing the pass terms.
- ``errors`` +3 per error eliminated relative to the previous iteration (never negative).
"""

from __future__ import annotations

from rtlforge.agents.models import IterationRecord
from rtlforge.core.models import Verdict

__all__ = ["REWARD_WEIGHTS", "reward_terms", "router_reward"]

REWARD_WEIGHTS: dict[str, float] = {
    "sim_pass": 100.0, "lint_pass": 60.0, "total_failure": -50.0, "first_try": 20.0,
    "tokens": -0.001, "low_cells": 10.0, "timing_met": 15.0, "stages": 5.0, "errors": 3.0,
}


def reward_terms(previous: IterationRecord | None, current: IterationRecord, *,
                 cell_budget: int | None = None) -> dict[str, float]:
    """Each term's contribution (weight already applied); :func:`router_reward` sums them."""
    w = REWARD_WEIGHTS
    terms = dict.fromkeys(w, 0.0)
    terms["tokens"] = w["tokens"] * current.tokens
    if current.verdict is Verdict.INFRA_ERROR:
        return terms
    passed = current.verdict is Verdict.PASS
    functional = current.sim_passed or passed
    was_functional = previous is not None and (
        previous.sim_passed or previous.verdict is Verdict.PASS)
    if functional and not was_functional:
        terms["sim_pass"] = w["sim_pass"]
    if current.lint_passed and not (previous is not None and previous.lint_passed):
        terms["lint_pass"] = w["lint_pass"]
    if not passed and not current.lint_passed and not current.sim_passed:
        terms["total_failure"] = w["total_failure"]
    if passed and current.iteration == 0:
        terms["first_try"] = w["first_try"]
    if functional and current.cells is not None:
        if cell_budget is not None:
            low = current.cells <= cell_budget
        else:
            low = (previous is not None and previous.cells is not None
                   and current.cells < previous.cells)
        if low:
            terms["low_cells"] = w["low_cells"]
    if functional and current.timing_met is True:
        terms["timing_met"] = w["timing_met"]
    before = len(previous.stages_passed) if previous is not None else 0
    terms["stages"] = w["stages"] * max(0, len(current.stages_passed) - before)
    if previous is not None:
        terms["errors"] = w["errors"] * max(0, previous.error_count - current.error_count)
    return terms


def router_reward(previous: IterationRecord | None, current: IterationRecord, *,
                  cell_budget: int | None = None) -> float:
    """The reward of the iteration that produced ``current`` after ``previous`` (None: first)."""
    return sum(reward_terms(previous, current, cell_budget=cell_budget).values())
