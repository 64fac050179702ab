"""A reward plugin: prefer shorter completions.

A reward scores a batch of completions and returns one float per completion, or ``None`` to
abstain when it cannot judge (the harness failed): a ``None`` is left out of the policy update,
a ``0`` would teach the model that a correct answer was wrong. Rewards that need validation
subclass ``rtlforge.rewards.base.RTLReward`` instead, which validates, groups and abstains.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from rtlforge import hookimpl
from rtlforge.core.hookspecs import Register
from rtlforge.core.interfaces import Reward


class BrevityReward(Reward):
    """``scale / (1 + characters)`` for a completion; abstains on an empty one."""

    name: ClassVar[str] = "brevity"

    def __init__(self, *, scale: float = 1.0) -> None:
        """Args:
            scale: the reward of an (impossible) zero-length answer; longer ones get less.
        """
        self.scale = scale

    def score(self, prompts: Sequence[Any], completions: Sequence[Any],
              **columns: Any) -> list[float | None]:
        return [self.scale / (1 + len(text)) if text else None for text in completions]


@hookimpl
def register_rewards(register: Register) -> None:
    register(BrevityReward)
