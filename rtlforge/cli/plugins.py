"""``rtlforge plugins``: what every plugin registers, its options, and what failed to load."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from rtlforge.cli.root import cli
from rtlforge.cmdline import EXIT_INFRA, EXIT_OK, command_host
from rtlforge.core.errors import RtlforgeError


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def plugins(as_json: bool) -> None:
    """List plugin kinds, plugins, their versions, what they register and its options.

    Exit 3 (infrastructure) when a plugin failed to load or a plugin name clashed: the listing
    still shows everything else, and each failure with its reason.
    """
    from dataclasses import asdict

    host = command_host()
    infos = host.describe()
    failures, clashes = host.failures, list(host.clashes)

    def options(kind: str, name: str) -> list[dict[str, Any]]:
        try:
            return [asdict(o) for o in host.options(kind, name)]
        except RtlforgeError as exc:  # a plugin's options that cannot be read: say so
            return [{"name": "?", "type": "?", "required": False, "default": None,
                     "description": f"options unavailable: {exc}"}]

    kinds = [{"name": k.name, "interface": f"{k.interface.__module__}.{k.interface.__qualname__}",
              "hook": k.hook, "description": k.description} for k in host.kinds()]
    if as_json:
        click.echo(json.dumps({"kinds": kinds, "plugins": [
            {"name": i.name, "version": i.version, "distribution": i.distribution,
             "registers": i.registers, "kinds": i.kinds, "error": i.error,
             "options": {kind: {n: options(kind, n) for n in sorted(names)}
                         for kind, names in sorted(i.registers.items())}}
            for i in infos], "clashes": clashes}, default=str))
        sys.exit(EXIT_INFRA if failures or clashes else EXIT_OK)
    click.echo("kinds: " + ", ".join(k["name"] for k in kinds))
    for info in infos:
        line = f"{info.name} ({info.distribution or 'in-process'} {info.version or ''})".strip()
        click.echo(line)
        if info.kinds:
            click.echo(f"  declares kinds: {', '.join(info.kinds)}")
        for kind, names in sorted(info.registers.items()):
            click.echo(f"  {kind}: {', '.join(sorted(names))}")
            for name in sorted(names):
                for opt in options(kind, name):
                    default = "required" if opt["required"] else f"default {opt['default']!r}"
                    help_text = f"  {opt['description']}" if opt["description"] else ""
                    click.echo(f"      {name}.{opt['name']}: {opt['type']} ({default}){help_text}")
        if info.error:
            click.secho(f"  error: {info.error}", fg="red")
    for name, reason in sorted(failures.items()):
        click.secho(f"error: plugin {name!r} failed to load: {reason}", fg="red", err=True)
    for message in clashes:
        click.secho(f"error: {message}", fg="red", err=True)
    sys.exit(EXIT_INFRA if failures or clashes else EXIT_OK)
