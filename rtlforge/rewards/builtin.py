"""The built-in reward plugins (entry point ``rewards``).

Formulas (``pass`` = the candidate passes its task's testbench; see ``docs/rewards.md``):

- ``testbench``:          1.0 if pass else 0.0
- ``ppa-scalar``:         (P_g/P)·(A_g/A)·(D_g/D) if pass else 0.0
- ``testbench+ppa``:      testbench + ppa-scalar
- ``sequential-hvc``:     1.0 + clip(HVC(o | history), 0, hvc_cap) if pass else 0.0
- ``repetition-penalty``: testbench + ppa-scalar - λ·[the candidate repeats its history]

Every reward abstains (``None``) on infrastructure failures and unusable tasks; a timeout scores
``timeout_reward``. The cheap-pass guards and policies are those of
:class:`~rtlforge.rewards.base.RTLReward`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from rtlforge.core.hookspecs import Register, hookimpl
from rtlforge.pareto.hypervolume import hvc_group
from rtlforge.rewards import guards
from rtlforge.rewards.base import Item, RewardDetail, RTLReward
from rtlforge.rewards.columns import TaskSource, freeze, history_objectives
from rtlforge.rewards.ppa import PPAReward, scalar_ppa

__all__ = [
    "PPAScalarReward",
    "RepetitionPenaltyReward",
    "RewardDetail",
    "SequentialHVCReward",
    "TestbenchPPAReward",
    "TestbenchReward",
    "register_rewards",
]


class TestbenchReward(RTLReward):
    """1.0 when the candidate passes its testbench, 0.0 otherwise (None: abstain)."""

    __test__ = False  # not a pytest class despite the name
    name: ClassVar[str] = "testbench"


class PPAScalarReward(PPAReward):
    """Single-objective baseline: the product of the golden/candidate PPA ratios."""

    name: ClassVar[str] = "ppa-scalar"
    #: Added to the PPA term of a passing candidate (``testbench+ppa`` sets it to 1.0).
    base: ClassVar[float] = 0.0

    def _score_ppa(self, items: list[Item], columns: Mapping[str, Any]) -> None:
        for it in items:
            it.finish(self.base + scalar_ppa(it.ppa, it.golden))


class TestbenchPPAReward(PPAScalarReward):
    """``testbench`` + ``ppa-scalar``: 1 + (P_g/P)(A_g/A)(D_g/D) for a passing design."""

    __test__ = False
    name: ClassVar[str] = "testbench+ppa"
    base: ClassVar[float] = 1.0


class SequentialHVCReward(PPAReward):
    """The paper's reward: 1 + clip(HVC, 0, cap) for a passing design, 0 otherwise.

    The whole GRPO group, every completion with the same ``task_id`` and ``history`` (and golden
    PPA), is scored against the same history with one :func:`hvc_group` call, so the advantage
    compares completions rather than histories. A passing design with invalid PPA gets HVC = 0.
    """

    name: ClassVar[str] = "sequential-hvc"

    def __init__(self, tasks: TaskSource, pipeline: Any = None, *, hvc_cap: float = 3.0,
                 **options: Any) -> None:
        """Args:
            hvc_cap: the largest hypervolume contribution counted (the paper's clip at 3).
            **options: :class:`PPAReward`'s options.
        """
        super().__init__(tasks, pipeline, **options)
        self.hvc_cap = hvc_cap

    def _score_ppa(self, items: list[Item], columns: Mapping[str, Any]) -> None:
        groups: dict[tuple[str, str, str], list[Item]] = {}
        for it in items:
            key = (it.task_id, freeze(it.history), freeze(it.golden))
            groups.setdefault(key, []).append(it)
        for group in groups.values():
            history = history_objectives(group[0].history, group[0].golden)
            hvcs = hvc_group(history, [it.objectives for it in group])
            for it, value in zip(group, hvcs, strict=True):
                it.hvc = float(value)
                it.finish(1.0 + float(np.clip(value, 0.0, self.hvc_cap)))


class RepetitionPenaltyReward(PPAScalarReward):
    """Ablation baseline (our reading): testbench + ppa-scalar - λ when the design repeats history.

    A repeat is a candidate whose normalised code equals a history entry's ``code``, or whose
    measured PPA triple equals a history entry's. The penalty applies to passing candidates only
    (a failing one already scores 0), so a repeat scores 1 + s - λ and may be negative.
    """

    name: ClassVar[str] = "repetition-penalty"
    base: ClassVar[float] = 1.0

    def __init__(self, tasks: TaskSource, pipeline: Any = None, *, penalty: float = 1.0,
                 **options: Any) -> None:
        """Args:
            penalty: λ, subtracted from a passing candidate that repeats a history entry.
            **options: :class:`PPAReward`'s options.
        """
        super().__init__(tasks, pipeline, **options)
        self.penalty = penalty

    def _score_ppa(self, items: list[Item], columns: Mapping[str, Any]) -> None:
        super()._score_ppa(items, columns)
        for it in items:
            if guards.DUPLICATE_HISTORY in it.flags and it.reward is not None:
                it.reward -= self.penalty


REWARDS: tuple[type[RTLReward], ...] = (
    TestbenchReward,
    SequentialHVCReward,
    PPAScalarReward,
    TestbenchPPAReward,
    RepetitionPenaltyReward,
)


@hookimpl
def register_rewards(register: Register) -> None:
    for reward in REWARDS:
        register(reward)
