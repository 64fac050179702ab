"""``rtlforge doctor``: whether tool runs are isolated here, and which EDA tools are present."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

import click

from rtlforge.cli.root import cli
from rtlforge.cmdline import EXIT_INFRA, EXIT_OK, command_host
from rtlforge.core.errors import RtlforgeError
from rtlforge.core.models import ToolSpec

if TYPE_CHECKING:
    from rtlforge.core.plugins import PluginHost


def _declared_tools(host: PluginHost) -> list[ToolSpec]:
    """The tools the registered validators and PPA estimators declare, each name once."""
    from rtlforge.core.interfaces import PPAEstimator, Validator

    specs: dict[str, ToolSpec] = {}
    for kind, base in (("validator", Validator), ("ppa_estimator", PPAEstimator)):
        for name in host.names(kind):
            factory = host.get(kind, name)
            if isinstance(factory, type) and issubclass(factory, base):
                for spec in factory.tools:
                    specs.setdefault(spec.name, spec)
    return list(specs.values())


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def doctor(as_json: bool) -> None:
    """Check that tool runs are isolated and which EDA tools are present.

    Exit 0 when the sandbox holds here, 3 when it cannot (untrusted input is then refused
    unless RTLFORGE_SANDBOX=none opts out).
    """
    from rtlforge.core.errors import IsolationUnavailableError, ToolMissingError
    from rtlforge.core.models import SourceFile as File
    from rtlforge.sandbox.runner import SandboxRunner, find_tool

    report: dict[str, Any] = {"tools": {}}
    with SandboxRunner() as runner:
        report["isolation"] = runner.isolation
        try:
            jail = runner.jail()
            report["sandbox"] = "ok" if jail is not None else "disabled (RTLFORGE_SANDBOX=none)"
            if jail is not None:
                report["visible_read_only"] = [str(p) for p in (*jail.roots, *jail.python)]
            with runner.workspace() as ws:
                runner.put(ws, [File(name="probe.v", content="module probe; endmodule\n")],
                           role="design")
                who = runner.run(["id", "-u"], ws, timeout=10)
                report["uid_inside"] = who.stdout.strip()
            report["gate"] = "ok"
        except (IsolationUnavailableError, RtlforgeError) as exc:
            report["sandbox"] = f"unavailable: {exc}"
        for spec in _declared_tools(command_host()):
            try:
                report["tools"][spec.name] = find_tool(spec).version or "present"
            except ToolMissingError as exc:
                report["tools"][spec.name] = f"missing: {exc.hint}"
    ok = report["sandbox"].startswith(("ok", "disabled"))
    if as_json:
        click.echo(json.dumps(report))
    else:
        colour = "green" if report["sandbox"] == "ok" else "red"
        click.secho(f"sandbox: {report['sandbox']}", fg=colour, bold=True)
        if "uid_inside" in report:
            click.echo(f"  tools run as uid {report['uid_inside']} in fresh namespaces; "
                       "read-only: " + ", ".join(report.get("visible_read_only", [])))
        click.echo(f"gate: {report.get('gate', 'not checked')}")
        for tool, state in report["tools"].items():
            click.echo(f"  {tool:<10} {state}")
    sys.exit(EXIT_OK if ok else EXIT_INFRA)
