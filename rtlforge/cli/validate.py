"""``rtlforge validate``: one design through the validation pipeline, with readable feedback."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from rtlforge.cmdline import (
    PLUGIN_OPTION_HELP,
    SIMULATOR_HELP,
    Finished,
    collector_paused,
    command_host,
    design_top,
    exit_code,
    plugin_specs,
)
from rtlforge.core.errors import ExtractionError, RtlforgeError

if TYPE_CHECKING:
    from rtlforge.core.models import Candidate, Mismatch, SourceFile, Task, ValidationReport
    from rtlforge.validate.pipeline import Pipeline

# Nothing above imports pydantic: the command starts its gate worker first (see validate).


def _source(path: Path) -> SourceFile:
    from rtlforge.core.models import SourceFile

    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise click.UsageError(f"{path} is not a UTF-8 text file") from exc
    return SourceFile(name=path.name, content=text)


def _candidate(designs: tuple[Path, ...]) -> Candidate:
    """The design files; a file holding a fenced LLM answer gives the Verilog inside it (said
    on stderr: line numbers in feedback are then the extracted code's)."""
    from rtlforge.core.extract import extract_verilog
    from rtlforge.core.models import Candidate, SourceFile, is_fenced_answer

    files = []
    for path in designs:
        source = _source(path)
        if is_fenced_answer(source.content):
            try:
                code = extract_verilog(source.content)
            except ExtractionError as exc:
                raise click.UsageError(f"{path} is a fenced LLM answer without a complete "
                                       f"Verilog module: {exc}") from exc
            click.echo(f"{path}: a fenced LLM answer; validating the Verilog inside it "
                       "(feedback lines count from the extracted code)", err=True)
            source = SourceFile(name=source.name, content=code)
        files.append(source)
    return Candidate(files=tuple(files))


def _describe_mismatch(m: Mismatch) -> str:
    """``y at 40 ps: expected 4'b0001, observed 4'b0111 (a=4'b0011, b=4'b0101)``."""
    where = (f" at {m.time}" if m.time else "") + (f" (#{m.cycle})" if m.cycle is not None else "")
    values = ", ".join(f"{k} {v}" for k, v in (("expected", m.expected), ("observed", m.observed))
                       if v is not None)
    inputs = ", ".join(f"{k}={v}" for k, v in m.inputs.items())
    count = f" [{m.count} mismatches]" if m.count is not None else ""
    text = f"{m.signal or '?'}{where}: {values or m.raw}{count}"
    return text + (f" ({inputs})" if inputs else "")


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
        for m in fb.mismatches:
            click.echo(f"  {_describe_mismatch(m)}")
        if fb.hint:
            click.echo(f"  hint: {fb.hint}")


@click.command()
@click.argument("designs", nargs=-1, required=True,
                type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--testbench", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Self-checking testbench; without it only lint (and --synth) run.")
@click.option("--support", multiple=True,
              type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Extra files the testbench needs (data files, shared modules).")
@click.option("--task", "task_dir", type=click.Path(exists=True, file_okay=False,
                                                    path_type=Path),
              help="A task directory (task.toml): its testbench, support files, top and pass "
                   "rule; DESIGNS are the design files to check against it.")
@click.option("--top", help="Top module of the design (default: the task's, else inferred).")
@click.option("--simulator", default="icarus", show_default=True, metavar="TOOLCHAIN",
              help=SIMULATOR_HELP)
@click.option("--synth", is_flag=True, help="Also synthesise with yosys (latches, loops, cells).")
@click.option("--validator", "--extra", "extras", multiple=True, metavar="NAME",
              help="Also run validator plugin NAME, where its order places it (repeatable; "
                   "see `rtlforge plugins`).")
@click.option("--validator-option", "validator_options", multiple=True,
              metavar="[NAME.]KEY=VALUE", help=PLUGIN_OPTION_HELP.format(kind="validator"))
@click.option("--timeout", type=click.FloatRange(min=0.1), default=60.0, show_default=True,
              help="Wall-clock seconds per tool run.")
@click.option("--wave", type=click.Path(dir_okay=False, path_type=Path), metavar="FILE",
              help="Write a VCD of the simulation (the whole testbench) to FILE (Icarus only; "
                   "the dump is cut at 16 MiB and then says so).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def validate(designs: tuple[Path, ...], testbench: Path | None, support: tuple[Path, ...],
             task_dir: Path | None, top: str | None, simulator: str, synth: bool,
             extras: tuple[str, ...], validator_options: tuple[str, ...], timeout: float,
             wave: Path | None, as_json: bool) -> None:
    """Validate DESIGN files: security check, lint, simulate, (synthesise), extra checks."""
    if task_dir is not None and (testbench is not None or support):
        raise click.UsageError("--task brings its own testbench and support files; "
                               "drop --testbench/--support")
    with collector_paused():
        task, candidate, pipeline = _prepare(
            designs, testbench=testbench, support=support, task_dir=task_dir, top=top,
            simulator=simulator, synth=synth, extras=extras,
            validator_options=validator_options, timeout=timeout, wave=wave)
    report = pipeline.validate(task, candidate)
    summary = report.to_summary()
    if wave is not None:
        summary["wave"] = _write_wave(report, wave)
    if as_json:
        click.echo(json.dumps(summary))
    else:
        _print_report(report)
        if wave is not None:
            _print_wave(summary["wave"])
    raise Finished(exit_code(report.verdict))  # everything written is closed


def _prepare(designs: tuple[Path, ...], *, testbench: Path | None, support: tuple[Path, ...],
             task_dir: Path | None, top: str | None, simulator: str, synth: bool,
             extras: tuple[str, ...], validator_options: tuple[str, ...], timeout: float,
             wave: Path | None) -> tuple[Task, Candidate, Pipeline]:
    """The task, the candidate and the pipeline ``validate`` runs, the sandbox already starting."""
    from rtlforge.sandbox.gate import EarlyWorker

    # The gate's worker starts before pydantic and the pipeline are imported, the tools' jail
    # once the runner is: both come up while the rest loads, the task is read and the pipeline
    # built (docs/security.md, "Start-up of a one-shot command").
    early = EarlyWorker.start()
    from rtlforge.core.models import Task
    from rtlforge.sandbox.runner import SandboxRunner

    runner = SandboxRunner()
    if early is not None:
        runner.adopt(early)
    runner.prestart()
    from rtlforge.tasks.loader import load_task
    from rtlforge.validate.pipeline import Pipeline

    validators = plugin_specs(command_host(), "validator", extras, validator_options,
                              "--validator-option")
    try:
        task: Task | None = load_task(task_dir) if task_dir is not None else None
        simulates = testbench is not None or (task is not None and (
            bool(task.testbench) or task.cocotb_module is not None))
        if wave is not None and not simulates:
            raise click.UsageError("--wave needs --testbench (or a --task with one): only a "
                                   "simulation leaves a waveform")
        candidate = _candidate(designs)
        top = design_top(candidate.files, top) if top is not None or task is None else task.top
        if task is not None:
            task = task.model_copy(update={"top": top})
        else:
            task = Task(
                id=top, spec="", top=top,
                testbench=(_source(testbench),) if testbench else (),
                support=tuple(_source(p) for p in support),
            )
        pipeline = Pipeline.build(command_host(), simulator=simulator, synth=synth,
                                  simulate=simulates, extra=validators, timeout=timeout,
                                  runner=runner)
        if wave is not None:
            pipeline = _dumping_waves(pipeline, simulator, timeout)
    except (ValueError, RtlforgeError) as exc:
        raise click.UsageError(str(exc)) from exc
    return task, candidate, pipeline


def _dumping_waves(pipeline: Pipeline, simulator: str, timeout: float) -> Pipeline:
    """The same pipeline with its simulation stage dumping a waveform (``wave=True``)."""
    import dataclasses

    from rtlforge.validate.pipeline import Pipeline

    stages = []
    found = False
    for v in pipeline.validators:
        if v.stage == "simulate" and dataclasses.is_dataclass(v) and any(
                f.name == "wave" for f in dataclasses.fields(v)):
            v, found = dataclasses.replace(v, wave=True), True
        stages.append(v)
    if not found:
        raise ValueError(f"--wave works with --simulator icarus only for now, not {simulator!r}")
    return Pipeline(stages, timeout=timeout, runner=pipeline.runner)


def _write_wave(report: ValidationReport, dest: Path) -> dict[str, Any] | None:
    """Write the simulation's ``wave.vcd`` to ``dest``; None when the run left none (it stopped
    before simulating)."""
    for stage in report.stages:
        for f in stage.files:
            if f.name == "wave.vcd":
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.write_text(f.content, encoding="utf-8")
                return {"path": str(dest), "bytes": len(f.content),
                        "truncated": bool(stage.metrics.get("wave_truncated"))}
    return None


def _print_wave(wave: dict[str, Any] | None) -> None:
    if wave is None:
        click.secho("no waveform: the design did not reach simulation", fg="yellow", err=True)
        return
    cut = " (truncated at the size cap)" if wave["truncated"] else ""
    click.echo(f"waveform: {wave['path']} ({wave['bytes']} bytes){cut}")
