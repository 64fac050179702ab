"""`rtlforge train` with trainer: router: config dispatch, files written, replayed decisions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rtlforge.agents import plugin as agents_plugin
from rtlforge.agents.models import AgentAction, Decision, IterationRecord, RouterContext, Tier
from rtlforge.core.models import Verdict
from rtlforge.core.plugins import PluginHost
from rtlforge.trainers.config import parse_config
from rtlforge.trainers.errors import TrainerConfigError
from rtlforge.trainers.metrics import read_metrics

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def host() -> PluginHost:
    return PluginHost(load_entrypoints=False, plugins=[("agents", agents_plugin)])


def test_a_router_config_needs_no_model_and_refuses_one(host: PluginHost) -> None:
    cfg = parse_config({"trainer": "router", "steps": 2}, host=host)
    assert cfg.router == "ppo" and cfg.model is None
    with pytest.raises(TrainerConfigError, match="model"):
        parse_config({"trainer": "router", "steps": 2, "model": {"path": "x"}}, host=host)
    with pytest.raises(TrainerConfigError, match="synthetic"):
        parse_config({"trainer": "router", "steps": 2, "data": {"synthetic": False}}, host=host)


def _decisions(path: Path) -> None:
    ctx = RouterContext(task_id="t1", spec="An AND gate.")
    first = IterationRecord(iteration=0, tier=Tier.ROUTER, agent="fast", verdict=Verdict.ERROR,
                            stages_passed=("security",), error_category="syntax",
                            error_count=1)
    second = IterationRecord(iteration=1, tier=Tier.ROUTER, agent="debug", verdict=Verdict.PASS,
                             stages_passed=("security", "lint", "simulate"))
    lines = [Decision(task_id="t1", iteration=0, router="heuristic", context=ctx,
                      action=AgentAction(agent="fast"), outcome=first),
             Decision(task_id="t1", iteration=1, router="heuristic",
                      context=ctx.model_copy(update={"iteration": 1, "history": (first,)}),
                      action=AgentAction(agent="debug"), outcome=second)]
    path.write_text("".join(d.model_dump_json() + "\n" for d in lines))


@pytest.mark.parametrize("router", ["ppo", "mpc"])
def test_training_writes_metrics_a_loadable_checkpoint_and_a_summary(
        host: PluginHost, tmp_path: Path, router: str) -> None:
    from rtlforge.trainers.config import create_trainer

    _decisions(tmp_path / "decisions.jsonl")
    cfg = parse_config({"trainer": "router", "router": router, "steps": 3, "seed": 1,
                        "out_dir": str(tmp_path / "out"), "eval_episodes": 5,
                        "data": {"decisions": [str(tmp_path / "decisions.jsonl")]},
                        "ppo": {"episodes_per_step": 2, "replay_per_step": 1, "hidden": 16},
                        "mpc": {"episodes_per_step": 2, "hidden": 16}}, host=host)
    summary = create_trainer(cfg, host=host).train()
    metrics = read_metrics(tmp_path / "out" / "metrics.jsonl")
    assert [m["step"] for m in metrics] == [1, 2, 3]
    assert all(isinstance(m["loss"], float) for m in metrics)
    saved = json.loads((tmp_path / "out" / "train_summary.json").read_text())
    assert saved["router"] == router and saved["steps"] == 3 == summary["steps"]
    assert set(saved["evaluation"]) >= {"reward_mean", "heuristic_reward_mean"}
    loaded = host.create("router", router, path=str(tmp_path / "out" / "final"))
    ctx = RouterContext(task_id="t", spec="An AND gate.")
    assert loaded.decide(ctx, ("genius", "fast", "debug", "optimize")).agent in (
        "genius", "fast", "debug", "optimize")


def test_replayed_decisions_become_one_trajectory_with_recomputed_rewards(tmp_path) -> None:
    from rtlforge.agents.router.trainer import load_decisions, trajectories_from_decisions

    _decisions(tmp_path / "d.jsonl")
    (tmp_path / "d.jsonl").open("a").write('{"task_id": "torn')  # a killed run's last line
    trajs = trajectories_from_decisions(load_decisions([tmp_path / "d.jsonl"]))
    assert len(trajs) == 1 and len(trajs[0]) == 2
    # syntax error first: -50 total failure + 5 (security) ; then pass: 100 + 60 + 5*2 + 3*1
    assert [s.reward for s in trajs[0]] == pytest.approx([-45.0, 173.0])
    assert [s.agent for s in trajs[0]] == [1, 2]  # fast, debug
