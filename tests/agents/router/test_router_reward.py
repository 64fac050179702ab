"""Each reward term on a hand-computed case (weights from issue 12, choices from docs/router.md)."""

from __future__ import annotations

import pytest

from rtlforge.agents.models import IterationRecord, Tier
from rtlforge.agents.router.reward import reward_terms, router_reward
from rtlforge.core.models import Verdict

ALL = ("security", "lint", "simulate", "synth")


def rec(i: int = 1, verdict: Verdict = Verdict.FAIL, stages: tuple[str, ...] = (),
        errors: int = 0, tokens: int = 0, cells: int | None = None,
        timing: bool | None = None) -> IterationRecord:
    return IterationRecord(iteration=i, tier=Tier.ROUTER, agent="debug", verdict=verdict,
                           stages_passed=stages, error_count=errors, prompt_tokens=tokens,
                           cells=cells, timing_met=timing)


def test_a_first_try_pass() -> None:
    # 100 sim + 60 lint + 20 first try + 5 * 4 stages - 0.001 * 1000 tokens = 199
    assert router_reward(None, rec(0, Verdict.PASS, ALL, tokens=1000)) == pytest.approx(199.0)


def test_total_failure_and_tokens() -> None:
    terms = reward_terms(None, rec(0, Verdict.ERROR, ("security",), errors=2, tokens=500))
    assert terms["total_failure"] == -50.0 and terms["tokens"] == pytest.approx(-0.5)
    assert terms["stages"] == 5.0 and terms["errors"] == 0.0  # no previous: nothing eliminated
    assert router_reward(None, rec(0, Verdict.ERROR, ("security",), 2, 500)) == pytest.approx(
        -45.5)


def test_errors_eliminated_and_stages_advanced() -> None:
    before = rec(0, Verdict.ERROR, ("security",), errors=4)
    after = rec(1, Verdict.FAIL, ("security", "lint"), errors=1)
    terms = reward_terms(before, after)
    assert terms["errors"] == 9.0 and terms["stages"] == 5.0 and terms["lint_pass"] == 60.0
    assert terms["total_failure"] == 0.0 and terms["sim_pass"] == 0.0
    assert reward_terms(after, before)["errors"] == 0.0  # more errors: no negative term


def test_pass_terms_count_on_the_rising_edge_only() -> None:
    sims = rec(1, Verdict.FAIL, ("security", "lint", "simulate"))
    assert reward_terms(sims, sims)["sim_pass"] == 0.0
    assert reward_terms(sims, sims)["lint_pass"] == 0.0
    assert reward_terms(rec(0, Verdict.FAIL, ("security", "lint")), sims)["sim_pass"] == 100.0


def test_ppa_bonuses_need_a_functional_design() -> None:
    prev = rec(0, Verdict.FAIL, ("security", "lint", "simulate"), cells=500)
    good = rec(1, Verdict.PASS, ALL, cells=300, timing=True)
    terms = reward_terms(prev, good)
    assert terms["low_cells"] == 10.0 and terms["timing_met"] == 15.0
    assert terms["first_try"] == 0.0  # iteration 1
    broken = rec(1, Verdict.FAIL, ("security", "lint"), cells=10, timing=True)
    assert reward_terms(prev, broken)["low_cells"] == 0.0
    assert reward_terms(prev, broken)["timing_met"] == 0.0
    assert reward_terms(None, good, cell_budget=300)["low_cells"] == 10.0
    assert reward_terms(None, good, cell_budget=299)["low_cells"] == 0.0


def test_an_infrastructure_error_only_costs_its_tokens() -> None:
    assert router_reward(None, rec(0, Verdict.INFRA_ERROR, tokens=2000)) == pytest.approx(-2.0)
