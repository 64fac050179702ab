"""The router learning curve on the synthetic environment (issue 12, sections 2 and 6).

Mean episode reward of the greedy learned router on held-out synthetic episodes, against the
number of episodes it was trained on, next to three fixed references on the same held-out
tasks (``evaluate_router``: the same seeds per episode for every router): the heuristic
router (the default), a uniformly random router and the oracle (knows each error category's
best agent: the bound). PPO runs with the trainer's defaults (the config of
``examples/train/router-ppo.yaml``) for each seed; ``--mpc`` adds the world-model MPC
planner trained on the same number of episodes.

Run: ``.venv/bin/python benchmarks/router_learning.py [--seeds 0 1 2] [--steps 30]
[--mpc] [--json docs/img/router-learning.json] [--svg docs/img/router-learning.svg]``
(5-8 minutes with ``--mpc``, most of it MPC's planning during evaluation and its growing
replay buffer; about a minute without). Prints one JSON object (also written to ``--json``):
per router the curve (mean over seeds, and each seed's), the final per-category best-agent
rates and the training time.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from rtlforge.agents.models import AgentAction, RouterContext
from rtlforge.agents.router.actions import AGENTS, FOCUSES, UNIT_NAMES, to_action
from rtlforge.agents.router.heuristic import heuristic_action
from rtlforge.agents.router.synthetic import evaluate_router, oracle_action

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling plot_rewards script
from plot_rewards import render_svg

HELD_OUT_SEED = 4242


def _random_router(seed: int) -> Callable[[RouterContext], AgentAction]:
    rng = random.Random(seed)
    return lambda _ctx: to_action(rng.randrange(len(AGENTS)), rng.randrange(len(FOCUSES)),
                                  [rng.random() for _ in UNIT_NAMES], reason="random")


def _curve(router: str, seed: int, steps: int, every: int, episodes: int,
           settings: dict[str, Any]) -> dict[str, Any]:
    """Train one router, evaluating it (greedy) every ``every`` steps and before the first."""
    import torch

    from rtlforge.agents.router.trainer import RouterTrainer, RouterTrainerConfig

    with tempfile.TemporaryDirectory() as out:
        cfg = RouterTrainerConfig(trainer="router", router=router, steps=steps, seed=seed,
                                  threads=1, out_dir=out, **settings)
        torch.set_num_threads(1)
        trainer = RouterTrainer(cfg)
        points: list[tuple[int, float]] = []
        train_s = 0.0
        final: Any = None
        for step in range(steps + 1):
            if step % every == 0 or step == steps:
                bot = trainer.router_instance()
                final = evaluate_router(lambda c, b=bot: b.decide(c, AGENTS),
                                        episodes=episodes, seed=HELD_OUT_SEED)
                points.append((trainer.episodes, round(final.reward_mean, 2)))
            if step < steps:
                start = time.perf_counter()
                trainer.train_step()
                train_s += time.perf_counter() - start
    return {"seed": seed, "points": points, "train_s": round(train_s, 2),
            "best_agent_rate": final.best_agent_rate}


def _mean_curve(runs: Sequence[dict[str, Any]]) -> list[tuple[int, float]]:
    xs = [x for x, _ in runs[0]["points"]]
    return [(x, round(sum(r["points"][i][1] for r in runs) / len(runs), 2))
            for i, x in enumerate(xs)]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--steps", type=int, default=30, help="PPO updates (64 episodes each)")
    parser.add_argument("--every", type=int, default=3, help="evaluate every N steps")
    parser.add_argument("--eval-episodes", type=int, default=1000)
    parser.add_argument("--mpc", action="store_true", help="also train the MPC planner")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--svg", type=Path)
    args = parser.parse_args(argv)

    baselines = {
        name: round(evaluate_router(choose, episodes=args.eval_episodes,
                                    seed=HELD_OUT_SEED).reward_mean, 2)
        for name, choose in (("heuristic", heuristic_action), ("random", _random_router(0)),
                             ("oracle", oracle_action))}
    routers: dict[str, Any] = {}
    ppo_runs = [_curve("ppo", s, args.steps, args.every, args.eval_episodes, {})
                for s in args.seeds]
    routers["ppo"] = {"curve": _mean_curve(ppo_runs), "runs": ppo_runs}
    if args.mpc:
        per_step = 16  # MPCSettings.episodes_per_step: the same episode budget as PPO
        ppo_episodes = ppo_runs[0]["points"][-1][0]
        steps = max(1, ppo_episodes // per_step)
        mpc_runs = [_curve("mpc", s, steps, max(1, steps * args.every // args.steps),
                           args.eval_episodes, {}) for s in args.seeds]
        routers["mpc"] = {"curve": _mean_curve(mpc_runs), "runs": mpc_runs}
    result = {"held_out_seed": HELD_OUT_SEED, "eval_episodes": args.eval_episodes,
              "seeds": args.seeds,
              "baselines": baselines, "routers": routers}
    text = json.dumps(result, indent=1)
    print(text)
    if args.json:
        args.json.write_text(text + "\n", encoding="utf-8")
    if args.svg:
        last = max(x for r in routers.values() for x, _ in r["curve"])
        curves = [(f"{name.upper()} (mean of {len(args.seeds)} seeds)", r["curve"])
                  for name, r in routers.items()]
        curves += [(f"{name} ({value:.1f})", [(0, value), (last, value)])
                   for name, value in sorted(baselines.items(), key=lambda kv: -kv[1])]
        args.svg.parent.mkdir(parents=True, exist_ok=True)
        args.svg.write_text(render_svg(
            curves, title="Router learning on the synthetic environment (held-out episodes)",
            ylabel="mean episode reward", xlabel="episodes trained", legend="bottom-right"),
            encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
