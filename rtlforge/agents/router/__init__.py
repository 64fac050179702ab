"""The built-in routers: ``heuristic`` (the default, no training), ``ppo`` and ``mpc``.

Only torch-free modules are imported here; the learned routers load torch when they are built
with a checkpoint (docs/router.md).
"""

from __future__ import annotations

from rtlforge.agents.base import Router
from rtlforge.agents.router.heuristic import HeuristicRouter
from rtlforge.agents.router.mpc import MPCRouter
from rtlforge.agents.router.policy import PPORouter

BUILTIN_ROUTERS: tuple[type[Router], ...] = (HeuristicRouter, PPORouter, MPCRouter)
