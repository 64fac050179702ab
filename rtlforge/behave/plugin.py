"""Registers the ``rtlforge behave`` command group (entry point ``behave``).

The plugin host imports this module at start-up, so it stays light: click and the command
module load inside the hook, and BEHAVE-Sim itself only when a command runs.
"""

from __future__ import annotations

from typing import Any

from rtlforge.core.hookspecs import hookimpl


@hookimpl
def register_commands(cli: Any) -> None:
    from rtlforge.behave.cli import behave

    cli.add_command(behave)
