"""``rtlforge explore`` (sequential Pareto exploration) and ``rtlforge generate`` (one-shot).

Only this module draws progress bars; the engine (:mod:`rtlforge.explore.engine`) reports events.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rtlforge.core.hookspecs import hookimpl
from rtlforge.evaluation.protocol import PRESETS

if TYPE_CHECKING:
    from rtlforge.core.plugins import PluginHost

PRESET_NAMES = tuple(PRESETS)


def _apply_preset(ctx: Any, name: str, given: dict[str, Any]) -> dict[str, Any]:
    """The preset's value for every option the command line did not give; explicit ones win.

    A note on stderr names each explicit option that overrides the preset (the summary's
    ``protocol`` block records the same), so a custom run is never mistaken for the preset.
    """
    import click
    from click.core import ParameterSource

    from rtlforge.evaluation.protocol import preset as get_preset

    proto = get_preset(name)
    values = {"template": proto.method.template, "history": proto.method.history,
              "history_limit": proto.method.history_limit or 0,
              "iterations": proto.iterations, "trials": proto.trials,
              "samples": proto.method.samples, "temperature": proto.method.temperature,
              "checkpoints": ",".join(map(str, proto.checkpoints))}
    flags = {"template": "--template", "history": "--history", "history_limit": "--history-limit",
             "iterations": "--iterations", "trials": "--trials", "samples": "-n",
             "temperature": "--temperature", "checkpoints": "--checkpoints"}
    out = {}
    for key, value in given.items():
        source = ctx.get_parameter_source(key)
        explicit = source in (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT)
        out[key] = value if explicit else values[key]
        if explicit and value != values[key]:
            click.echo(f"note: {flags[key]} {value} overrides --preset {name} "
                       f"({values[key]}); this run is not the {name} protocol", err=True)
    return out


def _spec_task(spec: Path) -> Any:
    """A Task from a free-standing spec file; the top module comes from a header in it, else
    from a "module named X" sentence (how VerilogEval v2's spec-to-rtl prompts name it)."""
    import re

    from rtlforge.core.models import Task

    text = spec.read_text(encoding="utf-8")
    # Prose with, at most, a trailing Verilog header: only a line that starts with ``module``
    # counts. A Verilog parser (eda.modules) would read "the module should ..." as a declaration.
    found = re.findall(r"^\s*module\s+([A-Za-z_]\w*)", text, re.M)
    named = re.findall(r"\bmodule\s+named\s+`?([A-Za-z_]\w*)", text)
    top = found[-1] if found else named[0] if named else "top_module"
    # ``ProbNNN_name_prompt.txt`` is problem ``ProbNNN_name``, the id VerilogEval's tasks carry
    return Task(id=spec.stem.removesuffix("_prompt") or spec.stem, spec=text, top=top)


@hookimpl
def register_commands(cli: Any, host: PluginHost) -> None:
    import click

    @cli.command(name="generate")
    @click.option("--generator", "generator_name", required=True, help="Generator plugin.")
    @click.option("--generator-option", "gen_opts", multiple=True, metavar="KEY=VALUE",
                  help="Option passed to the generator (repeatable).")
    @click.option("--base-url", help="Shortcut for --generator-option base_url=URL.")
    @click.option("--model", help="Shortcut for --generator-option model=NAME.")
    @click.option("--spec", "spec_path", type=click.Path(exists=True, dir_okay=False,
                                                         path_type=Path),
                  help="A spec file (prose, or a whole VerilogEval-style prompt).")
    @click.option("--task", "task_dir", type=click.Path(exists=True, file_okay=False,
                                                        path_type=Path),
                  help="A task directory (task.toml).")
    @click.option("--template", default="spec", show_default=True,
                  help="Prompt template: a bundled name (spec, pareto, spec-to-rtl: "
                       "VerilogEval v2's own) or a .toml file.")
    @click.option("-n", "samples", type=click.IntRange(min=1), default=1, show_default=True)
    @click.option("--temperature", type=click.FloatRange(min=0), default=0.8,
                  show_default=True)
    @click.option("--max-tokens", type=click.IntRange(min=1), default=2048, show_default=True)
    @click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
    def generate(generator_name: str, gen_opts: tuple[str, ...], base_url: str | None,
                 model: str | None, spec_path: Path | None, task_dir: Path | None,
                 template: str, samples: int, temperature: float, max_tokens: int,
                 as_json: bool) -> None:
        """Sample candidates for one spec or task and print the extracted Verilog."""
        from rtlforge.cmdline import EXIT_INFRA, create_generator, option_pairs
        from rtlforge.core.errors import RtlforgeError
        from rtlforge.core.interfaces import SamplingParams
        from rtlforge.generation.base import with_candidates
        from rtlforge.generation.prompts import load_template
        from rtlforge.tasks.loader import load_task

        if (spec_path is None) == (task_dir is None):
            raise click.UsageError("give exactly one of --spec FILE or --task DIR")
        options = option_pairs(gen_opts, "--generator-option")
        options.update({k: v for k, v in (("base_url", base_url), ("model", model)) if v})
        try:
            task = load_task(task_dir) if task_dir is not None else _spec_task(spec_path)  # type: ignore[arg-type]
            request = load_template(template).request(task)
        except UnicodeDecodeError as exc:
            raise click.UsageError(f"{spec_path or task_dir} is not a UTF-8 text file") from exc
        except (RtlforgeError, ValueError) as exc:
            raise click.UsageError(str(exc)) from exc
        gen = create_generator(host, generator_name, options)
        params = SamplingParams(n=samples, temperature=temperature, max_tokens=max_tokens)
        try:
            outputs = with_candidates(gen.generate([request], params), [request])
        except RtlforgeError as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(EXIT_INFRA)
        candidates = []
        for g in outputs[0] if outputs else []:
            if g.candidate is None:  # no Verilog in this answer
                continue
            source = "\n".join(f.content for f in g.candidate.files)
            candidates.append({"source": source, "generator": g.generator})
        if as_json:
            click.echo(json.dumps({"candidates": candidates}))
            return
        if not candidates:
            click.echo("no candidate (the generator declined or returned no Verilog)", err=True)
        for i, cand in enumerate(candidates, start=1):
            click.secho(f"// candidate {i} ({cand['generator']})", bold=True)
            click.echo(cand["source"])

    @cli.command(name="explore")
    @click.option("--tasks", "tasks_dir", required=True,
                  type=click.Path(exists=True, file_okay=False, path_type=Path),
                  help="A task suite (task.toml folders), an RTLLM-layout folder, or a "
                       "VerilogEval v2 checkout / dataset folder.")
    @click.option("--task", "task_ids", multiple=True, help="Only these task ids (repeatable).")
    @click.option("--generator", "generator_name", default=None,
                  help="Generator plugin of the default method.")
    @click.option("--generator-option", "gen_opts", multiple=True, metavar="KEY=VALUE",
                  help="Option for every generator (repeatable).")
    @click.option("--base-url", help="Shortcut for --generator-option base_url=URL.")
    @click.option("--model", help="Shortcut for --generator-option model=NAME.")
    @click.option("--method", "method_specs", multiple=True,
                  metavar="NAME=GENERATOR[:TEMPLATE]",
                  help="A method to compare (repeatable); TEMPLATE defaults to --template.")
    @click.option("--preset", type=click.Choice(sorted(PRESET_NAMES)), default=None,
                  help="Start from a protocol's settings: 'paper' = the paper's section 5.3 "
                       "(temperature 0.5, 30 trials, 10 iterations, -n 1, history all, no "
                       "limit, template paper). Options given explicitly still win; the "
                       "summary records which.")
    @click.option("--template", default="pareto", show_default=True,
                  help="Prompt template: a bundled name (pareto, paper, spec, spec-to-rtl) "
                       "or a .toml file.")
    @click.option("--history", type=click.Choice(["passing-only", "all", "front"]),
                  default="all", show_default=True,
                  help="Which earlier circuits the prompt shows (all: failing ones too).")
    @click.option("--history-limit", type=click.IntRange(min=0), default=0,
                  show_default=True,
                  help="Most recent history entries shown; 0: the whole history.")
    @click.option("--select", default="", metavar="KEYS",
                  help="Comma-separated labels (method,trial,iteration) every request carries "
                       "in its metadata; replay selects recordings by them.")
    @click.option("--iterations", type=click.IntRange(min=1), default=10, show_default=True)
    @click.option("--trials", type=click.IntRange(min=1), default=1, show_default=True)
    @click.option("-n", "samples", type=click.IntRange(min=1), default=1, show_default=True,
                  help="Samples per iteration (one group).")
    @click.option("--temperature", type=click.FloatRange(min=0), default=0.5,
                  show_default=True)
    @click.option("--max-tokens", type=click.IntRange(min=1), default=2048, show_default=True)
    @click.option("--run-dir", type=click.Path(file_okay=False, path_type=Path),
                  default=Path("runs/explore"), show_default=True)
    @click.option("--dry-run", is_flag=True,
                  help="Print each method's first prompt and exit.")
    @click.option("--overwrite", is_flag=True,
                  help="Delete what explore wrote in --run-dir and start over.")
    @click.option("--extend", is_flag=True,
                  help="Reuse --run-dir with more --iterations and/or --trials, every other "
                       "setting equal (without it, a run directory is resumed only when all "
                       "its settings match).")
    @click.option("--ppa-estimator", default="yosys-sta", show_default=True,
                  help="PPA estimator plugin; 'none' for verdicts only.")
    @click.option("--liberty", type=click.Path(exists=True, dir_okay=False, path_type=Path),
                  help="Liberty file for the estimator (default: its bundled library).")
    @click.option("--estimator-option", "estimator_options", multiple=True,
                  metavar="[NAME.]KEY=VALUE",
                  help="An option of --ppa-estimator, typed by its options model (repeatable).")
    @click.option("--validator", "extras", multiple=True, metavar="NAME",
                  help="Also run validator plugin NAME on every candidate (repeatable).")
    @click.option("--validator-option", "validator_options", multiple=True,
                  metavar="[NAME.]KEY=VALUE",
                  help="An option of a --validator, typed by its options model (repeatable; "
                       "NAME. may be left out when one validator is selected).")
    @click.option("--ast/--no-ast", "with_ast", default=True, show_default=True,
                  help="AST similarity to the golden when the reward is available.")
    @click.option("--checkpoints", default="1,5,10", show_default=True,
                  help="Iterations whose rHV the summary reports.")
    @click.option("--baseline", "baselines", multiple=True, metavar="METHOD[,METHOD...]",
                  help="Baseline method(s): the bootstrap CIs compare the others against each, "
                       "and the median rHV against the archive of their union is reported "
                       "(Appendix E.2). Repeatable or comma-separated.")
    @click.option("--workers", type=click.IntRange(min=1), default=None)
    @click.option("--simulator", type=click.Choice(["icarus", "verilator"]), default="icarus",
                  show_default=True)
    @click.option("--timeout", type=click.FloatRange(min=0.1), default=60.0, show_default=True)
    @click.option("--json", "as_json", is_flag=True, help="Print the summary as one JSON object.")
    def explore(tasks_dir: Path, task_ids: tuple[str, ...], generator_name: str | None,
                gen_opts: tuple[str, ...], base_url: str | None, model: str | None,
                method_specs: tuple[str, ...], preset: str | None, template: str, history: str,
                history_limit: int, select: str, iterations: int, trials: int, samples: int,
                temperature: float, max_tokens: int, run_dir: Path, dry_run: bool,
                overwrite: bool, extend: bool, ppa_estimator: str, liberty: Path | None,
                with_ast: bool, checkpoints: str,
                baselines: tuple[str, ...], workers: int | None, simulator: str,
                timeout: float, as_json: bool, estimator_options: tuple[str, ...] = (),
                extras: tuple[str, ...] = (), validator_options: tuple[str, ...] = ()) -> None:
        """Sequential Pareto exploration: each iteration sees the earlier circuits and PPA."""
        from rtlforge.cmdline import (
            EXIT_INFRA,
            create_generator,
            load_task_map,
            option_pairs,
            plugin_specs,
            positive_ints,
            prepare_estimator,
        )
        from rtlforge.core.errors import RtlforgeError, ToolMissingError
        from rtlforge.core.interfaces import SamplingParams
        from rtlforge.explore.engine import Explorer, Method
        from rtlforge.validate.pipeline import Pipeline

        if preset is not None:
            chosen = _apply_preset(click.get_current_context(), preset, {
                "template": template, "history": history, "history_limit": history_limit,
                "iterations": iterations, "trials": trials, "samples": samples,
                "temperature": temperature, "checkpoints": checkpoints})
            template, history, history_limit = (chosen["template"], chosen["history"],
                                                chosen["history_limit"])
            iterations, trials, samples = chosen["iterations"], chosen["trials"], chosen["samples"]
            temperature, checkpoints = chosen["temperature"], chosen["checkpoints"]
        if overwrite and extend:
            raise click.UsageError("use either --overwrite or --extend, not both")
        if liberty is not None and ppa_estimator == "none":
            raise click.UsageError("--liberty is for the PPA estimator, and --ppa-estimator "
                                   "is none")
        baseline_names = [b.strip() for item in baselines for b in item.split(",") if b.strip()]
        options = option_pairs(gen_opts, "--generator-option")
        options.update({k: v for k, v in (("base_url", base_url), ("model", model)) if v})
        pairs: list[tuple[str, str, str]] = []
        for spec in method_specs:
            name, sep, rest = spec.partition("=")
            gen_name, _, tmpl = rest.partition(":")
            if not sep or not name or not gen_name:
                raise click.UsageError(f"--method {spec!r}: expected NAME=GENERATOR[:TEMPLATE]")
            pairs.append((name, gen_name, tmpl or template))
        if not pairs:
            if generator_name is None:
                raise click.UsageError("give --generator NAME or --method NAME=GENERATOR")
            pairs.append((generator_name, generator_name, template))
        elif generator_name is not None:
            raise click.UsageError("use either --generator or --method, not both")
        marks = tuple(positive_ints(checkpoints, "--checkpoints"))
        validators = plugin_specs(host, "validator", extras, validator_options,
                                  "--validator-option")
        est_options = {} if ppa_estimator == "none" else plugin_specs(
            host, "ppa_estimator", (ppa_estimator,), estimator_options,
            "--estimator-option")[0].options
        if estimator_options and ppa_estimator == "none":
            raise click.UsageError("--estimator-option needs a --ppa-estimator")
        if liberty:
            est_options["liberty"] = str(liberty)
        try:
            task_map = load_task_map(tasks_dir, "auto")
            if task_ids:
                missing = sorted(set(task_ids) - set(task_map))
                if missing:
                    raise click.UsageError(f"unknown task ids: {', '.join(missing)}")
                task_map = {t: task_map[t] for t in task_ids}
            params = SamplingParams(n=samples, temperature=temperature, max_tokens=max_tokens)
            methods = [Method(name=n, generator=create_generator(host, g, options), template=t,
                              sampling=params, history=history,  # type: ignore[arg-type]
                              history_limit=history_limit or None,
                              select=tuple(k.strip() for k in select.split(",") if k.strip()),
                              generator_options=options)
                       for n, g, t in pairs]
            estimator = None
            if ppa_estimator != "none" and not dry_run:
                estimator = host.create("ppa_estimator", ppa_estimator, **est_options)
                prepare_estimator(estimator)
            ast_reward = None
            if with_ast and not dry_run:
                try:
                    ast_reward = host.create("reward", "ast-similarity")
                except RtlforgeError:
                    ast_reward = None
            pipeline = None if dry_run else Pipeline.build(host, simulator=simulator,
                                                           timeout=timeout, extra=validators)
        except (ValueError, RtlforgeError) as exc:
            raise click.UsageError(str(exc)) from exc
        kwargs: dict[str, Any] = {
            "iterations": iterations, "trials": trials, "run_dir": run_dir, "host": host,
            "pipeline": pipeline, "estimator": estimator, "ast_reward": ast_reward,
            "workers": workers, "checkpoints": marks, "preset": preset,
            "baseline": baseline_names or None,
            "on_existing": "overwrite" if overwrite else "extend" if extend else "resume",
        }
        if dry_run:
            try:
                explorer = Explorer(task_map, methods, **kwargs)
            except ValueError as exc:
                raise click.UsageError(str(exc)) from exc
            requests = explorer.dry_run(per_method=1)
            if as_json:
                click.echo(json.dumps({"protocol": explorer.protocol(), "prompts": [
                    {"request_id": r.request_id, "system": r.system, "prompt": r.prompt}
                    for r in requests]}))
                return
            click.echo(protocol_line(explorer.protocol()), err=True)
            for r in requests:
                click.secho(f"===== {r.request_id}", bold=True)
                if r.system:
                    click.secho("--- system", dim=True)
                    click.echo(r.system)
                click.secho("--- user", dim=True)
                click.echo(r.prompt)
            return
        try:  # a refused run directory is a usage error, reported before any work starts
            Explorer(task_map, methods, **kwargs).check_run_dir()
        except ValueError as exc:
            raise click.UsageError(str(exc)) from exc
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

        console = Console(stderr=True) if as_json else None
        with Progress("[progress.description]{task.description}", BarColumn(),
                      MofNCompleteColumn(), TimeElapsedColumn(), transient=as_json,
                      console=console) as progress:
            bar = progress.add_task("exploring", total=None)
            passed = [0]

            def on_event(ev: Any) -> None:
                if ev.kind == "start":  # a resumed run counts the passes it already has
                    passed[0] = ev.data.get("passed", 0)
                    progress.update(bar, total=ev.data["total"], completed=ev.data["done"])
                elif ev.kind == "evaluate_end":
                    passed[0] += ev.data["passed"]
                    progress.update(bar, advance=1, description=(
                        f"exploring ({passed[0]} passed; {ev.method} {ev.task} "
                        f"t{ev.trial} i{ev.iteration})"))

            try:
                explorer = Explorer(task_map, methods, on_event=on_event, **kwargs)
            except ValueError as exc:
                raise click.UsageError(str(exc)) from exc
            try:
                result = explorer.run()
            except ToolMissingError as exc:
                click.secho(f"error: {exc}", fg="red", err=True)
                sys.exit(EXIT_INFRA)
            except RtlforgeError as exc:
                click.secho(f"error: {exc}", fg="red", err=True)
                sys.exit(EXIT_INFRA)
            finally:
                if estimator is not None:
                    estimator.close()
        summary = {**result.summary, "run_dir": str(result.run_dir),
                   "files": {k: str(v) for k, v in result.paths.items()},
                   "candidates": result.candidates, "evaluated_groups": result.evaluated,
                   "resumed_groups": result.resumed,
                   "empty_groups": sum(n for m in result.empty_groups.values()
                                       for n in m.values()),
                   "empty_groups_by_method": result.empty_groups,
                   "infra_held": result.held}
        for name, tasks in result.empty_groups.items():
            click.secho(f"warning: method {name!r}: no candidate in {sum(tasks.values())} "
                        f"groups of {len(tasks)} tasks ({', '.join(sorted(tasks))}): the "
                        "generator returned nothing (replay: no recording of these tasks)",
                        fg="yellow", err=True)
        for cell, why in result.held.items():
            click.secho(f"infra error: {cell} stopped at {why}; that group was not stored: "
                        "fix the cause (`rtlforge doctor`) and rerun the same run directory "
                        "to evaluate it again", fg="red", err=True)
        if as_json:
            click.echo(json.dumps(summary))
        else:
            _print_summary(summary)
        if result.held:
            sys.exit(EXIT_INFRA)


def protocol_line(protocol: dict[str, Any]) -> str:
    from rtlforge.explore.report import protocol_line as line

    return "protocol: " + line(protocol)


def _print_summary(summary: dict[str, Any]) -> None:
    import click

    click.echo(f"{summary['candidates']} candidates in {summary['run_dir']} "
               f"({summary['evaluated_groups']} groups evaluated now, "
               f"{summary['resumed_groups']} resumed"
               + (f", {summary['empty_groups']} without a candidate"
                  if summary.get("empty_groups") else "") + ")")
    metrics = summary.get("metrics", {}).get("methods", {})
    for name, m in summary.get("methods", {}).items():
        line = f"  {name}: {m['passed']}/{m['samples']} passed"
        marks = summary.get("checkpoints", {}).get(name, {})
        if marks:
            line += ", " + ", ".join(f"{k} {v:.3f}" for k, v in marks.items())
        if name in metrics:
            line += (f", rHV(union of trials) {metrics[name]['rhv_union']:.3f}, "
                     f"diversity {metrics[name]['diversity']:.1f}")
        click.echo(line)
    for comp in summary.get("metrics", {}).get("comparisons", []):
        lo, hi = comp["ci95"]
        click.echo(f"  rHV {comp['method']} - {comp['versus']}: {comp['rhv_diff']:+.3f} "
                   f"(95% CI {lo:+.3f} .. {hi:+.3f})")
    if summary.get("protocol"):
        click.echo(protocol_line(summary["protocol"]))
    click.echo(f"report: {summary['files'].get('report.html')}")
