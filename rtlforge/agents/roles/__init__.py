"""The built-in agent roles: the router's four (genius, fast, debug, optimize) and the two
specialists (waveform, rule-routed by the spec; testbench, for tasks without one)."""

from __future__ import annotations

from rtlforge.agents.base import AgentRole
from rtlforge.agents.roles.routed import DebugRole, FastRole, GeniusRole, OptimizeRole
from rtlforge.agents.roles.specialists import TestbenchRole, WaveformRole

__all__ = ["BUILTIN_ROLES", "DebugRole", "FastRole", "GeniusRole", "OptimizeRole",
           "TestbenchRole", "WaveformRole"]

BUILTIN_ROLES: tuple[type[AgentRole], ...] = (
    GeniusRole, FastRole, DebugRole, OptimizeRole, WaveformRole, TestbenchRole)
