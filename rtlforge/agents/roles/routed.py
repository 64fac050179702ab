"""The four roles a router chooses among, with the ChipCraftBrain paper's settings.

They differ in what they are for (their templates), in sampling temperature and in retrieval
depth; which model each runs on is the agents file's business (``generator`` per role), so
"Genius = the most capable model" is a deployment choice, not something code can know.
"""

from __future__ import annotations

from typing import ClassVar

from rtlforge.agents.base import RoleSettings
from rtlforge.agents.models import Focus
from rtlforge.agents.roles.common import BuiltinRole

__all__ = ["DebugRole", "FastRole", "GeniusRole", "OptimizeRole"]


class GeniusRole(BuiltinRole):
    """Hard problems and stuck runs: plans before coding; point it at your strongest model."""

    name: ClassVar[str] = "genius"
    description: ClassVar[str] = "most capable model, T=0.7, deep retrieval (k=15)"
    routed: ClassVar[bool] = True
    defaults: ClassVar[RoleSettings] = RoleSettings(
        template="genius", temperature=0.7, retrieval_k=15, max_tokens=4096, focus=Focus.FULL)


class FastRole(BuiltinRole):
    """Clear specs: a direct answer with little context, the cheap first try."""

    name: ClassVar[str] = "fast"
    description: ClassVar[str] = "quick direct attempt, T=0.5, light retrieval (k=3)"
    routed: ClassVar[bool] = True
    defaults: ClassVar[RoleSettings] = RoleSettings(
        template="fast", temperature=0.5, retrieval_k=3, max_tokens=2048, focus=Focus.FULL)


class DebugRole(BuiltinRole):
    """A failing attempt: low temperature, the feedback and failing checks up front."""

    name: ClassVar[str] = "debug"
    description: ClassVar[str] = "error-focused repair, T=0.3, k=5"
    routed: ClassVar[bool] = True
    defaults: ClassVar[RoleSettings] = RoleSettings(
        template="debug", temperature=0.3, retrieval_k=5, max_tokens=2048, focus=Focus.ERROR)


class OptimizeRole(BuiltinRole):
    """A passing (or nearly passing) design: keep the behaviour, improve synthesis results."""

    name: ClassVar[str] = "optimize"
    description: ClassVar[str] = "synthesis-focused rewrite, T=0.4, k=4"
    routed: ClassVar[bool] = True
    defaults: ClassVar[RoleSettings] = RoleSettings(
        template="optimize", temperature=0.4, retrieval_k=4, max_tokens=2048,
        focus=Focus.SYNTHESIS)
