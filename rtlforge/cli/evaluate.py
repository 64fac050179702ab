"""``rtlforge eval``: pass@k (and PPA, rewards, a report) over a samples file or folders."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from rtlforge.cmdline import (
    EXIT_INFRA,
    PLUGIN_OPTION_HELP,
    SIMULATOR_HELP,
    TASKS_HELP,
    command_host,
    load_task_map,
    plugin_specs,
    positive_ints,
    prepare_estimator,
    stderr_console,
)
from rtlforge.core.errors import RtlforgeError
from rtlforge.core.models import Task, Verdict
from rtlforge.evaluation.protocol import PRESETS, layout_line, sample_layout_record
from rtlforge.tasks.formats import TASK_FORMATS

if TYPE_CHECKING:
    from rtlforge.core.options import PluginSpec
    from rtlforge.core.plugins import PluginHost
    from rtlforge.validate.pipeline import Pipeline


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


@click.command(name="eval")
@click.argument("samples_path", metavar="[SAMPLES.jsonl]", required=False,
                type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--tasks", "tasks_dir", required=True,
              type=click.Path(exists=True, path_type=Path),
              help=TASKS_HELP + " Or a CVDP JSONL file (docs/cvdp.md).")
@click.option("--format", "fmt", type=click.Choice(TASK_FORMATS), default="auto",
              show_default=True, help="Layout of --tasks; auto tells them apart.")
@click.option("-k", "ks", default="1,5,10", show_default=True, help="Comma-separated k values.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path),
              help="Per-sample JSONL of reports (default: SAMPLES_results.jsonl beside it, or "
                   "results.jsonl in --report).")
@click.option("--workers", type=click.IntRange(min=1), default=None, help="Parallel workers.")
@click.option("--simulator", default="icarus", show_default=True, metavar="TOOLCHAIN",
              help=SIMULATOR_HELP)
@click.option("--synth", is_flag=True,
              help="Also synthesise each passing design with yosys (latches, loops, cells): a "
                   "design that simulates but does not synthesise then fails.")
@click.option("--timeout", type=click.FloatRange(min=0.1), default=60.0, show_default=True,
              help="Wall-clock seconds per tool run (a run past it is a timeout, not a fail).")
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
    from rtlforge.evaluation.evaluate import pipeline_for, sample_labels
    from rtlforge.evaluation.report import summarise, write_report

    dirs, label = _parse_methods(samples_path, samples_dirs, methods)
    host = command_host()
    validators = plugin_specs(host, "validator", extras, validator_options, "--validator-option")
    reward_specs = plugin_specs(host, "reward", rewards, reward_options, "--reward-option",
                                supplied=("tasks", "pipeline", "estimator"))
    ppa = ppa or preset is not None  # the paper's metrics need PPA
    unused = [flag for flag, value in (("--liberty", liberty),
                                       ("--estimator-option", estimator_options)) if value]
    if unused and not ppa:
        raise click.UsageError(f"{unused[0]} sets up the PPA estimator: add --ppa")
    baseline_names = [b.strip() for item in baselines for b in item.split(",") if b.strip()]
    if out is None and samples_path is None and report_dir is None:
        raise click.UsageError("without SAMPLES.jsonl, give --out or --report for the results")
    k_values = positive_ints(ks, "-k")
    try:
        task_map = load_task_map(tasks_dir, fmt)
        samples, unmatched, aliased = _load_all_samples(samples_path, dirs, task_map)
        _check_ks(k_values, samples, explicit=_given("ks"))
        pipeline = pipeline_for(host, task_map.values(), simulator=simulator, synth=synth,
                                timeout=timeout, extra=validators)
        ppa_estimator = None
        est_options = plugin_specs(host, "ppa_estimator", (estimator,), estimator_options,
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
    detailed = _evaluate_with_progress(
        samples, task_map, pipeline, ppa_estimator, workers=workers, as_json=as_json,
        default_method=default_method, ast_reward=ast_reward, ks=k_values,
        include_broken=include_broken)
    result = detailed.result
    _warn_ppa_failures(detailed)
    for tid, reason in sorted(result.broken_tasks.items()):
        click.secho(f"warning: task {tid}: {reason}; "
                    + ("counted in pass@k (--include-broken-tasks)" if include_broken
                       else "left out of pass@k"), fg="yellow", err=True)

    scored = _score_rewards(scorers, samples, task_map, [r.index for r in result.samples])
    _write_results(out, detailed, scored, ppa=ppa, with_ast=with_ast)
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



def _load_all_samples(samples_path: Path | None, dirs: list[tuple[str, Path]],
                      task_map: dict[str, Task],
                      ) -> tuple[list[Any], list[dict[str, Any]], list[dict[str, Any]]]:
    """The JSONL samples and every ``--method`` folder's files, with the folder files that
    matched no task and those matched through an alias (reported, never silently dropped)."""
    from rtlforge.tasks.rtllm import load_llm_outputs
    from rtlforge.tasks.samples import load_samples

    samples = list(load_samples(samples_path)) if samples_path else []
    unmatched: list[dict[str, Any]] = []
    aliased: list[dict[str, Any]] = []
    for name, folder in dirs:
        loaded = load_llm_outputs(folder, task_map, method=name)
        samples += loaded.samples
        unmatched += [{"method": name, **f.model_dump()} for f in loaded.unmatched]
        aliased += [{"method": name, **f.model_dump()} for f in loaded.aliased]
    if not samples:
        sources = ([str(samples_path)] if samples_path else []) + [str(d) for _, d in dirs]
        raise click.UsageError(f"no samples in {', '.join(sources)}")
    return samples, unmatched, aliased


def _evaluate_with_progress(samples: list[Any], task_map: dict[str, Task], pipeline: Pipeline,
                            estimator: Any, *, workers: int | None, as_json: bool,
                            **options: Any) -> Any:
    """``evaluate_detailed`` over a thread pool, drawing a validation bar and (once a design
    passed) a PPA bar on stderr; a missing tool ends the run with exit 3. The estimator's
    helper processes are closed however it ends."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    from rtlforge.core.errors import ToolMissingError
    from rtlforge.core.executor import ThreadExecutor
    from rtlforge.evaluation.evaluate import evaluate_detailed

    golden_jobs = len({s.task_id for s in samples
                       if s.task_id in task_map and task_map[s.task_id].golden})
    passed = [0]
    with Progress("[progress.description]{task.description}", BarColumn(),
                  MofNCompleteColumn(), TimeElapsedColumn(), transient=as_json,
                  console=None if not as_json else stderr_console()) as progress:
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
                return evaluate_detailed(samples, task_map, pipeline, estimator=estimator,
                                         executor=pool, on_result=validated,
                                         on_measured=measured, **options)
            except ToolMissingError as exc:
                click.secho(f"error: {exc}", fg="red", err=True)
                sys.exit(EXIT_INFRA)
            except RtlforgeError as exc:
                raise click.UsageError(str(exc)) from exc
            finally:
                if estimator is not None:
                    estimator.close()  # persistent sta sessions


def _write_results(out: Path, detailed: Any, scored: dict[str, dict[int, float | None]], *,
                   ppa: bool, with_ast: bool) -> None:
    """One JSON line per sample: its verdict summary, labels, and what was asked for (PPA and
    objectives, AST similarity, each ``--reward``'s value)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w") as fh:
        for res, det in zip(detailed.result.samples, detailed.details, strict=True):
            line: dict[str, Any] = {"index": res.index, "task_id": res.task_id,
                                    **res.report.to_summary(), "method": det.method,
                                    "trial": det.trial, "iteration": det.iteration}
            if ppa:
                line.update(ppa=det.ppa.model_dump() if det.ppa else None,
                            objectives=det.objectives, hvc=det.hvc)
            if with_ast:
                line.update(ast_similarity=det.ast_similarity, ast_status=det.ast_status,
                            ast_backend=det.ast_backend)
            if scored:
                line["rewards"] = {name: values[res.index] for name, values in scored.items()}
            fh.write(json.dumps(line) + "\n")

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
    for group, values in summary.get("pass_at_k_by", {}).items():
        for value, stats in values.items():
            scores = ", ".join(f"{k} {v:.4f}" for k, v in stats.items() if k != "tasks")
            click.echo(f"  {group} {value} ({stats['tasks']} tasks): {scores or 'n/a'}")
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
