"""The built-in agent roles (filled in by the roles work of issue 12)."""

from __future__ import annotations

from rtlforge.agents.base import AgentRole

BUILTIN_ROLES: tuple[type[AgentRole], ...] = ()
