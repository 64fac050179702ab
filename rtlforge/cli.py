"""The ``rtlforge`` command line. The only place that configures logging or draws progress bars.

Exit codes (stable, used by tooling): 0 pass / success, 1 the design did not pass (fail, error,
timeout), 2 usage or input error, 3 infrastructure error (tool missing, sandbox failure).
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Any

import click
import structlog

from rtlforge.core.errors import RtlforgeError
from rtlforge.core.models import Candidate, SourceFile, Task, ValidationReport, Verdict

EXIT_OK, EXIT_NOT_PASSED, EXIT_USAGE, EXIT_INFRA = 0, 1, 2, 3


def _configure_logging(verbose: int) -> None:
    level = logging.WARNING - 10 * min(verbose, 2)
    structlog.configure(
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
    )


def _host() -> Any:
    from rtlforge.core.plugins import PluginHost

    return PluginHost()


def _source(path: Path) -> SourceFile:
    try:
        text = path.read_text()
    except UnicodeDecodeError as exc:
        raise click.UsageError(f"{path} is not a UTF-8 text file") from exc
    return SourceFile(name=path.name, content=text)


_MODULE_NAME = r"\bmodule\s+([A-Za-z_][A-Za-z0-9_$]*)"


def _infer_top(files: list[SourceFile]) -> str:
    """The one module not instantiated by another; ambiguity is a usage error."""
    import re

    declared: list[str] = []
    for f in files:
        declared += re.findall(_MODULE_NAME, f.content)
    if not declared:
        raise click.UsageError("no module declaration found; pass --top NAME")
    text = "\n".join(f.content for f in files)
    roots = [m for m in declared
             if not re.search(rf"^\s*{re.escape(m)}\s+(#\s*\(|[A-Za-z_])", text, re.M)]
    if len(roots) != 1:
        raise click.UsageError(f"cannot tell the top module among {declared}; pass --top NAME")
    return roots[0]


class _Group(click.Group):
    """Adds commands that plugins contribute through ``register_commands``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._plugins_loaded = False

    def _load_plugin_commands(self) -> None:
        if not self._plugins_loaded:
            self._plugins_loaded = True
            try:
                _host().pm.hook.register_commands(cli=self)
            except Exception as exc:  # noqa: BLE001 - a broken plugin must not break the CLI
                click.echo(f"warning: a plugin failed to add commands: {exc}", err=True)

    def list_commands(self, ctx: click.Context) -> list[str]:
        self._load_plugin_commands()
        return super().list_commands(ctx)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        cmd = super().get_command(ctx, name)
        if cmd is None:
            self._load_plugin_commands()
            cmd = super().get_command(ctx, name)
        return cmd


@click.group(cls=_Group)
@click.option("-v", "--verbose", count=True, help="More log output on stderr (-vv for debug).")
@click.version_option(package_name="rtlforge")
def cli(verbose: int) -> None:
    """rtlforge: validate, measure and score LLM-generated RTL."""
    _configure_logging(verbose)


def _exit_code(verdict: Verdict) -> int:
    if verdict is Verdict.PASS:
        return EXIT_OK
    if verdict is Verdict.INFRA_ERROR:
        return EXIT_INFRA
    return EXIT_NOT_PASSED


def _print_report(report: ValidationReport) -> None:
    colour = {"pass": "green", "fail": "red", "error": "red", "timeout": "yellow"}
    click.secho(f"verdict: {report.verdict.value}",
                fg=colour.get(report.verdict.value, "magenta"), bold=True)
    for stage in report.stages:
        click.echo(f"  {stage.name:<16} {stage.verdict.value:<12} {stage.seconds:7.3f}s")
    for fb in report.feedback:
        where = f"{fb.file}:{fb.line}: " if fb.file and fb.line else ""
        click.echo(f"- [{fb.category}] {where}{fb.message}")
        if fb.context:
            click.echo(fb.context)
        if fb.hint:
            click.echo(f"  hint: {fb.hint}")


@cli.command()
@click.argument("designs", nargs=-1, required=True,
                type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--testbench", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Self-checking testbench; without it only lint (and --synth) run.")
@click.option("--support", multiple=True,
              type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Extra files the testbench needs (data files, shared modules).")
@click.option("--top", help="Top module of the design (default: inferred).")
@click.option("--simulator", type=click.Choice(["icarus", "verilator"]), default="icarus",
              show_default=True)
@click.option("--synth", is_flag=True, help="Also synthesise with yosys (latches, loops, cells).")
@click.option("--timeout", type=click.FloatRange(min=0.1), default=60.0, show_default=True,
              help="Wall-clock seconds per tool run.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def validate(designs: tuple[Path, ...], testbench: Path | None, support: tuple[Path, ...],
             top: str | None, simulator: str, synth: bool, timeout: float,
             as_json: bool) -> None:
    """Validate DESIGN files: security check, lint, simulate, (synthesise)."""
    from rtlforge.core.pipeline import Pipeline

    try:
        files = [_source(p) for p in designs]
        top = top or _infer_top(files)
        task = Task(
            id=top, spec="", top=top,
            testbench=(_source(testbench),) if testbench else (),
            support=tuple(_source(p) for p in support),
        )
        candidate = Candidate(files=tuple(files))
        pipeline = Pipeline.build(_host(), simulator=simulator, synth=synth,
                                  simulate=testbench is not None, timeout=timeout)
    except (ValueError, RtlforgeError) as exc:
        raise click.UsageError(str(exc)) from exc
    report = pipeline.validate(task, candidate)
    if as_json:
        click.echo(json.dumps(report.to_summary()))
    else:
        _print_report(report)
    sys.exit(_exit_code(report.verdict))


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def plugins(as_json: bool) -> None:
    """List plugins, their versions and what they register."""
    infos = _host().describe()
    if as_json:
        click.echo(json.dumps({"plugins": [
            {"name": i.name, "version": i.version, "distribution": i.distribution,
             "registers": i.registers, "error": i.error} for i in infos]}))
        return
    for info in infos:
        line = f"{info.name} ({info.distribution or 'in-process'} {info.version or ''})".strip()
        click.echo(line)
        for kind, names in sorted(info.registers.items()):
            click.echo(f"  {kind}: {', '.join(sorted(names))}")
        if info.error:
            click.secho(f"  error: {info.error}", fg="red")


def _load_task_map(root: Path, fmt: str) -> dict[str, Task]:
    from rtlforge.core import tasks as taskio

    if fmt == "auto":
        fmt = "suite" if any(root.rglob("task.toml")) else "rtllm"
    loaded = taskio.load_tasks(root) if fmt == "suite" else taskio.load_rtllm(root)
    if not loaded:
        raise click.UsageError(f"no tasks found under {root} (format {fmt})")
    return {t.id: t for t in loaded}


@cli.command(name="eval")
@click.argument("samples_path", metavar="SAMPLES.jsonl",
                type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--tasks", "tasks_dir", required=True,
              type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="A task suite (task.toml folders) or an RTLLM-layout folder.")
@click.option("--format", "fmt", type=click.Choice(["auto", "suite", "rtllm"]), default="auto",
              show_default=True)
@click.option("-k", "ks", default="1,5,10", show_default=True, help="Comma-separated k values.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path),
              help="Per-sample JSONL of reports (default: SAMPLES_results.jsonl beside it).")
@click.option("--workers", type=click.IntRange(min=1), default=None, help="Parallel workers.")
@click.option("--simulator", type=click.Choice(["icarus", "verilator"]), default="icarus",
              show_default=True)
@click.option("--synth", is_flag=True)
@click.option("--timeout", type=click.FloatRange(min=0.1), default=60.0, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the summary as one JSON object.")
def eval_cmd(samples_path: Path, tasks_dir: Path, fmt: str, ks: str, out: Path | None,
             workers: int | None, simulator: str, synth: bool, timeout: float,
             as_json: bool) -> None:
    """Score SAMPLES.jsonl ({"task_id", "completion"} per line) with the unbiased pass@k."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    from rtlforge.core import tasks as taskio
    from rtlforge.core.evaluate import evaluate_samples
    from rtlforge.core.executor import ThreadExecutor
    from rtlforge.core.pipeline import Pipeline

    try:
        k_values = sorted({int(k) for k in ks.split(",") if k.strip()})
        task_map = _load_task_map(tasks_dir, fmt)
        samples = [(s.task_id, s.completion) for s in taskio.load_samples(samples_path)]
        pipeline = Pipeline.build(_host(), simulator=simulator, synth=synth, timeout=timeout)
    except (ValueError, RtlforgeError) as exc:
        raise click.UsageError(str(exc)) from exc

    out = out or samples_path.with_name(samples_path.stem + "_results.jsonl")
    with Progress("[progress.description]{task.description}", BarColumn(),
                  MofNCompleteColumn(), TimeElapsedColumn(), transient=as_json,
                  console=None if not as_json else _stderr_console()) as progress:
        bar = progress.add_task("validating", total=len(samples))
        with ThreadExecutor(workers) as pool:
            try:
                result = evaluate_samples(samples, task_map, pipeline, ks=k_values,
                                          executor=pool,
                                          on_result=lambda _: progress.advance(bar))
            except RtlforgeError as exc:
                raise click.UsageError(str(exc)) from exc

    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w") as fh:
        for res in result.samples:
            fh.write(json.dumps({"index": res.index, "task_id": res.task_id,
                                 **res.report.to_summary()}) + "\n")
    summary = {**result.summary(), "results_file": str(out)}
    if as_json:
        click.echo(json.dumps(summary))
    else:
        click.echo(f"{summary['samples']} samples over {summary['tasks']} tasks -> {out}")
        click.echo("verdicts: " + ", ".join(f"{k}={v}" for k, v in sorted(result.verdicts.items())))
        for key, value in summary["pass_at_k"].items():
            click.secho(f"{key}: {value:.4f}", bold=True)
    infra = result.verdicts.get(Verdict.INFRA_ERROR.value, 0)
    if infra:
        click.secho(f"warning: {infra} samples hit infrastructure errors and were not scored",
                    fg="yellow", err=True)
        sys.exit(EXIT_INFRA)


def _stderr_console() -> Any:
    from rich.console import Console

    return Console(stderr=True)


def main() -> None:
    cli()


if __name__ == "__main__":
    main()
