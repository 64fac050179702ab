"""The orchestration layer's extension points, added to a host through ``register_hookspecs``."""

from __future__ import annotations

from rtlforge.core.hookspecs import Register, hookspec


@hookspec
def register_agent_roles(register: Register) -> None:
    """Register :class:`~rtlforge.agents.base.AgentRole` classes (kind ``agent_role``)."""


@hookspec
def register_routers(register: Register) -> None:
    """Register :class:`~rtlforge.agents.base.Router` classes (kind ``router``)."""
