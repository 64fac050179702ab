"""The learning result (issue 12, section 6): PPO trained on the synthetic environment beats
the heuristic router and picks each error category's best agent.

The oracle is the environment's definition, not the trainer: ``FIX_RATES`` names the best
agent per category (syntax: fast, width: debug, logic: genius, timing and area: optimize),
and the heuristic's rules are reasonable but not optimal there (syntax and logic to debug).
Measured with this config over seeds 0-9 (1000 held-out episodes): PPO +7.9% to +9.0%
over the heuristic (181.6; the oracle 198.2), each category's best agent in >= 93% of
decisions (docs/router.md).
"""

from __future__ import annotations

import pytest

from rtlforge.agents.router.actions import AGENTS
from rtlforge.agents.router.heuristic import heuristic_action
from rtlforge.agents.router.synthetic import (
    CATEGORIES,
    FIX_RATES,
    best_agent,
    evaluate_router,
    oracle_action,
)

torch = pytest.importorskip("torch")

HELD_OUT_SEED = 4242  # the trainer's environments are seeded from the config seed (0)


def test_the_environment_keeps_the_heuristic_below_the_oracle() -> None:
    # the fix rates themselves say which agent is best, and the heuristic disagrees twice
    assert {c: max(FIX_RATES[c], key=FIX_RATES[c].__getitem__) for c in CATEGORIES} == {
        "syntax": "fast", "width": "debug", "logic": "genius", "timing": "optimize",
        "area": "optimize"}
    assert best_agent("syntax") == "fast" and best_agent("logic") == "genius"
    heuristic = evaluate_router(heuristic_action, episodes=1000, seed=HELD_OUT_SEED)
    oracle = evaluate_router(oracle_action, episodes=1000, seed=HELD_OUT_SEED)
    assert heuristic.best_agent_rate["syntax"] == 0.0  # debug, not fast
    assert oracle.reward_mean > heuristic.reward_mean * 1.05


def test_ppo_beats_the_heuristic_and_picks_the_best_agent_per_category(tmp_path) -> None:
    from rtlforge.agents.router.trainer import RouterTrainer, RouterTrainerConfig

    cfg = RouterTrainerConfig(trainer="router", router="ppo", steps=30, seed=0, threads=1,
                              out_dir=str(tmp_path))
    trainer = RouterTrainer(cfg)
    for _ in range(cfg.steps):
        trainer.train_step()
    router = trainer.router_instance()

    ours = evaluate_router(lambda c: router.decide(c, AGENTS), episodes=1000,
                           seed=HELD_OUT_SEED)
    heuristic = evaluate_router(heuristic_action, episodes=1000, seed=HELD_OUT_SEED)
    # seeds 0-9 gave +7.9% .. +9.0%; +3% is far below that spread, far above no learning
    # (the "genius everywhere" policy PPO used to find scores about 5% *below* the heuristic)
    assert ours.reward_mean >= heuristic.reward_mean * 1.03, (ours, heuristic)
    for category in CATEGORIES:
        rate = ours.best_agent_rate[category]
        assert rate is not None and rate >= 0.7, (category, ours.best_agent_rate)
