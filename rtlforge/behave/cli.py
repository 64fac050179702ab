"""``rtlforge behave check`` (RTL vs the task's golden B*) and ``rtlforge behave check-model``
(an agent's behaviour model B̂ vs B*), registered by :mod:`rtlforge.behave.plugin`.

Exit codes as ``rtlforge validate``: 0 pass, 1 not passed (fail, error, timeout), 2 usage or
input error (a bad task directory, a golden or model that does not check or does not fit the
interface: the message names the line), 3 infrastructure error. ``--json`` prints one object:
``verdict``, ``mismatches``, ``first_failure``, ``coverage``, ``goals`` (hit / unresolved /
bounded_unreachable), plus ``artifact``, ``violations``, ``message`` and ``metrics``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import click

from rtlforge.cli import EXIT_INFRA, EXIT_NOT_PASSED, EXIT_OK

if TYPE_CHECKING:
    from rtlforge.behave.sim.run import SimBackend

__all__ = ["behave", "exit_code", "summary"]


def exit_code(verdict: str) -> int:
    if verdict == "pass":
        return EXIT_OK
    if verdict == "infra_error":
        return EXIT_INFRA
    return EXIT_NOT_PASSED


def summary(result: Any, goals: Any) -> dict[str, Any]:
    """The one JSON object of a check (a BehaveResult and its GoalReport)."""
    first = result.first_failure
    return {
        "verdict": result.verdict,
        "artifact": result.artifact,
        "mismatches": result.mismatches,
        "first_failure": first.model_dump(mode="json") if first is not None else None,
        "violations": [v.model_dump(mode="json") for v in result.violations],
        "coverage": result.coverage.model_dump(mode="json"),
        "goals": goals.model_dump(mode="json") if goals is not None else None,
        "message": result.message,
        "metrics": dict(result.metrics),
    }


def _load(task_dir: Path) -> tuple[Any, Any]:
    """The task and its golden model; any problem with either is a usage error (exit 2)."""
    from rtlforge.behave.sim.golden import golden_model
    from rtlforge.behave.sim.task import BehaveTaskError, load_behave_task

    try:
        task = load_behave_task(task_dir)
        return task, golden_model(task)
    except BehaveTaskError as exc:
        raise click.UsageError(f"--task {task_dir}: {exc}") from exc


def _report(result: Any, golden: Any, as_json: bool, budget_s: float, steps: int) -> None:
    from rtlforge.behave.sim.golden import goal_report

    goals = None
    if result.coverage.branch_goals is not None:
        goals = goal_report(golden, result.coverage.branch_goals, budget_s=budget_s,
                            steps=steps)
    if as_json:
        click.echo(json.dumps(summary(result, goals)))
    else:
        _print(result, goals)
    sys.exit(exit_code(result.verdict))


def _print(result: Any, goals: Any) -> None:
    colour = {"pass": "green", "fail": "red", "error": "red", "timeout": "yellow"}
    click.secho(f"verdict: {result.verdict}", fg=colour.get(result.verdict, "magenta"),
                bold=True)
    cov = result.coverage
    click.echo(f"  transactions {cov.transactions}, outputs {cov.outputs}, completed "
               f"{cov.completed}, resets {cov.resets}, mismatches {result.mismatches}")
    if goals is not None:
        line = f"  golden branch goals: {len(goals.hit)}/{goals.total} hit"
        if goals.bounded_unreachable:
            line += (f", {len(goals.bounded_unreachable)} unreachable within {goals.steps} "
                     "transactions")
        click.echo(line)
        for name in goals.unresolved:
            click.echo(f"    unresolved: {name}")
    for v in result.violations:
        click.echo(f"- [{v.kind}] {v.interface} at cycle {v.cycle}: {v.message}")
    if result.first_failure is not None:
        click.echo(result.first_failure.describe())
    elif result.message and result.verdict != "pass":
        click.echo(result.message)


def _stimulus(seed: int, sequences: int, transactions: int) -> Any:
    from rtlforge.behave.sim.stimulus import StimulusConfig

    return StimulusConfig(seed=seed, sequences=sequences, transactions=transactions)


_TASK = click.option("--task", "task_dir", required=True,
                     type=click.Path(exists=True, file_okay=False, path_type=Path),
                     help="A BEHAVE task directory (behave.toml, spec, golden model).")
_JSON = click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
_SEED = click.option("--seed", type=int, default=0, show_default=True,
                     help="Seed of the random stimulus.")
_SEQUENCES = click.option("--sequences", type=click.IntRange(min=0), default=50,
                          show_default=True, help="Random sequences (after the edge sweep).")
_TRANSACTIONS = click.option("--transactions", type=click.IntRange(min=1), default=100,
                             show_default=True, help="Transactions per sequence.")
_SOLVE = click.option("--solve-budget", "solve_budget", type=click.FloatRange(min=0),
                      default=1.0, show_default=True, metavar="SECONDS",
                      help="Wall-clock seconds for Z3 to prove unhit golden goals unreachable "
                           "(bounded by --solve-steps from reset; 0: off; needs z3-solver).")
_STEPS = click.option("--solve-steps", "solve_steps", type=click.IntRange(1, 16), default=4,
                      show_default=True, help="Sequence length bound of that proof.")


@click.group()
def behave() -> None:
    """BEHAVE-Sim: check RTL or a behaviour model against a task's golden behaviour model."""


@behave.command("check")
@click.argument("designs", nargs=-1, required=True,
                type=click.Path(exists=True, dir_okay=False, path_type=Path))
@_TASK
@_JSON
@_SEED
@_SEQUENCES
@_TRANSACTIONS
@click.option("--timeout", type=click.FloatRange(min=0.1), default=120.0, show_default=True,
              help="Wall-clock seconds per tool run.")
@click.option("--backend", type=click.Choice(["icarus", "verilator", "cocotb"]),
              default="icarus", show_default=True,
              help="Simulator: Icarus; Verilator (a build of seconds, fast on long runs); "
                   "cocotb (Python drives the design on Icarus).")
@_SOLVE
@_STEPS
def check(designs: tuple[Path, ...], task_dir: Path, as_json: bool, seed: int, sequences: int,
          transactions: int, timeout: float, backend: str, solve_budget: float,
          solve_steps: int) -> None:
    """Simulate DESIGN files in the task's generated testbench and judge them against B*."""
    from rtlforge.behave.sim.check import check_rtl
    from rtlforge.core.errors import RtlforgeError
    from rtlforge.core.models import Candidate

    task, golden = _load(task_dir)
    try:
        candidate = Candidate.from_files(designs)
    except (ValueError, RtlforgeError) as exc:
        raise click.UsageError(str(exc)) from exc
    result = check_rtl(task, candidate, stimulus=_stimulus(seed, sequences, transactions),
                       golden=golden.instance(), timeout_s=timeout,
                       backend=cast("SimBackend", backend))
    _report(result, golden, as_json, solve_budget, solve_steps)


@behave.command("check-model")
@click.argument("model_path", metavar="MODEL.py",
                type=click.Path(exists=True, dir_okay=False, path_type=Path))
@_TASK
@_JSON
@_SEED
@_SEQUENCES
@_TRANSACTIONS
@_SOLVE
@_STEPS
def check_model_command(model_path: Path, task_dir: Path, as_json: bool, seed: int,
                        sequences: int, transactions: int, solve_budget: float,
                        solve_steps: int) -> None:
    """Check a behaviour-DSL model (B̂: checked and interpreted, never run) against B*."""
    from rtlforge.behave.sim.check import check_model
    from rtlforge.behave.sim.golden import TaskModelError, load_task_model, read_model_file

    task, golden = _load(task_dir)
    try:
        model = load_task_model(task, read_model_file(model_path), name=model_path.stem)
    except TaskModelError as exc:  # the artifact under test is wrong: its verdict, as validate
        from rtlforge.behave.sim.check import BehaveResult

        _report(BehaveResult(verdict="error", artifact="model", message=f"{model_path}: {exc}"),
                golden, as_json, 0.0, solve_steps)
        return
    result = check_model(task, model, stimulus=_stimulus(seed, sequences, transactions),
                         golden=golden.instance())
    _report(result, golden, as_json, solve_budget, solve_steps)
