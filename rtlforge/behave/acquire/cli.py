"""``rtlforge acquire ROLLOUT_LOG --sources DIR --pool DIR --generator NAME``: one acquisition
round (registered by :mod:`rtlforge.behave.plugin`).

Exit codes: 0 the round ran (whatever it admitted), 2 usage or input error (a bad rollout log,
source library, evaluation set, pool or role), 3 some candidate was unresolved because the
generator, a role plugin or the checker failed (the rest of the round is still recorded).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from rtlforge.cmdline import (
    EXIT_INFRA,
    EXIT_OK,
    PLUGIN_OPTION_HELP,
    command_host,
    create_generator,
    option_pairs,
)

__all__ = ["acquire"]

_STAGES = ("analyst", "builder", "implementer", "reviewer")


def _roles(items: tuple[str, ...]) -> dict[str, str]:
    from rtlforge.behave.acquire.roles import DEFAULT_ROLES

    roles: dict[str, str] = dict(DEFAULT_ROLES)
    for item in items:
        stage, sep, name = item.partition("=")
        if not sep or stage not in _STAGES or not name:
            raise click.UsageError(f"--role {item!r}: expected STAGE=NAME with STAGE one of "
                                   f"{', '.join(_STAGES)}")
        roles[stage] = name
    return roles


@click.command("acquire")
@click.argument("rollout_log", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--sources", "sources_dir", required=True,
              type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="the source library (folders with meta.toml)")
@click.option("--pool", "pool_dir", required=True, type=click.Path(path_type=Path),
              help="the cumulative task pool (created when absent)")
@click.option("--generator", "generator_name", required=True,
              help="generator plugin every role uses unless its settings name another")
@click.option("--generator-option", "generator_options", multiple=True,
              help=PLUGIN_OPTION_HELP.format(kind="generator"))
@click.option("--report", "report_dir", type=click.Path(file_okay=False, path_type=Path),
              help="also write report.html and records.jsonl here")
@click.option("--evaluation", "evaluation", multiple=True,
              type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="an evaluation set (RTLLM tree or VerilogEval folder) sources must not "
                   "overlap; repeatable")
@click.option("--role", "role_items", multiple=True,
              help="STAGE=NAME: the agent_role plugin for a stage (repeatable)")
@click.option("--max-picks", type=click.IntRange(1, 20), default=2, show_default=True)
@click.option("--max-rounds", type=click.IntRange(1, 10), default=3, show_default=True,
              help="construction-and-review rounds per candidate")
@click.option("--seed", type=int, default=0, show_default=True,
              help="BEHAVE-Sim stimulus seed for B2 vs B1")
@click.option("--json", "as_json", is_flag=True, help="print the round's records as JSON")
def acquire(rollout_log: Path, sources_dir: Path, pool_dir: Path, generator_name: str,
            generator_options: tuple[str, ...], report_dir: Path | None,
            evaluation: tuple[Path, ...], role_items: tuple[str, ...], max_picks: int,
            max_rounds: int, seed: int, as_json: bool) -> None:
    """Run one task-acquisition round over ROLLOUT_LOG (JSONL of completed rollouts:
    task_id, reward, feedback) and admit the accepted tasks into --pool."""
    from rtlforge.behave.acquire.report import write_report
    from rtlforge.behave.acquire.round import RoundConfig, read_rollout_log, run_round
    from rtlforge.behave.acquire.sources import EvaluationIndex, load_library
    from rtlforge.behave.acquire.taskpool import TaskPool
    from rtlforge.core.errors import ConfigError

    host = command_host()
    config = RoundConfig(max_picks=max_picks, max_rounds=max_rounds, seed=seed,
                         roles=_roles(role_items))  # type: ignore[arg-type]
    try:
        rollouts = read_rollout_log(rollout_log)
        index = EvaluationIndex.from_paths(list(evaluation)) if evaluation else None
        library = load_library(sources_dir, evaluation=index)
        pool = TaskPool(pool_dir)
    except ConfigError as exc:
        raise click.UsageError(str(exc)) from exc
    generator = create_generator(host, generator_name,
                                 option_pairs(generator_options, "--generator-option"))
    try:
        try:
            result = run_round(host=host, generator=generator, pool=pool, library=library,
                               rollouts=rollouts, config=config)
        except ConfigError as exc:
            raise click.UsageError(str(exc)) from exc
    finally:
        generator.close()
    report = write_report(result, report_dir) if report_dir is not None else (
        pool.round_dir(result.round) / "report.html")
    _print(result, report, as_json)
    raise SystemExit(EXIT_INFRA if result.of("unresolved") else EXIT_OK)


def _print(result: Any, report: Path, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps({"round": result.round, "gaps": list(result.gaps),
                               "report": str(report),
                               "records": [r.model_dump(mode="json") for r in result.records]}))
        return
    click.echo(f"acquisition round {result.round}: {len(result.of('admission'))} admitted, "
               f"{len(result.of('rejection'))} rejected, {len(result.of('exclusion'))} "
               f"sources excluded, {len(result.of('unresolved'))} unresolved")
    for record in result.records:
        what = record.task_id or record.candidate or ",".join(record.sources) or "-"
        click.echo(f"  {record.kind:<10} {what}: {record.reason}: {record.message[:200]}")
    click.echo(f"report: {report}")
