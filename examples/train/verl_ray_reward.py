"""A verl reward function that scores rollouts with rtlforge on the Ray cluster verl runs on.

verl loads this file in its reward worker (``custom_reward_function.path``) and its batch reward
manager calls ``compute_score`` once per batch with plural keyword lists (``data_sources``,
``solution_strs``, ``ground_truths``, ``extra_infos``). The reward validates the whole batch
through the ``ray`` executor: inside verl, Ray is already initialised, so the executor's actors
join verl's cluster and the EDA tool runs spread over every node that has the tools installed
(docs/ray.md), while the trainer's process only extracts code and aggregates.

    python -m verl.trainer.main_ppo ... \\
        reward_model.reward_manager=batch \\
        custom_reward_function.path=examples/train/verl_ray_reward.py \\
        custom_reward_function.name=compute_score

Dataset rows carry the task id as ``reward_model.ground_truth`` (or ``extra_info.task_id``);
see docs/rewards.md for the mapping. ``RTLFORGE_REWARD`` and ``RTLFORGE_TASKS`` choose the
reward and the task directory; ``RTLFORGE_RAY_WORKERS`` caps the actors (default: every CPU).
verl writes rewards into a tensor, so an abstaining sample (infrastructure failure) scores 0.0.
"""

from __future__ import annotations

import os
from typing import Any

from rtlforge.core.plugins import PluginHost
from rtlforge.rewards.adapters import VerlComputeScore, verl_compute_score


def make_compute_score(reward: str = "testbench", tasks: str = "examples/tasks", *,
                       workers: int | None = None, host: PluginHost | None = None,
                       **executor_options: Any) -> VerlComputeScore:
    """verl's ``compute_score`` for ``reward`` on ``tasks``, validating through Ray."""
    options = {"workers": workers, **executor_options}
    return verl_compute_score(reward, tasks=tasks, abstain=0.0, host=host,
                              executor={"name": "ray", "options": options})


compute_score = make_compute_score(
    os.environ.get("RTLFORGE_REWARD", "testbench"),
    os.environ.get("RTLFORGE_TASKS", "examples/tasks"),
    workers=int(os.environ["RTLFORGE_RAY_WORKERS"]) if "RTLFORGE_RAY_WORKERS" in os.environ
    else None)
