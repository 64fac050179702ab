"""The ``rtlforge`` command line. The only place that configures logging or draws progress bars.

Exit codes (stable, used by tooling): 0 pass / success, 1 the design did not pass (fail, error,
timeout), 2 usage or input error, 3 infrastructure error (tool missing, sandbox failure, a plugin
that failed to load: ``rtlforge plugins``).
"""

from __future__ import annotations

import json
import logging
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from rtlforge.core.errors import RtlforgeError
from rtlforge.core.log import ROOT_LOGGER
from rtlforge.core.models import (
    Candidate,
    Mismatch,
    SourceFile,
    Task,
    ToolSpec,
    ValidationReport,
    Verdict,
)
from rtlforge.evaluation.protocol import PRESETS, layout_line, sample_layout_record
from rtlforge.tasks.formats import TASK_FORMATS

if TYPE_CHECKING:
    from rtlforge.core.interfaces import Generator, PPAEstimator
    from rtlforge.core.options import PluginSpec
    from rtlforge.core.plugins import PluginHost
    from rtlforge.validate.pipeline import Pipeline

#: Exit codes of every command, plugin commands included (see the module docstring).
EXIT_OK, EXIT_NOT_PASSED, EXIT_USAGE, EXIT_INFRA = 0, 1, 2, 3
_HOST_KEY = "rtlforge.host"


def _configure_logging(verbose: int) -> None:
    """Library events go to stderr at WARNING, INFO with -v, DEBUG with -vv; stdout is results."""
    logger = logging.getLogger(ROOT_LOGGER)
    if not any(getattr(h, "_rtlforge_cli", False) for h in logger.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        handler._rtlforge_cli = True  # type: ignore[attr-defined]
        logger.addHandler(handler)
    logger.setLevel(logging.WARNING - 10 * min(verbose, 2))


def current_host() -> PluginHost:
    """The one plugin host of this CLI invocation, shared by built-in and plugin commands.

    It lives on the root click context, so the allow/block lists read when it is created hold
    for every command, and plugins are loaded once per invocation. Outside a click context (a
    command's function called directly) it is a fresh :meth:`PluginHost.default`.
    """
    from rtlforge.core.plugins import PluginHost

    ctx = click.get_current_context(silent=True)
    if ctx is None:
        return PluginHost.default()
    root = ctx.find_root()
    host = root.meta.get(_HOST_KEY)
    if host is None:
        host = root.meta[_HOST_KEY] = PluginHost.default()
    return host


#: How every command selects plugins (documented in docs/plugins.md).
PLUGIN_OPTION_HELP = ("[NAME.]KEY=VALUE: an option of the selected {kind} NAME, typed by its "
                      "options model (repeatable; the NAME. prefix may be left out when one "
                      "{kind} is selected; see `rtlforge plugins`).")


def plugin_specs(kind: str, names: tuple[str, ...], items: tuple[str, ...], flag: str,
                 *, supplied: tuple[str, ...] = ()) -> list[PluginSpec]:
    """``--KIND NAME`` (repeatable) with ``--KIND-option [NAME.]KEY=VALUE``, checked now.

    An unknown name (with a "did you mean"), an option naming no selected plugin, an unknown
    option or a value of the wrong type is a usage error before any work starts. ``supplied``
    names options the command adds itself (a reward's ``tasks``).
    """
    from rtlforge.core.options import (
        PluginSpec,
        coerce_option_strings,
        group_option_strings,
        split_option_strings,
    )

    try:
        host = current_host()
        for name in names:
            host.get(kind, name)
        grouped = group_option_strings(list(dict.fromkeys(names)), items, flag=flag)
        return [PluginSpec(name=name, options=coerce_option_strings(
                    host.options_model(kind, name), split_option_strings(raw, flag=flag),
                    what=f"{kind} {name!r} ({flag})", supplied=supplied))
                for name, raw in grouped.items()]
    except RtlforgeError as exc:
        raise click.UsageError(str(exc)) from exc


def option_pairs(items: tuple[str, ...], flag: str) -> dict[str, Any]:
    """``k=v`` pairs as text; the generator's options model types them."""
    from rtlforge.core.errors import PluginOptionsError
    from rtlforge.core.options import split_option_strings

    try:
        return split_option_strings(items, flag=flag)
    except PluginOptionsError as exc:
        raise click.UsageError(str(exc)) from exc


def create_generator(host: PluginHost, name: str, options: dict[str, Any]) -> Generator:
    """Generator ``name`` with ``--generator-option`` text typed by its options model; an
    unknown generator or option is a usage error before any work starts."""
    from rtlforge.core.options import coerce_option_strings

    try:
        typed = coerce_option_strings(host.options_model("generator", name), options,
                                      what=f"generator {name!r} (--generator-option)")
        return host.create("generator", name, **typed)
    except (RtlforgeError, TypeError, ValueError) as exc:
        raise click.UsageError(f"generator {name!r}: {exc}") from exc


def prepare_estimator(estimator: PPAEstimator) -> None:
    """Read what a PPA estimator is configured with (its liberty) now: a bad ``--liberty`` is
    then a usage error before any work, not one failure per design after all of it."""
    estimator.cache_key()


def _source(path: Path) -> SourceFile:
    try:
        text = path.read_text()
    except UnicodeDecodeError as exc:
        raise click.UsageError(f"{path} is not a UTF-8 text file") from exc
    return SourceFile(name=path.name, content=text)


def _infer_top(files: list[SourceFile]) -> str:
    """The one module not instantiated by another; ambiguity is a usage error."""
    from rtlforge.eda.modules import declared_modules, top_modules

    declared = [name for f in files for name in declared_modules(f.content)]
    if not declared:
        raise click.UsageError("no module declaration found; pass --top NAME")
    roots = top_modules([f.content for f in files])
    if len(roots) != 1:
        raise click.UsageError(f"cannot tell the top module among {declared}; pass --top NAME")
    return roots[0]


_SIMULATOR_HELP = ("Toolchain whose lint and simulate validators run: icarus, verilator, or one "
                   "a plugin declares (see `rtlforge plugins`).")


class _Group(click.Group):
    """Adds commands that plugins contribute through ``register_commands``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._plugins_loaded = False

    def _load_plugin_commands(self) -> None:
        if not self._plugins_loaded:
            self._plugins_loaded = True
            if logging.getLogger(ROOT_LOGGER).level == logging.NOTSET:
                # Command lookup runs before the group callback: warnings only until -v is read.
                _configure_logging(0)
            # One plugin at a time, like the other hooks: a plugin that raises here loses its
            # own commands, not every later plugin's (pluggy would stop the whole loop).
            for impl in current_host().pm.hook.register_commands.get_hookimpls():
                try:
                    impl.function(cli=self)
                except Exception as exc:  # noqa: BLE001 - a broken plugin must not break the CLI
                    click.echo(f"warning: plugin {impl.plugin_name!r} failed to add commands: "
                               f"{type(exc).__name__}: {exc}", err=True)

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


@cli.command()
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
              help=_SIMULATOR_HELP)
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
    from rtlforge.tasks.loader import load_task
    from rtlforge.validate.pipeline import Pipeline

    if task_dir is not None and (testbench is not None or support):
        raise click.UsageError("--task brings its own testbench and support files; "
                               "drop --testbench/--support")
    validators = plugin_specs("validator", extras, validator_options, "--validator-option")
    try:
        task: Task | None = load_task(task_dir) if task_dir is not None else None
        simulates = testbench is not None or (task is not None and (
            bool(task.testbench) or task.cocotb_module is not None))
        if wave is not None and not simulates:
            raise click.UsageError("--wave needs --testbench (or a --task with one): only a "
                                   "simulation leaves a waveform")
        candidate = Candidate.from_files(designs)
        top = top or (task.top if task is not None else _infer_top(list(candidate.files)))
        if task is not None:
            task = task.model_copy(update={"top": top})
        else:
            task = Task(
                id=top, spec="", top=top,
                testbench=(_source(testbench),) if testbench else (),
                support=tuple(_source(p) for p in support),
            )
        pipeline = Pipeline.build(current_host(), simulator=simulator, synth=synth,
                                  simulate=simulates, extra=validators, timeout=timeout)
        if wave is not None:
            pipeline = _dumping_waves(pipeline, simulator, timeout)
    except (ValueError, RtlforgeError) as exc:
        raise click.UsageError(str(exc)) from exc
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
    sys.exit(_exit_code(report.verdict))


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
    return Pipeline(stages, timeout=timeout)


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


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def plugins(as_json: bool) -> None:
    """List plugin kinds, plugins, their versions, what they register and its options.

    Exit 3 (infrastructure) when a plugin failed to load or a plugin name clashed: the listing
    still shows everything else, and each failure with its reason.
    """
    from dataclasses import asdict

    host = current_host()
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
        for spec in _declared_tools(current_host()):
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


#: ``--tasks``: what ``load_task_map`` reads (``--format`` picks one of TASK_FORMATS).
TASKS_HELP = ("A task suite (task.toml folders), an RTLLM-layout folder, or a VerilogEval v2 "
              "checkout / dataset folder (ProbNNN_name_{prompt.txt,ref.sv,test.sv}).")


def load_task_map(root: Path, fmt: str) -> dict[str, Task]:
    """Tasks under ``root`` by id (:func:`rtlforge.tasks.loader.find_tasks`); a VerilogEval
    problem that cannot be loaded is skipped with a warning on stderr rather than failing the
    whole run. Finding none is a usage error that says which layouts were looked for."""
    from rtlforge.tasks.loader import NoTasksError, find_tasks

    try:
        found = find_tasks(root, fmt)
    except NoTasksError as exc:
        raise click.UsageError(str(exc)) from exc
    for reason in found.skipped:
        click.secho(f"warning: skipped {reason}", fg="yellow", err=True)
    return {t.id: t for t in found.tasks}


def _parse_methods(samples_path: Path | None, samples_dirs: tuple[Path, ...],
                   methods: tuple[str, ...]) -> tuple[list[tuple[str, Path]], str | None]:
    """``--method NAME=DIR`` pairs, ``--samples-dir DIR [--method NAME]`` in order, and an
    optional bare ``--method NAME`` labelling a JSONL file; returns (dirs, jsonl label)."""
    pairs: list[tuple[str, Path]] = []
    bare = [m for m in methods if "=" not in m]
    for item in methods:
        if "=" in item:
            name, _, folder = item.partition("=")
            if not name or not folder:
                raise click.UsageError(f"--method {item!r}: expected NAME=DIR")
            pairs.append((name, Path(folder)))
    label = None
    if bare and not samples_dirs and samples_path is not None and len(bare) == 1:
        label = bare[0]
    elif bare:
        if len(bare) != len(samples_dirs):
            raise click.UsageError(
                f"{len(bare)} bare --method NAME for {len(samples_dirs)} --samples-dir: give "
                "one name per folder (in order), or use --method NAME=DIR")
        pairs += list(zip(bare, samples_dirs, strict=True))
    else:
        pairs += [(d.name.lstrip("_") or d.name, d) for d in samples_dirs]
    names = [n for n, _ in pairs]
    if len(set(names)) != len(names):
        raise click.UsageError(f"method names must be unique, got {names}")
    for name, folder in pairs:
        if not folder.is_dir():
            raise click.UsageError(f"--method {name}: {folder} is not a directory")
    if samples_path is None and not pairs:
        raise click.UsageError("give SAMPLES.jsonl, --samples-dir DIR or --method NAME=DIR")
    return pairs, label


@cli.command(name="eval")
@click.argument("samples_path", metavar="[SAMPLES.jsonl]", required=False,
                type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--tasks", "tasks_dir", required=True,
              type=click.Path(exists=True, file_okay=False, path_type=Path),
              help=TASKS_HELP)
@click.option("--format", "fmt", type=click.Choice(TASK_FORMATS), default="auto",
              show_default=True, help="Layout of --tasks; auto tells them apart.")
@click.option("-k", "ks", default="1,5,10", show_default=True, help="Comma-separated k values.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path),
              help="Per-sample JSONL of reports (default: SAMPLES_results.jsonl beside it, or "
                   "results.jsonl in --report).")
@click.option("--workers", type=click.IntRange(min=1), default=None, help="Parallel workers.")
@click.option("--simulator", default="icarus", show_default=True, metavar="TOOLCHAIN",
              help=_SIMULATOR_HELP)
@click.option("--synth", is_flag=True)
@click.option("--timeout", type=click.FloatRange(min=0.1), default=60.0, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the summary as one JSON object.")
@click.option("--samples-dir", "samples_dirs", multiple=True,
              type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="RTLLM-style LLM outputs (tN/<design>.v, trial N); repeatable.")
@click.option("--method", "methods", multiple=True, metavar="NAME[=DIR]",
              help="NAME=DIR adds an LLM-output folder as method NAME; a bare NAME names the "
                   "--samples-dir of the same position (or labels SAMPLES lines without "
                   "'method'). Repeatable.")
@click.option("--ppa", is_flag=True,
              help="Measure PPA of passing circuits and of each task's golden; adds HVC.")
@click.option("--estimator", default="yosys-sta", show_default=True,
              help="PPA estimator plugin (see `rtlforge plugins`).")
@click.option("--liberty", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Liberty file for the PPA estimator (default: its bundled library).")
@click.option("--estimator-option", "estimator_options", multiple=True,
              metavar="[NAME.]KEY=VALUE", help=PLUGIN_OPTION_HELP.format(kind="estimator"))
@click.option("--validator", "extras", multiple=True, metavar="NAME",
              help="Also run validator plugin NAME on every sample (repeatable).")
@click.option("--validator-option", "validator_options", multiple=True,
              metavar="[NAME.]KEY=VALUE", help=PLUGIN_OPTION_HELP.format(kind="validator"))
@click.option("--reward", "rewards", multiple=True, metavar="NAME",
              help="Also score every sample with reward plugin NAME (repeatable): the results "
                   "carry 'rewards', the summary their means. A reward that takes tasks, a "
                   "pipeline or a PPA estimator gets this run's.")
@click.option("--reward-option", "reward_options", multiple=True,
              metavar="[NAME.]KEY=VALUE", help=PLUGIN_OPTION_HELP.format(kind="reward"))
@click.option("--ast", "with_ast", is_flag=True,
              help="AST similarity of each sample to the golden.")
@click.option("--report", "report_dir", type=click.Path(file_okay=False, path_type=Path),
              help="Write summary.json, records.jsonl and report.html into this folder.")
@click.option("--baseline", "baselines", multiple=True, metavar="METHOD[,METHOD...]",
              help="Baseline method(s) of the Pareto metrics: bootstrap CIs against each and the "
                   "median rHV against the archive of their union (Appendix E.2). Repeatable "
                   "or comma-separated.")
@click.option("--preset", type=click.Choice(sorted(PRESETS)), default=None,
              help="Score as the paper's section 5.3 does: measures PPA (as --ppa) and checks "
                   "that every method has 30 trials of iterations 1..10; the summary's "
                   "'protocol' block says where the samples depart from it.")
@click.option("--include-broken-tasks", "include_broken", is_flag=True,
              help="Count tasks whose golden fails its own testbench (or whose testbench does "
                   "not compile) in pass@k; by default they are left out and listed.")
def eval_cmd(samples_path: Path | None, tasks_dir: Path, fmt: str, ks: str, out: Path | None,
             workers: int | None, simulator: str, synth: bool, timeout: float,
             as_json: bool, samples_dirs: tuple[Path, ...], methods: tuple[str, ...],
             ppa: bool, estimator: str, liberty: Path | None,
             estimator_options: tuple[str, ...], with_ast: bool,
             report_dir: Path | None, baselines: tuple[str, ...], preset: str | None,
             include_broken: bool, extras: tuple[str, ...] = (),
             validator_options: tuple[str, ...] = (), rewards: tuple[str, ...] = (),
             reward_options: tuple[str, ...] = ()) -> None:
    """Score samples with the unbiased pass@k; optionally PPA, Pareto metrics and a report.

    SAMPLES.jsonl has {"task_id", "completion"} per line, optionally "method", "trial" and
    "iteration"; RTLLM LLM-output folders come in with --method NAME=DIR.
    """
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    from rtlforge.core.errors import ToolMissingError
    from rtlforge.core.executor import ThreadExecutor
    from rtlforge.evaluation.evaluate import evaluate_detailed, sample_labels
    from rtlforge.evaluation.report import summarise, write_report
    from rtlforge.tasks.rtllm import load_llm_outputs
    from rtlforge.tasks.samples import load_samples
    from rtlforge.validate.pipeline import Pipeline

    dirs, label = _parse_methods(samples_path, samples_dirs, methods)
    validators = plugin_specs("validator", extras, validator_options, "--validator-option")
    reward_specs = plugin_specs("reward", rewards, reward_options, "--reward-option",
                                supplied=("tasks", "pipeline", "estimator"))
    ppa = ppa or preset is not None  # the paper's metrics need PPA
    unused = [flag for flag, value in (("--liberty", liberty),
                                       ("--estimator-option", estimator_options)) if value]
    if unused and not ppa:
        raise click.UsageError(f"{unused[0]} sets up the PPA estimator: add --ppa")
    baseline_names = [b.strip() for item in baselines for b in item.split(",") if b.strip()]
    if out is None and samples_path is None and report_dir is None:
        raise click.UsageError("without SAMPLES.jsonl, give --out or --report for the results")
    unmatched: list[dict[str, Any]] = []
    aliased: list[dict[str, Any]] = []
    k_values = positive_ints(ks, "-k")
    try:
        task_map = load_task_map(tasks_dir, fmt)
        samples = list(load_samples(samples_path)) if samples_path else []
        for name, folder in dirs:
            loaded = load_llm_outputs(folder, task_map, method=name)
            samples += loaded.samples
            unmatched += [{"method": name, **f.model_dump()} for f in loaded.unmatched]
            aliased += [{"method": name, **f.model_dump()} for f in loaded.aliased]
        if not samples:
            sources = ([str(samples_path)] if samples_path else []) + [str(d) for _, d in dirs]
            raise click.UsageError(f"no samples in {', '.join(sources)}")
        _check_ks(k_values, samples, explicit=_given("ks"))
        host = current_host()
        pipeline = Pipeline.build(host, simulator=simulator, synth=synth, timeout=timeout,
                                  extra=validators)
        ppa_estimator = None
        est_options = plugin_specs("ppa_estimator", (estimator,), estimator_options,
                                   "--estimator-option")[0].options
        if liberty:
            est_options["liberty"] = str(liberty)
        if ppa:
            ppa_estimator = host.create("ppa_estimator", estimator, **est_options)
            prepare_estimator(ppa_estimator)
        ast_reward = host.create("reward", "ast-similarity") if with_ast else None
        scorers = _build_rewards(host, reward_specs, task_map, pipeline,
                                 lambda: ppa_estimator or host.create(
                                     "ppa_estimator", estimator, **est_options))
    except (ValueError, RtlforgeError) as exc:
        raise click.UsageError(str(exc)) from exc
    for f in unmatched:
        click.secho(f"warning: {f['method']}: {f['path']} matches no task ({f['reason']})",
                    fg="yellow", err=True)
    default_method = label or (samples_path.stem if samples_path else "default")
    try:
        present = {sample_labels(s.extra, default_method)[0] for s in samples}
    except RtlforgeError as exc:
        raise click.UsageError(str(exc)) from exc
    missing = [b for b in baseline_names if b not in present]
    if missing:
        raise click.UsageError(f"--baseline {missing[0]!r} is not one of the methods "
                               f"{sorted(present)}")

    if out is None:
        out = (samples_path.with_name(samples_path.stem + "_results.jsonl") if samples_path
               else report_dir / "results.jsonl")  # type: ignore[operator]
    golden_jobs = len({s.task_id for s in samples
                       if s.task_id in task_map and task_map[s.task_id].golden})
    passed = [0]
    with Progress("[progress.description]{task.description}", BarColumn(),
                  MofNCompleteColumn(), TimeElapsedColumn(), transient=as_json,
                  console=None if not as_json else _stderr_console()) as progress:
        bar = progress.add_task("validating", total=len(samples))
        ppa_bar: list[Any] = []

        def validated(res: Any) -> None:
            passed[0] += res.report.passed
            progress.advance(bar)

        def measured() -> None:
            if not ppa_bar:
                ppa_bar.append(progress.add_task("measuring PPA", total=golden_jobs + passed[0]))
            progress.advance(ppa_bar[0])

        with ThreadExecutor(workers) as pool:
            try:
                detailed = evaluate_detailed(
                    samples, task_map, pipeline, default_method=default_method,
                    estimator=ppa_estimator, ast_reward=ast_reward, ks=k_values,
                    executor=pool, on_result=validated, on_measured=measured,
                    include_broken=include_broken)
            except ToolMissingError as exc:
                click.secho(f"error: {exc}", fg="red", err=True)
                sys.exit(EXIT_INFRA)
            except RtlforgeError as exc:
                raise click.UsageError(str(exc)) from exc
            finally:
                if ppa_estimator is not None:
                    ppa_estimator.close()  # persistent sta sessions
    result = detailed.result
    _warn_ppa_failures(detailed)
    for tid, reason in sorted(result.broken_tasks.items()):
        click.secho(f"warning: task {tid}: {reason}; "
                    + ("counted in pass@k (--include-broken-tasks)" if include_broken
                       else "left out of pass@k"), fg="yellow", err=True)

    scored = _score_rewards(scorers, samples, task_map, [r.index for r in result.samples])
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w") as fh:
        for res, det in zip(result.samples, detailed.details, strict=True):
            line: dict[str, Any] = {"index": res.index, "task_id": res.task_id,
                                    **res.report.to_summary(), "method": det.method,
                                    "trial": det.trial, "iteration": det.iteration}
            if ppa:
                line.update(ppa=det.ppa.model_dump() if det.ppa else None,
                            objectives=det.objectives, hvc=det.hvc)
            if with_ast:
                line.update(ast_similarity=det.ast_similarity, ast_status=det.ast_status,
                            ast_backend=det.ast_backend)
            if scorers:
                line["rewards"] = {name: values[res.index] for name, values in scored.items()}
            fh.write(json.dumps(line) + "\n")
    run_info = {"tasks": str(tasks_dir), "simulator": simulator, "synth": synth,
                "estimator": estimator if ppa else None,
                "liberty": str(liberty) if liberty else None, "ast": with_ast,
                "sources": ([str(samples_path)] if samples_path else [])
                + [f"{n}={d}" for n, d in dirs]}
    layout = sample_layout_record(
        [(d.method, d.task_id, d.trial, d.iteration) for d in detailed.details], preset)
    run_info["protocol"] = layout_line(layout)
    summary = summarise(detailed, baseline=baseline_names or None, extra={
        "results_file": str(out), "run": run_info, "protocol": layout,
        **({"unmatched_files": unmatched} if dirs else {}),
        **({"aliased_files": aliased} if aliased else {}),
        **({"report_dir": str(report_dir)} if report_dir else {}),
        **({"rewards": _reward_means(scored)} if scorers else {}),
    })
    if report_dir is not None:
        write_report(report_dir, detailed, summary)
    if as_json:
        click.echo(json.dumps(summary))
    else:
        _print_eval_summary(summary, result.verdicts, out)
        for name, stats in summary.get("rewards", {}).items():
            mean = "n/a" if stats["mean"] is None else f"{stats['mean']:.4f}"
            click.echo(f"reward {name}: mean {mean} over {stats['scored']} scored, "
                       f"{stats['abstained']} abstained")
    infra = result.verdicts.get(Verdict.INFRA_ERROR.value, 0)
    if infra:
        click.secho(f"warning: {infra} samples hit infrastructure errors and were not scored",
                    fg="yellow", err=True)
        sys.exit(EXIT_INFRA)


def _build_rewards(host: PluginHost, specs: list[PluginSpec], task_map: dict[str, Task],
                   pipeline: Pipeline, estimator: Any) -> dict[str, Any]:
    """The ``--reward`` plugins, each given this run's tasks, pipeline and estimator only
    where its options model takes them."""
    from rtlforge.rewards.adapters import create_reward

    return {spec.name: create_reward(host, spec.name, spec.options, tasks=task_map,
                                     pipeline=lambda: pipeline, estimator=estimator)
            for spec in specs}


def _score_rewards(scorers: dict[str, Any], samples: list[Any], task_map: dict[str, Task],
                   indices: list[int]) -> dict[str, dict[int, float | None]]:
    """Each reward's score per sample index (None: abstained, or a sample of no task)."""
    known = [i for i in indices if samples[i].task_id in task_map]
    out: dict[str, dict[int, float | None]] = {}
    for name, reward in scorers.items():
        values: dict[int, float | None] = dict.fromkeys(indices)
        if known:
            scores = reward.score([task_map[samples[i].task_id].spec for i in known],
                                  [samples[i].completion for i in known],
                                  task_id=[samples[i].task_id for i in known])
            values.update(zip(known, scores, strict=True))
        out[name] = values
    return out


def _reward_means(scored: dict[str, dict[int, float | None]]) -> dict[str, dict[str, Any]]:
    out = {}
    for name, values in scored.items():
        got = [v for v in values.values() if v is not None]
        out[name] = {"mean": sum(got) / len(got) if got else None, "scored": len(got),
                     "abstained": len(values) - len(got)}
    return out


def positive_ints(text: str, flag: str) -> list[int]:
    """``1,5,10`` as sorted distinct positive integers; anything else is a usage error that
    names the flag (not Python's ``int()`` message)."""
    values = set()
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        if not item.isdigit() or int(item) < 1:
            raise click.UsageError(f"{flag}: {item!r} is not a positive integer "
                                   f"(expected a comma-separated list such as 1,5,10)")
        values.add(int(item))
    if not values:
        raise click.UsageError(f"{flag}: give at least one positive integer, such as 1,5,10")
    return sorted(values)


def _given(param: str) -> bool:
    """Whether the command line (or the environment) set ``param``, rather than its default."""
    from click.core import ParameterSource

    source = click.get_current_context().get_parameter_source(param)
    return source in (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT)


def _check_ks(ks: list[int], samples: list[Any], *, explicit: bool) -> None:
    """A k no task has enough samples for can never be estimated: refused before any work when
    asked for explicitly (the default 1,5,10 keeps the ks the samples allow)."""
    per_task: dict[str, int] = {}
    for s in samples:
        per_task[s.task_id] = per_task.get(s.task_id, 0) + 1
    most = max(per_task.values())
    if explicit and ks[-1] > most:
        raise click.UsageError(f"-k {ks[-1]}: pass@k needs at least k samples of a task, and "
                               f"no task has more than {most}")


def _warn_ppa_failures(detailed: Any) -> None:
    """One line per kind of PPA failure, so a broken flow is not mistaken for bad designs."""
    failures = [(tid, g.error) for tid, g in detailed.golden.items() if g.error]
    failures += [(d.task_id, d.ppa.error) for d in detailed.details if d.ppa and d.ppa.error]
    if failures:
        tid, first = failures[0]
        click.secho(f"warning: PPA could not be measured for {len(failures)} designs "
                    f"(first, {tid}: {first})", fg="yellow", err=True)


def _print_eval_summary(summary: dict[str, Any], verdicts: dict[str, int], out: Path) -> None:
    click.echo(f"{summary['samples']} samples over {summary['tasks']} tasks -> {out}")
    click.echo("verdicts: " + ", ".join(f"{k}={v}" for k, v in sorted(verdicts.items())))
    for key, value in summary["pass_at_k"].items():
        click.secho(f"{key}: {value:.4f}", bold=True)
    broken = summary.get("broken_tasks") or {}
    if broken:
        how = "counted" if summary.get("broken_tasks_in_pass_at_k") else "left out of pass@k"
        click.echo(f"broken tasks ({how}): {', '.join(sorted(broken))}")
    methods = summary.get("methods", {})
    metrics = summary.get("metrics", {}).get("methods", {})
    if len(methods) > 1 or metrics:
        for name, m in methods.items():
            line = f"  {name}: {m['passed']}/{m['samples']} passed"
            if name in metrics:
                mm = metrics[name]
                last = str(max(int(i) for i in mm["rhv"])) if mm["rhv"] else None
                if last is not None:
                    line += (f", rHV {mm['rhv'][last]:.4f}, win rate "
                             f"{mm['win_rate'][last]:.4f}")
                line += f", diversity {mm['diversity']:.2f}"
            click.echo(line)
    if "report_dir" in summary:
        click.echo(f"report: {summary['report_dir']}/report.html")


def _stderr_console() -> Any:
    from rich.console import Console

    return Console(stderr=True)


def _exit_on_termination() -> None:
    """Make SIGTERM and SIGHUP end the CLI the way Ctrl-C does: as an exception, so that the
    running tool's process group is killed and every run directory removed on the way out
    (Python's default for these signals ends the process on the spot, leaving both behind).
    Only signals still at their default are taken, and each only once: a second one while the
    CLI cleans up is ignored rather than cutting the clean-up short."""
    def stop(signum: int, _frame: object) -> None:
        for sig in taken:
            signal.signal(sig, signal.SIG_IGN)
        raise SystemExit(128 + signum)

    taken = [sig for sig in (signal.SIGTERM, signal.SIGHUP)
             if signal.getsignal(sig) is signal.SIG_DFL]
    for sig in taken:
        signal.signal(sig, stop)


def main() -> None:
    _exit_on_termination()
    cli()


if __name__ == "__main__":
    main()
