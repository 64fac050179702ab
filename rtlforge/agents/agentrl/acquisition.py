"""Self-improvement on top of the agent trainer: acquisition rounds grow the pool it draws from.

The loop of BEHAVE §3.4, as in the ``self-improve`` trainer: train k updates → one acquisition
round over the rollouts of those updates (the Analyst reads their rewards and feedback) → the
admitted tasks join the pool's schedule unseen; training resumes once N tasks were admitted
since the last training phase, or after ``max_attempts`` rounds that admitted fewer (a dry
library must not stall the run). The round itself is :func:`rtlforge.behave.acquire.round.run_round`
on the pool directory the trainer's schedule lives in.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from rtlforge.behave.acquire.roles import DEFAULT_ROLES, Stage

__all__ = ["AcquisitionConfig", "acquire_round"]


class AcquisitionConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    sources: str = Field(description="the source library")
    evaluation: list[str] = Field(default_factory=list,
                                  description="evaluation sets sources must not overlap")
    generator: str = Field(description="generator plugin the acquisition roles use")
    generator_options: dict[str, Any] = Field(default_factory=dict)
    roles: dict[Stage, str] = Field(default_factory=lambda: dict(DEFAULT_ROLES))
    max_picks: int = Field(2, ge=1, le=20)
    max_rounds: int = Field(3, ge=1, le=10)
    updates_per_round: int = Field(ge=1, description="k: updates between acquisitions")
    admit_min: int = Field(1, ge=0, description="N: admitted tasks before training resumes")
    max_attempts: int = Field(3, ge=1, description="rounds before training resumes anyway")


def acquire_round(config: AcquisitionConfig, *, host: Any, pool_dir: Path, rollout_log: Path,
                  since_update: int, seed: int) -> dict[str, Any]:
    """One round over the rollouts logged from update ``since_update`` on: its number, the
    admitted task ids, and how many candidates were rejected or left unresolved (every record
    is in the pool's acquisition.jsonl)."""
    from rtlforge.behave.acquire.round import RoundConfig, read_rollout_log, run_round
    from rtlforge.behave.acquire.sources import EvaluationIndex, load_library
    from rtlforge.behave.acquire.taskpool import TaskPool

    rollouts = [r for r in (read_rollout_log(rollout_log) if rollout_log.exists() else [])
                if r.update is not None and r.update >= since_update]
    index = EvaluationIndex.from_paths(config.evaluation) if config.evaluation else None
    library = load_library(config.sources, evaluation=index)
    generator = host.create("generator", config.generator, **config.generator_options)
    try:
        result = run_round(host=host, generator=generator, pool=TaskPool(pool_dir),
                           library=library, rollouts=rollouts,
                           config=RoundConfig(max_picks=config.max_picks,
                                              max_rounds=config.max_rounds, seed=seed,
                                              roles=config.roles))
    finally:
        generator.close()
    return {"round": result.round,
            "admitted": [r.task_id for r in result.of("admission") if r.task_id is not None],
            "rejected": len(result.of("rejection")), "unresolved": len(result.of("unresolved"))}
