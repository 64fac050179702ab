"""The heuristic router's documented rules."""

from __future__ import annotations

from rtlforge.agents.models import Focus, IterationRecord, RouterContext, Tier
from rtlforge.agents.router import BUILTIN_ROUTERS
from rtlforge.agents.router.heuristic import HeuristicRouter
from rtlforge.core.models import Verdict

AGENTS = ("genius", "fast", "debug", "optimize")


def ctx(*history: IterationRecord, spec: str = "A 2-input AND gate.") -> RouterContext:
    return RouterContext(task_id="t", spec=spec, iteration=len(history), history=history)


def rec(i: int, category: str | None, stages: tuple[str, ...] = ("security",),
        verdict: Verdict = Verdict.ERROR) -> IterationRecord:
    return IterationRecord(iteration=i, tier=Tier.ROUTER, agent="fast", verdict=verdict,
                           stages_passed=stages, error_category=category, error_count=1)


def test_first_iteration_by_spec_complexity() -> None:
    router = HeuristicRouter()
    assert router.decide(ctx(), AGENTS).agent == "fast"
    hard = router.decide(ctx(spec="A UART with an FSM, a FIFO and a counter."), AGENTS)
    assert hard.agent == "genius" and hard.focus is Focus.ARCHITECTURE


def test_errors_route_by_category() -> None:
    router = HeuristicRouter()
    syntax = router.decide(ctx(rec(0, "syntax")), AGENTS)
    assert (syntax.agent, syntax.focus, syntax.lint_focus) == ("debug", Focus.ERROR, True)
    logic = router.decide(ctx(rec(0, "sim_mismatch", ("security", "lint"), Verdict.FAIL)),
                          AGENTS)
    assert (logic.agent, logic.focus) == ("debug", Focus.ERROR)
    timing = router.decide(ctx(rec(0, "timing", ("security", "lint"), Verdict.FAIL)), AGENTS)
    assert (timing.agent, timing.timing_focus) == ("optimize", True)
    area = router.decide(ctx(rec(0, "area", ("security", "lint", "simulate"), Verdict.FAIL)),
                         AGENTS)
    assert (area.agent, area.area_focus) == ("optimize", True)


def test_a_stall_escalates_to_genius_and_a_pass_optimizes() -> None:
    router = HeuristicRouter()
    stalled = router.decide(ctx(rec(0, "syntax"), rec(1, "syntax")), AGENTS)
    assert (stalled.agent, stalled.focus) == ("genius", Focus.ARCHITECTURE)
    passed = router.decide(ctx(rec(0, None, ("security", "lint", "simulate"), Verdict.PASS)),
                           AGENTS)
    assert (passed.agent, passed.focus) == ("optimize", Focus.SYNTHESIS)


def test_an_unoffered_agent_falls_back() -> None:
    action = HeuristicRouter().decide(ctx(rec(0, "syntax")), ("fast", "genius"))
    assert action.agent == "genius" and "unavailable" in action.reason


def test_the_routers_are_registered() -> None:
    assert [r.name for r in BUILTIN_ROUTERS] == ["heuristic", "ppo", "mpc"]
