"""Registers the ``rtlforge behave`` command group, ``rtlforge acquire`` (task acquisition,
docs/acquire.md) and the BEHAVE rewards (entry point ``behave``).

The plugin host imports this module at start-up, so it stays light: click, the command module
and the reward classes load inside the hooks, and BEHAVE-Sim itself only when a command runs or a
reward scores.
"""

from __future__ import annotations

from typing import Any

from rtlforge.core.hookspecs import Register, hookimpl


@hookimpl
def register_commands(cli: Any) -> None:
    from rtlforge.behave.acquire.cli import acquire
    from rtlforge.behave.cli import behave

    cli.add_command(behave)
    cli.add_command(acquire)


@hookimpl
def register_rewards(register: Register) -> None:
    from rtlforge.behave.rewards import register_rewards as register_behave_rewards

    register_behave_rewards(register)
