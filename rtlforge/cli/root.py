"""The ``rtlforge`` group: logging set-up, the invocation's plugin host, and plugin commands.

Plugin commands are collected per invocation, from the invocation's host, into the root
context, never into the module's group object: two invocations with different hosts (tests,
an embedding tool) each see their own plugins' commands.

Nothing is imported before it is used. The built-in commands are modules named in
:data:`BUILTIN_COMMANDS`, imported when one runs. An invocation that makes its own host (no
``obj`` passed in) reads the installed plugins' commands, help texts and listing from the plugin
manifest (:mod:`rtlforge.cli.manifest`), so ``rtlforge --help`` imports no command and no
plugin; its host imports a plugin when a command uses it, and running a plugin's command
imports that plugin and the plugins whose hook specifications it needs.
"""

from __future__ import annotations

import logging
import sys
from typing import TYPE_CHECKING, Any

import click

from rtlforge.cmdline import command_host, set_host_factory
from rtlforge.core.log import ROOT_LOGGER

if TYPE_CHECKING:
    from rtlforge.cli.manifest import Installed, Manifest
    from rtlforge.core.plugins import PluginHost

_COMMANDS_KEY = "rtlforge.plugin_commands"
_INSTALLED_KEY = "rtlforge.installed_plugins"

#: The built-in commands: name -> ``module:command``, imported when the command is looked up.
BUILTIN_COMMANDS = {
    "doctor": "rtlforge.cli.doctor:doctor",
    "eval": "rtlforge.cli.evaluate:eval_cmd",
    "examples": "rtlforge.cli.examples:examples",
    "plugins": "rtlforge.cli.plugins:plugins",
    "validate": "rtlforge.cli.validate:validate",
}


def configure_logging(verbose: int) -> None:
    """Library events go to stderr at WARNING, INFO with -v, DEBUG with -vv; stdout is results."""
    logger = logging.getLogger(ROOT_LOGGER)
    if not any(getattr(h, "_rtlforge_cli", False) for h in logger.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        handler._rtlforge_cli = True  # type: ignore[attr-defined]
        logger.addHandler(handler)
    logger.setLevel(logging.WARNING - 10 * min(verbose, 2))


def installed_plugins(ctx: click.Context) -> Installed | None:
    """The installed plugins (their manifest) when this invocation makes its own host; None
    when a host was passed in as the root context's ``obj``."""
    root = ctx.find_root()
    if _INSTALLED_KEY not in root.meta:
        if logging.getLogger(ROOT_LOGGER).level == logging.NOTSET:
            # Command lookup runs before the group callback: warnings only until -v is read.
            configure_logging(0)
        installed = None
        if root.obj is None:
            from rtlforge.cli.manifest import Installed

            installed = Installed(BUILTIN_COMMANDS)
            set_host_factory(root, installed.host)
        root.meta[_INSTALLED_KEY] = installed
    found: Installed | None = root.meta[_INSTALLED_KEY]
    return found


def _manifest(ctx: click.Context) -> Manifest | None:
    installed = installed_plugins(ctx)
    return installed.manifest() if installed is not None else None


def _add_commands(host: PluginHost, added: click.Group, plugin: str | None = None) -> None:
    """Call each plugin's ``register_commands`` (only ``plugin``'s, when given) on its own, like
    the other hooks: a plugin that raises here loses its own commands, not every later plugin's
    (pluggy would stop the whole loop)."""
    for impl in host.pm.hook.register_commands.get_hookimpls():
        if plugin is not None and impl.plugin_name != plugin:
            continue
        given: dict[str, Any] = {"cli": added, "host": host}
        try:
            impl.function(**{k: given[k] for k in impl.argnames})
        except Exception as exc:  # noqa: BLE001 - a broken plugin must not break the CLI
            click.echo(f"warning: plugin {impl.plugin_name!r} failed to add commands: "
                       f"{type(exc).__name__}: {exc}", err=True)


class RootGroup(click.Group):
    """The built-in commands, plus those the invocation's plugins add (``register_commands``).

    ``builtins`` names commands as ``module:attribute``, imported when one is looked up.
    """

    def __init__(self, *args: Any, builtins: dict[str, str] | None = None,
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.builtins = dict(builtins or {})

    def plugin_commands(self, ctx: click.Context) -> dict[str, click.Command]:
        """Every plugin's commands, from the invocation's host (every plugin imported)."""
        root = ctx.find_root()
        found = root.meta.get(_COMMANDS_KEY)
        if found is None:
            installed_plugins(ctx)
            host = command_host(ctx)
            host.load()
            added = click.Group(name=self.name)
            _add_commands(host, added)
            found = root.meta[_COMMANDS_KEY] = dict(added.commands)
        return found

    def list_commands(self, ctx: click.Context) -> list[str]:
        manifest = _manifest(ctx)
        plugins = manifest.commands if manifest is not None else self.plugin_commands(ctx)
        return sorted({*super().list_commands(ctx), *self.builtins, *plugins})

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        found = super().get_command(ctx, name)
        if found is None and name in self.builtins:
            from rtlforge.cli.manifest import load_command

            found = load_command(self.builtins[name])
        manifest = _manifest(ctx) if found is None else None
        if manifest is not None and _COMMANDS_KEY not in ctx.find_root().meta:
            if name not in manifest.commands:
                return None
            # Only the plugin that adds it (with those whose hook specifications it needs).
            plugin = manifest.commands[name]["plugin"]
            host = command_host(ctx)
            host.load([plugin])
            added = click.Group(name=self.name)
            _add_commands(host, added, plugin)
            found = added.commands.get(name)
        return found or self.plugin_commands(ctx).get(name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """As click lists the commands, with the help texts the manifest keeps (nothing is
        imported); without a manifest, as click does."""
        manifest = _manifest(ctx)
        if manifest is None:
            return super().format_commands(ctx, formatter)
        commands = []
        for name in self.list_commands(ctx):
            cmd = None if name in self.commands else manifest.stub(
                name, self.builtins.get(name))
            cmd = cmd or self.get_command(ctx, name)
            if cmd is not None and not cmd.hidden:
                commands.append((name, cmd))
        if commands:
            limit = formatter.width - 6 - max(len(name) for name, _ in commands)
            with formatter.section("Commands"):
                formatter.write_dl([(name, cmd.get_short_help_str(limit))
                                    for name, cmd in commands])
        return None


@click.group(cls=RootGroup, builtins=BUILTIN_COMMANDS)
@click.option("-v", "--verbose", count=True, help="More log output on stderr (-vv for debug).")
@click.version_option(package_name="rtlforge")
@click.pass_context
def cli(ctx: click.Context, verbose: int) -> None:
    """rtlforge: validate, measure and score LLM-generated RTL."""
    configure_logging(verbose)
    installed_plugins(ctx)  # the host is made when a command first asks (command_host)
