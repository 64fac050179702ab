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
    data = {"kinds": kinds, "plugins": [
        {"name": i.name, "version": i.version, "distribution": i.distribution,
         "registers": i.registers, "aliases": i.aliases, "kinds": i.kinds, "error": i.error,
         "options": {kind: {n: options(kind, n) for n in sorted(names)}
                     for kind, names in sorted(i.registers.items())}}
        for i in infos], "clashes": clashes}
    if as_json:
        return [json.dumps(data, default=str)], [], code
    err = [click.style(f"error: plugin {name!r} failed to load: {reason}", fg="red")
           for name, reason in sorted(failures.items())]
    err += [click.style(f"error: {message}", fg="red") for message in clashes]
    return render(data, kind=None, with_options=True), err, code


def only_kind(data: dict[str, Any], kind: str) -> dict[str, Any]:
    """The listing cut to one kind: the plugins that register into it or declare it."""
    plugins = []
    for p in data["plugins"]:
        if kind in p["registers"] or kind in p["kinds"]:
            plugins.append({**p, "registers": {k: v for k, v in p["registers"].items()
                                               if k == kind},
                            "aliases": {k: v for k, v in p.get("aliases", {}).items()
                                        if k == kind},
                            "options": {k: v for k, v in p["options"].items() if k == kind}})
    return {**data, "kinds": [k for k in data["kinds"] if k["name"] == kind],
            "plugins": plugins}


def render(data: dict[str, Any], *, kind: str | None, with_options: bool) -> list[str]:
    """The text listing of ``data`` (the JSON listing), options only when asked."""
    if kind is not None:
        data = only_kind(data, kind)
    out = ["kinds: " + ", ".join(k["name"] for k in data["kinds"])]
    for p in data["plugins"]:
        out.append(f"{p['name']} ({p['distribution'] or 'in-process'} {p['version'] or ''})"
                   .strip())
        if p["kinds"]:
            out.append(f"  declares kinds: {', '.join(p['kinds'])}")
        for k, names in sorted(p["registers"].items()):
            old_names = p.get("aliases", {}).get(k, {})
            kept = f" (old names: {', '.join(sorted(old_names))})" if old_names else ""
            out.append(f"  {k}: {', '.join(sorted(names))}{kept}")
            if not with_options:
                continue
            for name in sorted(names):
                for opt in p["options"].get(k, {}).get(name, []):
                    default = "required" if opt["required"] else f"default {opt['default']!r}"
                    help_text = f"  {opt['description']}" if opt["description"] else ""
                    out.append(f"      {name}.{opt['name']}: {opt['type']} ({default}){help_text}")
        if p["error"]:
            out.append(click.style(f"  error: {p['error']}", fg="red"))
    return out


@click.command()
@click.option("--kind", metavar="KIND", help="Only the plugins of one kind (validator, generator, "
              "reward, ...; the first line of the listing names them all).")
@click.option("--options", "with_options", is_flag=True,
              help="Also list each plugin's options (name, type, default, help).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object (options included).")
@click.pass_context
def plugins(ctx: click.Context, kind: str | None, with_options: bool, as_json: bool) -> None:
    """List plugin kinds, plugins, their versions and what they register (--options: with each
    one's options; --kind: one kind only).

    Exit 3 (infrastructure) when a plugin failed to load or a plugin name clashed: the listing
    still shows everything else, and each failure with its reason.
    """
    from rtlforge.cli.root import installed_plugins

    installed = installed_plugins(ctx)
    manifest = installed.manifest() if installed is not None else None
    if manifest is not None:  # what the installed plugins print, kept: none is imported
        lines, err, code = manifest.report["json"], [], EXIT_OK
    else:
        lines, err, code = report(command_host(ctx), as_json=True)
    data = json.loads(lines[0])
    known = [k["name"] for k in data["kinds"]]
    if kind is not None and kind not in known:
        raise click.BadParameter(f"{kind!r} is not a plugin kind; one of {', '.join(known)}",
                                 param_hint="--kind")
    if as_json:
        out = [json.dumps(only_kind(data, kind) if kind else data, default=str)]
    else:
        err = report_errors(data)
        out = render(data, kind=kind, with_options=with_options)
    for line in out:
        click.echo(line)
    for line in err:
        click.echo(line, err=True)
    sys.exit(code)


def report_errors(data: dict[str, Any]) -> list[str]:
    """stderr lines for the failures and clashes the JSON listing holds."""
    err = [click.style(f"error: plugin {p['name']!r} failed to load: {p['error']}", fg="red")
           for p in sorted(data["plugins"], key=lambda p: p["name"]) if p["error"]]
    return err + [click.style(f"error: {message}", fg="red") for message in data["clashes"]]
