"""A trainer plugin: best-of-n selection, the smallest "training" a config can ask for.

It scores recorded completions with a reward plugin and keeps the best one per task: what a
rejection-sampling step does before fine-tuning on the result. A real trainer updates weights
(see ``rtlforge.trainers``); the contract is the same: a pydantic config class validated from
the YAML file, ``train``, ``evaluate``, ``save`` and ``resume``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field

from rtlforge import hookimpl
from rtlforge.core.hookspecs import Register
from rtlforge.core.interfaces import Trainer
from rtlforge.tasks.samples import load_samples
from rtlforge.trainers.config import TrainerConfig, resolve_out_dir


class BestOfConfig(TrainerConfig):
    """``trainer: best-of`` in a training config."""

    trainer: Literal["best-of"] = "best-of"
    samples: str = Field(description="JSONL of {task_id, completion} records to choose from")
    reward: str = Field(description="the reward plugin that scores them")
    reward_options: dict[str, Any] = Field(default_factory=dict)


class BestOfTrainer(Trainer):
    """Keeps the highest-scoring completion per task; ``steps`` is unused (one pass)."""

    name: ClassVar[str] = "best-of"
    config_class: ClassVar[type[BestOfConfig]] = BestOfConfig

    def __init__(self, config: BestOfConfig, *, host: Any) -> None:
        """Args:
            config: the validated training config.
            host: the plugin host the reward comes from.
        """
        self.config = config
        self.host = host
        self.best: dict[str, dict[str, Any]] = {}

    def train(self) -> dict[str, Any]:
        reward = self.host.create("reward", self.config.reward, **self.config.reward_options)
        samples = load_samples(self.config.samples)
        scores = reward.score([""] * len(samples), [s.completion for s in samples],
                              task_id=[s.task_id for s in samples])
        for sample, score in zip(samples, scores, strict=True):
            if score is None:
                continue  # the reward abstained: no evidence either way
            kept = self.best.get(sample.task_id)
            if kept is None or score > kept["score"]:
                self.best[sample.task_id] = {"completion": sample.completion, "score": score}
        self.save(resolve_out_dir(self.config) / "final")
        return self.evaluate()

    def evaluate(self) -> dict[str, Any]:
        scores = [b["score"] for b in self.best.values()]
        return {"tasks": len(scores), "mean_best": sum(scores) / len(scores) if scores else None}

    def save(self, path: Path) -> None:
        path.mkdir(parents=True, exist_ok=True)
        (path / "best.json").write_text(json.dumps(self.best, indent=1), encoding="utf-8")

    def resume(self, path: Path) -> None:
        self.best = json.loads((path / "best.json").read_text(encoding="utf-8"))


@hookimpl
def register_trainers(register: Register) -> None:
    register(BestOfTrainer)
