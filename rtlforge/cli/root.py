"""The ``rtlforge`` group: logging set-up, the invocation's plugin host, and plugin commands.

Plugin commands are collected per invocation, from the invocation's host, into the root
context, never into the module's group object: two invocations with different hosts (tests,
an embedding tool) each see their own plugins' commands.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

import click

from rtlforge.cmdline import command_host
from rtlforge.core.log import ROOT_LOGGER

_COMMANDS_KEY = "rtlforge.plugin_commands"


def configure_logging(verbose: int) -> None:
    """Library events go to stderr at WARNING, INFO with -v, DEBUG with -vv; stdout is results."""
    logger = logging.getLogger(ROOT_LOGGER)
    if not any(getattr(h, "_rtlforge_cli", False) for h in logger.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        handler._rtlforge_cli = True  # type: ignore[attr-defined]
        logger.addHandler(handler)
    logger.setLevel(logging.WARNING - 10 * min(verbose, 2))


class RootGroup(click.Group):
    """The built-in commands, plus those the invocation's plugins add (``register_commands``)."""

    def plugin_commands(self, ctx: click.Context) -> dict[str, click.Command]:
        root = ctx.find_root()
        found = root.meta.get(_COMMANDS_KEY)
        if found is None:
            if logging.getLogger(ROOT_LOGGER).level == logging.NOTSET:
                # Command lookup runs before the group callback: warnings only until -v is read.
                configure_logging(0)
            host = command_host(ctx)
            added = click.Group(name=self.name)
            # One plugin at a time, like the other hooks: a plugin that raises here loses its
            # own commands, not every later plugin's (pluggy would stop the whole loop).
            for impl in host.pm.hook.register_commands.get_hookimpls():
                given: dict[str, Any] = {"cli": added, "host": host}
                try:
                    impl.function(**{k: given[k] for k in impl.argnames})
                except Exception as exc:  # noqa: BLE001 - a broken plugin must not break the CLI
                    click.echo(f"warning: plugin {impl.plugin_name!r} failed to add commands: "
                               f"{type(exc).__name__}: {exc}", err=True)
            found = root.meta[_COMMANDS_KEY] = dict(added.commands)
        return found

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.plugin_commands(ctx)})

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        return super().get_command(ctx, name) or self.plugin_commands(ctx).get(name)


@click.group(cls=RootGroup)
@click.option("-v", "--verbose", count=True, help="More log output on stderr (-vv for debug).")
@click.version_option(package_name="rtlforge")
@click.pass_context
def cli(ctx: click.Context, verbose: int) -> None:
    """rtlforge: validate, measure and score LLM-generated RTL."""
    configure_logging(verbose)
    command_host(ctx)  # made now, before any command: one host for the whole invocation
