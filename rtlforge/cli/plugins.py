"""``rtlforge plugins``: what every plugin registers, its options, and what failed to load."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

import click

from rtlforge.cmdline import EXIT_INFRA, EXIT_OK, command_host

if TYPE_CHECKING:
    from rtlforge.core.plugins import PluginHost


def report(host: PluginHost, *, as_json: bool) -> tuple[list[str], list[str], int]:
    """What ``rtlforge plugins`` prints about ``host``: stdout lines, stderr lines (styled with
    ``click.style``) and the exit code. The plugin manifest keeps it for the installed plugins."""
    from dataclasses import asdict

    from rtlforge.core.errors import RtlforgeError

    infos = host.describe()
    failures, clashes = host.failures, list(host.clashes)
    code = EXIT_INFRA if failures or clashes else EXIT_OK

    def options(kind: str, name: str) -> list[dict[str, Any]]:
        try:
            return [asdict(o) for o in host.options(kind, name)]
        except RtlforgeError as exc:  # a plugin's options that cannot be read: say so
            return [{"name": "?", "type": "?", "required": False, "default": None,
                     "description": f"options unavailable: {exc}"}]

    kinds = [{"name": k.name, "interface": f"{k.interface.__module__}.{k.interface.__qualname__}",
              "hook": k.hook, "description": k.description} for k in host.kinds()]
    if as_json:
        return [json.dumps({"kinds": kinds, "plugins": [
            {"name": i.name, "version": i.version, "distribution": i.distribution,
             "registers": i.registers, "kinds": i.kinds, "error": i.error,
             "options": {kind: {n: options(kind, n) for n in sorted(names)}
                         for kind, names in sorted(i.registers.items())}}
            for i in infos], "clashes": clashes}, default=str)], [], code
    out = ["kinds: " + ", ".join(k["name"] for k in kinds)]
    for info in infos:
        out.append(f"{info.name} ({info.distribution or 'in-process'} {info.version or ''})"
                   .strip())
        if info.kinds:
            out.append(f"  declares kinds: {', '.join(info.kinds)}")
        for kind, names in sorted(info.registers.items()):
            out.append(f"  {kind}: {', '.join(sorted(names))}")
            for name in sorted(names):
                for opt in options(kind, name):
                    default = "required" if opt["required"] else f"default {opt['default']!r}"
                    help_text = f"  {opt['description']}" if opt["description"] else ""
                    out.append(f"      {name}.{opt['name']}: {opt['type']} ({default}){help_text}")
        if info.error:
            out.append(click.style(f"  error: {info.error}", fg="red"))
    err = [click.style(f"error: plugin {name!r} failed to load: {reason}", fg="red")
           for name, reason in sorted(failures.items())]
    err += [click.style(f"error: {message}", fg="red") for message in clashes]
    return out, err, code


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.pass_context
def plugins(ctx: click.Context, as_json: bool) -> None:
    """List plugin kinds, plugins, their versions, what they register and its options.

    Exit 3 (infrastructure) when a plugin failed to load or a plugin name clashed: the listing
    still shows everything else, and each failure with its reason.
    """
    from rtlforge.cli.root import installed_plugins

    installed = installed_plugins(ctx)
    manifest = installed.manifest() if installed is not None else None
    if manifest is not None:  # what the installed plugins print, kept: none is imported
        out, err, code = manifest.report["json" if as_json else "text"], [], EXIT_OK
    else:
        out, err, code = report(command_host(ctx), as_json=as_json)
    for line in out:
        click.echo(line)
    for line in err:
        click.echo(line, err=True)
    sys.exit(code)
