"""Time per RL training step, split into generation / reward / update, on the tiny model.

    .venv/bin/python benchmarks/train_step.py [--steps 6] [--trainer grpo]

Each trainer has its own section below; both print one JSON object per run. The step time is
wall time between the HF ``on_step_begin`` and ``on_step_end`` callbacks; generation is the time
inside TRL's sampling call, reward the time inside the reward function (validation + PPA), and
update is the rest (old/reference log-probs, loss, backward, optimizer). Reward throughput is
candidates scored per second of reward time: the first step is cold (every variant validated and
synthesised), later steps mostly hit the validation and PPA caches.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


# ============================================================================================
# GRPO
# ============================================================================================


def grpo(steps: int, out: Path) -> dict[str, Any]:
    """GRPO on the constrained choice task (docs/training.md, GRPO) with the real HVC reward."""
    import torch

    from rtlforge.trainers.grpo import GRPOConfig, GRPOTrainer

    torch.set_num_threads(1)
    cfg = GRPOConfig.model_validate({
        "trainer": "grpo", "seed": 0, "out_dir": str(out), "steps": steps,
        "model": {"build_tiny": {}}, "tasks": str(ROOT / "examples" / "tasks"),
        "choice": {"task_id": "seq_det_1011",
                   "recorded": str(ROOT / "examples" / "explore" / "recorded.jsonl"),
                   "variants": {"A": "seq_gray", "B": "seq_onehot", "C": "seq_err",
                                "D": "seq_shift"}},
        "num_generations": 8, "prompts_per_step": 2, "repeat": 2, "max_completion_length": 1,
        "learning_rate": 3e-3, "beta": 0.04,
        # the cost of one step on history-free prompts (the documented figures); a sequential
        # run's later generations have longer prompts (their histories) and cost more per step
        "sequential": False,
    })
    trainer = GRPOTrainer(cfg)
    trainer._setup()
    trl = trainer._trl
    reward = trainer.reward_function()
    rows: list[dict[str, float]] = []
    cur: dict[str, float] = {}

    original = trl._generate_single_turn

    def timed_generate(*args: Any, **kwargs: Any) -> Any:
        t = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            cur["generation"] = cur.get("generation", 0.0) + time.perf_counter() - t

    trl._generate_single_turn = timed_generate

    class Timer:
        def __getattr__(self, name: str) -> Any:
            if name.startswith("on_"):
                return lambda *a, **k: None
            raise AttributeError(name)

        def on_step_begin(self, *a: Any, **k: Any) -> None:
            cur.clear()
            cur["t0"], cur["r0"], cur["n0"] = time.perf_counter(), reward.seconds, reward.scored

        def on_step_end(self, *a: Any, **k: Any) -> None:
            total = time.perf_counter() - cur["t0"]
            rew = reward.seconds - cur["r0"]
            gen = cur.get("generation", 0.0)
            rows.append({"total": total, "generation": gen, "reward": rew,
                         "update": total - gen - rew, "candidates": reward.scored - cur["n0"]})

    trl.add_callback(Timer())
    trainer.train()

    def med(key: str, part: list[dict[str, float]]) -> float:
        return round(statistics.median(r[key] for r in part), 4) if part else float("nan")

    warm = rows[1:]
    warm_reward_s = sum(r["reward"] for r in warm)
    return {
        "trainer": "grpo", "steps": len(rows), "batch": cfg.num_generations * cfg.prompts_per_step,
        "first_step_s": {k: round(rows[0][k], 4) for k in ("total", "generation", "reward",
                                                           "update")},
        "median_warm_step_s": {k: med(k, warm) for k in ("total", "generation", "reward",
                                                         "update")},
        "reward_candidates_per_s_cold": round(rows[0]["candidates"] / rows[0]["reward"], 2),
        "reward_candidates_per_s_warm": round(sum(r["candidates"] for r in warm)
                                              / warm_reward_s, 2) if warm_reward_s else None,
    }


# ============================================================================================
# PPO
# ============================================================================================


def ppo(steps: int, out: Path) -> dict[str, Any]:
    """PPO on the tiny model with the real AST reward (8 completions x 32 tokens per step).

    Generation is the time inside ``model.generate``, reward the time inside the reward's
    ``score``, and update the rest of the step: the policy/value/reference forward passes of the
    rollout and ``ppo_epochs`` x minibatches of forward + backward + AdamW.
    """
    import torch

    from rtlforge.trainers.ppo import PPOConfig, PPOTrainer

    torch.set_num_threads(1)
    reference = "module and2(input a, input b, output y);\n  assign y = a & b;\nendmodule\n"
    cfg = PPOConfig.model_validate({
        "trainer": "ppo", "seed": 0, "out_dir": str(out), "steps": steps,
        "model": {"build_tiny": {}, "lora": {}},
        "reward": {"name": "ast-similarity", "options": {"backend": "pyslang"}},
        "prompts": [{"prompt": "Write an AND gate.", "reference": reference}],
        "batch_size": 8, "minibatch_size": 4, "ppo_epochs": 2, "max_new_tokens": 32,
    })
    trainer = PPOTrainer(cfg)
    cur: dict[str, float] = {}

    def timed(key: str, fn: Any) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            t = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                cur[key] = cur.get(key, 0.0) + time.perf_counter() - t
        return wrapper

    trainer.model.generate = timed("generation", trainer.model.generate)
    trainer.reward.score = timed("reward", trainer.reward.score)
    rows: list[dict[str, float]] = []
    for _ in range(steps):
        cur.clear()
        t0 = time.perf_counter()
        trainer.train_step()
        total = time.perf_counter() - t0
        gen, rew = cur.get("generation", 0.0), cur.get("reward", 0.0)
        rows.append({"total": total, "generation": gen, "reward": rew,
                     "update": total - gen - rew})
    keys = ("total", "generation", "reward", "update")
    warm = rows[1:] or rows
    return {
        "trainer": "ppo", "steps": len(rows), "batch": cfg.batch_size,
        "max_new_tokens": cfg.max_new_tokens, "ppo_epochs": cfg.ppo_epochs,
        "first_step_s": {k: round(rows[0][k], 4) for k in keys},
        "median_warm_step_s": {k: round(statistics.median(r[k] for r in warm), 4) for k in keys},
    }


TRAINERS = {"grpo": grpo, "ppo": ppo}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--trainer", choices=sorted(TRAINERS), default="grpo")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="rtlforge-bench-") as tmp:
        print(json.dumps(TRAINERS[args.trainer](args.steps, Path(tmp))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
