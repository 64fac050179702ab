"""``rtlforge doctor``: whether tool runs are isolated here, and which EDA tools are present."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

import click

from rtlforge.cmdline import EXIT_INFRA, EXIT_OK, command_host
from rtlforge.core.errors import RtlforgeError
from rtlforge.core.models import ToolSpec

if TYPE_CHECKING:
    from pathlib import Path

    from rtlforge.core.plugins import PluginHost
    from rtlforge.sandbox.runner import SandboxRunner


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


def _jailed(runner: SandboxRunner, ws: Path, argv: list[str]) -> tuple[bool, str]:
    """Run ``argv`` in the jail: whether it ran (exit 0) and its output, or why it did not."""
    try:
        run = runner.run(argv, ws, timeout=20)
    except RtlforgeError as exc:
        return False, str(exc)
    return run.returncode == 0, run.output.strip()


def _python_inside(runner: SandboxRunner, ws: Path, python: str) -> str:
    ran, out = _jailed(runner, ws, [python, "-I", "-c", "import sys; print(sys.version)"])
    return f"ok ({out.splitlines()[0]})" if ran and out else f"fails in the jail: {out[:300]}"


def _tool_state(runner: SandboxRunner | None, ws: Path | None, spec: ToolSpec) -> str:
    """Where the tool is and its version; with a runner, whether the jail runs the same tool
    (its version answer read the same there: some tools exit 1 after printing it)."""
    from rtlforge.core.errors import ToolMissingError
    from rtlforge.sandbox.runner import find_tool

    try:
        info = find_tool(spec)
    except ToolMissingError as exc:
        return f"missing: {exc.hint}"
    found = info.version or "present"
    if runner is None or ws is None or spec.version_args is None or info.path is None:
        return found
    _, out = _jailed(runner, ws, [info.path, *spec.version_args])
    if spec.parse_version(out) == info.version:
        return found
    return f"fails in the jail ({info.path}): {out[:300] or 'no output'}"


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def doctor(as_json: bool) -> None:
    """Check that tool runs are isolated and which EDA tools are present.

    Exit 0 when the sandbox holds here, 3 when it cannot (untrusted input is then refused
    unless RTLFORGE_SANDBOX=none opts out).
    """
    from rtlforge.core.errors import IsolationUnavailableError
    from rtlforge.core.models import SourceFile as File
    from rtlforge.sandbox.jail import interpreter
    from rtlforge.sandbox.runner import SandboxRunner

    report: dict[str, Any] = {"tools": {}, "python": interpreter()}
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
                # what runs use, run where they run: this interpreter and each tool, jailed
                report["python_inside"] = _python_inside(runner, ws, interpreter())
                for spec in _declared_tools(command_host()):
                    report["tools"][spec.name] = _tool_state(runner, ws, spec)
        except (IsolationUnavailableError, RtlforgeError) as exc:
            report["sandbox"] = f"unavailable: {exc}"
        for spec in _declared_tools(command_host()):  # the sandbox failed: the host's view
            report["tools"].setdefault(spec.name, _tool_state(None, None, spec))
    broken = [t for t, state in report["tools"].items() if state.startswith("fails")]
    ok = report["sandbox"].startswith(("ok", "disabled")) and not broken and not \
        report.get("python_inside", "").startswith("fails")
    if as_json:
        click.echo(json.dumps(report))
    else:
        colour = "green" if report["sandbox"] == "ok" else "red"
        click.secho(f"sandbox: {report['sandbox']}", fg=colour, bold=True)
        if "uid_inside" in report:
            click.echo(f"  tools run as uid {report['uid_inside']} in fresh namespaces; "
                       "read-only: " + ", ".join(report.get("visible_read_only", [])))
        click.echo(f"gate: {report.get('gate', 'not checked')}")
        click.echo(f"python: {report['python']} in the jail: "
                   f"{report.get('python_inside', 'not checked')}")
        for tool, state in report["tools"].items():
            click.echo(f"  {tool:<10} {state}")
    sys.exit(EXIT_OK if ok else EXIT_INFRA)
