"""The built-in routers (filled in by the router work of issue 12)."""

from __future__ import annotations

from rtlforge.agents.base import Router

BUILTIN_ROUTERS: tuple[type[Router], ...] = ()
