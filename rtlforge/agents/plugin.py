"""The built-in orchestration plugin: declares the ``agent_role`` and ``router`` kinds and
registers the built-in roles and routers through the same hooks a third party uses.

Listed as a default plugin (entry point ``agents`` in the ``rtlforge`` group).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rtlforge.agents import hookspecs
from rtlforge.agents.base import AGENT_ROLE_KIND, ROUTER_KIND
from rtlforge.core.hookspecs import Register, hookimpl

if TYPE_CHECKING:
    from rtlforge.core.plugins import PluginHost


@hookimpl
def register_hookspecs(register: Register) -> None:
    register(hookspecs)


@hookimpl
def register_plugin_kinds(register: Register) -> None:
    register(AGENT_ROLE_KIND)
    register(ROUTER_KIND)


@hookimpl
def register_agent_roles(register: Register) -> None:
    from rtlforge.agents.roles import BUILTIN_ROLES

    for role in BUILTIN_ROLES:
        register(role)


@hookimpl
def register_routers(register: Register) -> None:
    from rtlforge.agents.router import BUILTIN_ROUTERS

    for router in BUILTIN_ROUTERS:
        register(router)


@hookimpl
def register_commands(cli: Any, host: PluginHost) -> None:
    from rtlforge.agents.cli import register_commands as add_refine

    add_refine(cli, host)


@hookimpl
def register_trainers(register: Register) -> None:
    from rtlforge.agents.router.trainer import RouterTrainer

    register(RouterTrainer)
