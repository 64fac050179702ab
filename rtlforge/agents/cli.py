"""``rtlforge refine``: validation-first agent orchestration over a task set.

Only this module prints: the orchestrator emits thought events and the live view is a
:data:`~rtlforge.agents.trace.TraceSink` drawn here on stderr. The run directory
(:mod:`rtlforge.agents.run`) makes a run resumable like ``explore``.
"""

from __future__ import annotations

import contextlib
import json
import sys
import threading
import unicodedata
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rtlforge.core.hookspecs import hookimpl

if TYPE_CHECKING:
    from rtlforge.agents.models import SolveResult
    from rtlforge.agents.trace import ThoughtEvent
    from rtlforge.core.plugins import PluginHost

__all__ = ["LiveView", "parse_router", "plain", "register_commands"]


def plain(text: str) -> str:
    """``text`` safe for a terminal: tabs and line breaks become spaces, every other control or
    format character (ESC, C1 controls such as CSI, bidi overrides) becomes U+FFFD. Task ids,
    trace messages and error texts quote models, tools and task files; rich drops only some
    controls and keeps ESC, which would let them clear the screen or move the cursor."""
    return "".join(" " if c in "\t\n\r\v\f\u2028\u2029" else
                   "\ufffd" if unicodedata.category(c)[0] == "C" else c for c in text)


def _guidance(host: Any, enabled: bool, gate_path: Path | None) -> Any:
    """The orchestrator's guidance seam: off, the registry's default, or chosen by a gate."""
    import click

    if not enabled or gate_path is None:
        return enabled
    from rtlforge.agents.guidance.gate import GuidanceGate
    from rtlforge.agents.guidance.registry import guidance_seam
    from rtlforge.core.errors import RtlforgeError

    try:
        gate = GuidanceGate.load(gate_path)
    except (RtlforgeError, OSError, ValueError) as exc:
        raise click.UsageError(f"--guidance-gate {gate_path}: {exc}") from exc
    return guidance_seam(host, gate=gate)


def parse_router(spec: str) -> tuple[str, dict[str, Any]]:
    """``heuristic`` -> ("heuristic", {}); ``ppo:PATH`` -> ("ppo", {"path": "PATH"})."""
    import click

    name, sep, path = spec.partition(":")
    if not name or (sep and not path):
        raise click.UsageError(f"--router {spec!r}: expected NAME or NAME:PATH "
                               "(heuristic, ppo:PATH, mpc:PATH)")
    return name, ({"path": path} if sep else {})


def _create_router(host: PluginHost, name: str, options: Mapping[str, Any]) -> Any:
    import click

    from rtlforge.core.errors import RtlforgeError

    try:
        host.get("router", name)
    except RtlforgeError as exc:
        raise click.UsageError(f"--router: {exc}") from exc
    try:
        return host.create("router", name, **options)
    except (RtlforgeError, OSError, TypeError, ValueError) as exc:
        raise click.UsageError(f"--router {name}: {exc}") from exc


def _agents_file(host: PluginHost, path: Path | None
                 ) -> tuple[dict[str, dict[str, Any]], tuple[str, ...] | None]:
    """An agents file's per-role overrides and the roles it enables (None: all)."""
    import click

    from rtlforge.core.errors import RtlforgeError

    if path is None:
        return {}, None
    from rtlforge.agents.config import load_agents_file, role_overrides

    try:
        config = load_agents_file(path, roles=host.names("agent_role"))
    except (RtlforgeError, OSError, ValueError) as exc:
        raise click.UsageError(str(exc)) from exc
    return role_overrides(config), config.enabled


class LiveView:
    """A trace sink that keeps one status line current on stderr: which task (of how many),
    iteration, agent, the last verdict and the last step's message."""

    def __init__(self, total: int) -> None:
        from rich.console import Console
        from rich.live import Live

        self.total = total
        self.done = 0
        self.passed = 0
        self.task = "-"
        self.iteration: int | None = None
        self.agent = "-"
        self.verdict = "-"
        self.message = ""
        self._lock = threading.Lock()
        self._live = Live(self._render(), console=Console(stderr=True), transient=True,
                          refresh_per_second=8)

    def _render(self) -> Any:
        from rich.text import Text

        it = "-" if self.iteration is None else str(self.iteration + 1)
        text = Text()
        text.append(f"refine {self.done}/{self.total} done, {self.passed} passed", style="bold")
        text.append(plain(f"  task {self.task}  iteration {it}  agent {self.agent}  "
                          f"last verdict {self.verdict}") + "\n")
        text.append(plain(self.message[:160]), style="dim")
        return text

    def __enter__(self) -> LiveView:
        self._live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._live.__exit__(*exc)  # type: ignore[arg-type]

    def __call__(self, event: ThoughtEvent) -> None:
        with self._lock:
            if event.task_id:
                self.task = event.task_id
            if event.iteration is not None:
                self.iteration = event.iteration
            if event.agent:
                self.agent = event.agent
            verdict = event.data.get("verdict")
            if event.kind.value == "validation" and isinstance(verdict, str):
                self.verdict = verdict
            self.message = f"{event.kind.value}: {event.message}"
            self._live.update(self._render())

    def finished(self, result: SolveResult) -> None:
        with self._lock:
            self.done += 1
            self.passed += result.passed
            self.task, self.iteration, self.agent = result.task_id, None, "-"
            self.verdict = result.verdict.value
            self._live.update(self._render())


def _print_table(results: Sequence[SolveResult], summary: Mapping[str, Any],
                 report: Path) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    table = Table(title="refine")
    for col in ("task", "verdict", "iterations", "agents", "tiers", "LLM calls", "tokens"):
        table.add_column(col, justify="right" if col in ("iterations", "LLM calls", "tokens")
                         else "left")
    for r in results:
        # Text, not markup: a task id like "[link=...]x" is shown as written
        table.add_row(Text(plain(r.task_id)), r.verdict.value, str(r.iterations),
                      Text(plain(" > ".join(r.agents))), ",".join(t.value for t in r.tiers),
                      str(r.llm_calls), str(r.tokens))
    console = Console()
    console.print(table)
    p1, rate = summary["pass_at_1"], summary["solve_rate"]
    per = summary["llm_calls_per_solved"]
    judged = summary["tasks"] - summary["infra_errors"]
    budget = (summary.get("run") or {}).get("max_iterations")
    console.print(f"pass@1 {'n/a' if p1 is None else f'{p1:.4f}'} ({summary['passed_first']}/"
                  f"{judged} passed their first attempt); solved "
                  f"{'n/a' if rate is None else f'{rate:.4f}'} ({summary['passed']}/{judged}"
                  + (f" within {budget} iterations" if budget else "")
                  + (f", {summary['infra_errors']} infra errors not scored"
                     if summary["infra_errors"] else "") + f"); LLM calls {summary['llm_calls']}"
                  f", tokens {summary['tokens']}; per solved: "
                  + ("n/a" if per is None else f"{per:.2f} calls, "
                     f"{summary['tokens_per_solved']:.0f} tokens"), highlight=False)
    tiers = ", ".join(f"{name} {t['solved']} solved / {t['llm_calls']} calls"
                      for name, t in summary["tiers"].items() if t["iterations"] or t["solved"])
    if tiers:
        console.print(f"tiers: {tiers}", highlight=False)
    console.print(f"report: {report}", highlight=False)


@hookimpl
def register_commands(cli: Any, host: PluginHost) -> None:
    import click

    from rtlforge.cmdline import TASKS_HELP
    from rtlforge.tasks.formats import TASK_FORMATS

    @cli.command(name="refine")
    @click.option("--tasks", "tasks_dir", required=True,
                  type=click.Path(exists=True, path_type=Path),
                  help=TASKS_HELP + " Or a CVDP JSONL file (docs/cvdp.md).")
    @click.option("--format", "fmt", type=click.Choice(TASK_FORMATS), default="auto",
                  show_default=True, help="Layout of --tasks (auto sniffs the folder).")
    @click.option("--task", "task_ids", multiple=True, help="Only these task ids (repeatable).")
    @click.option("--generator", "generator_name", required=True,
                  help="Generator plugin every agent uses unless the agents file says otherwise.")
    @click.option("--generator-option", "gen_opts", multiple=True, metavar="KEY=VALUE",
                  help="Option of --generator, typed by its options model (repeatable).")
    @click.option("--agents", "agents_file",
                  type=click.Path(exists=True, dir_okay=False, path_type=Path),
                  help="Agents file: per-role settings that override the defaults.")
    @click.option("--router", "router_spec", default="heuristic", show_default=True,
                  metavar="heuristic|ppo:PATH|mpc:PATH",
                  help="Router plugin, with a trained checkpoint for the learned ones.")
    @click.option("--max-iterations", type=click.IntRange(min=1), default=5, show_default=True)
    @click.option("--candidates", type=click.IntRange(min=1), default=1, show_default=True,
                  help="Candidates per round (multi-candidate mode above 1).")
    @click.option("--symbolic/--no-symbolic", default=True, show_default=True,
                  help="Try the symbolic solver first (zero LLM calls when it answers).")
    @click.option("--decompose/--no-decompose", default=True, show_default=True,
                  help="Build complex specs (3+ component keywords) as planned sub-modules.")
    @click.option("--guidance/--no-guidance", default=True, show_default=True,
                  help="Enrich each spec with the spec-guidance registry's advice.")
    @click.option("--guidance-gate", "gate_path", type=click.Path(dir_okay=False, exists=True,
                                                                  path_type=Path),
                  help="A trained guidance gate (JSON weights) that picks the guidance "
                       "configuration per task (default: the fixed 'detectors' configuration).")
    @click.option("--testbench/--no-testbench", default=True, show_default=True,
                  help="Let the testbench agent write a testbench for tasks that have none.")
    @click.option("--optimize", is_flag=True,
                  help="After a pass, continue into an Optimize phase that keeps passing.")
    @click.option("--run-dir", type=click.Path(file_okay=False, path_type=Path),
                  default=Path("runs/refine"), show_default=True)
    @click.option("--overwrite", is_flag=True,
                  help="Delete what refine wrote in --run-dir and start over.")
    @click.option("--json", "as_json", is_flag=True,
                  help="One JSON object per task on stdout, as each task finishes.")
    def refine(tasks_dir: Path, fmt: str, task_ids: tuple[str, ...], generator_name: str,
               gen_opts: tuple[str, ...], agents_file: Path | None, router_spec: str,
               max_iterations: int, candidates: int, symbolic: bool, decompose: bool,
               guidance: bool, gate_path: Path | None, testbench: bool, optimize: bool,
               run_dir: Path,
               overwrite: bool, as_json: bool) -> None:
        """Solve tasks with specialised agents: symbolic tier, specialists, then the router.

        Exit 0 when every task passed, 1 otherwise, 2 usage errors, 3 an infrastructure
        failure of the whole run.
        """
        from rtlforge.agents.run import (
            RefineRun,
            RunSettingsMismatch,
            UnsafeRunDirError,
            refine_settings,
        )
        from rtlforge.cmdline import (
            EXIT_INFRA,
            EXIT_NOT_PASSED,
            EXIT_OK,
            create_generator,
            load_task_map,
            option_pairs,
        )
        from rtlforge.core.errors import ConfigError, RtlforgeError

        options = option_pairs(gen_opts, "--generator-option")
        router_name, router_options = parse_router(router_spec)
        task_map = load_task_map(tasks_dir, fmt)
        if task_ids:
            missing = sorted(set(task_ids) - set(task_map))
            if missing:
                raise click.UsageError(f"unknown task ids: {', '.join(missing)}")
            task_map = {t: task_map[t] for t in dict.fromkeys(task_ids)}
        roles, enabled = _agents_file(host, agents_file)
        settings = refine_settings(
            tasks=task_map, generator=generator_name, generator_options=options,
            router=router_name, router_options=router_options, roles=roles,
            enabled=enabled, agents_file=agents_file, max_iterations=max_iterations,
            candidates=candidates, symbolic=symbolic, optimize=optimize,
            seams={"decompose": decompose, "guidance": guidance, "testbench": testbench},
            gate=gate_path)
        run = RefineRun(run_dir, settings, overwrite=overwrite)
        try:  # a refused run directory is a usage error, reported before any work starts
            run.check()
        except (RunSettingsMismatch, UnsafeRunDirError) as exc:
            raise click.UsageError(str(exc)) from exc
        generator = create_generator(host, generator_name, options)
        router = _create_router(host, router_name, router_options)
        done = run.prepare()

        from rtlforge.agents.orchestrator import Orchestrator
        from rtlforge.evaluation.evaluate import pipeline_for
        from rtlforge.tasks.cvdp import is_cvdp_task

        view = None if as_json else LiveView(len(task_map))
        # CVDP problems are checked by their own harness; other tasks by the default pipeline
        pipeline = (pipeline_for(host, task_map.values())
                    if any(is_cvdp_task(t) for t in task_map.values()) else None)
        try:
            orchestrator = Orchestrator(
                generator=generator, host=host, pipeline=pipeline, roles=roles,
                enabled_roles=enabled,
                decomposer=decompose, guidance=_guidance(host, guidance, gate_path),
                testbench=testbench,
                router=router, max_iterations=max_iterations, candidates=candidates,
                symbolic=symbolic, optimize=optimize, run_dir=run.run_dir,
                sinks=() if view is None else (view,))
        except ConfigError as exc:
            raise click.UsageError(str(exc)) from exc
        except RtlforgeError as exc:
            click.secho(f"error: {exc}", fg="red", err=True)
            sys.exit(EXIT_INFRA)
        results: list[SolveResult] = []
        failure: RtlforgeError | None = None
        try:
            with view if view is not None else contextlib.nullcontext():
                for tid, task in task_map.items():
                    result = done.get(tid)
                    if result is None:
                        try:
                            result = orchestrator.solve(task)
                        except RtlforgeError as exc:  # the whole run cannot go on
                            failure = exc
                            break
                        run.record(result)
                    results.append(result)
                    if view is not None:
                        view.finished(result)
                    if as_json:
                        click.echo(json.dumps(result.summary()))
        finally:
            orchestrator.close()
            if pipeline is not None:
                pipeline.runner.close()
        summary, report = run.write_summary(results)
        for r in results:
            if r.error:
                click.secho(plain(f"warning: task {r.task_id}: {r.verdict.value}: {r.error}"),
                            fg="yellow", err=True)
        if failure is not None:
            click.secho(plain(f"error: {failure} ({len(results)} of {len(task_map)} tasks "
                              "finished; rerun the same command to resume)"), fg="red", err=True)
            sys.exit(EXIT_INFRA)
        if not as_json:
            _print_table(results, summary, report)
        if results and summary["infra_errors"] == len(results):
            click.secho("error: every task ended in an infrastructure error", fg="red", err=True)
            sys.exit(EXIT_INFRA)
        sys.exit(EXIT_OK if results and all(r.passed for r in results) else EXIT_NOT_PASSED)
