"""A commands plugin: ``rtlforge task-ports --tasks DIR`` lists each task's interface.

Commands are click commands added to the ``rtlforge`` group. The hook gets the invocation's
plugin host as ``host`` (the one built-in commands use; leave the parameter out if a command
needs none). Turn bad input into a ``click.UsageError`` (exit 2), and take exit codes and shared
helpers from :mod:`rtlforge.cmdline`, never from the CLI itself.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from rtlforge import hookimpl


@hookimpl
def register_commands(cli: Any) -> None:
    @cli.command(name="task-ports")
    @click.option("--tasks", "tasks_dir", required=True,
                  type=click.Path(exists=True, file_okay=False, path_type=Path),
                  help="A suite of task.toml folders.")
    @click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
    def task_ports(tasks_dir: Path, as_json: bool) -> None:
        """List each task's top module and ports."""
        from rtlforge.core.errors import TaskFormatError
        from rtlforge.tasks.loader import load_tasks

        try:
            tasks = load_tasks(tasks_dir)
        except TaskFormatError as exc:
            raise click.UsageError(str(exc)) from exc
        ports = {t.id: [f"{p.direction} {p.name}[{p.width}]" for p in t.ports] for t in tasks}
        if as_json:
            click.echo(json.dumps(ports))
            return
        for task_id, names in ports.items():
            click.echo(f"{task_id}: {', '.join(names) or '(no ports declared)'}")
