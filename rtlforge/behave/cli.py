"""``rtlforge behave check`` (RTL vs the task's golden B*), ``rtlforge behave check-model``
(an agent's behaviour model B̂ vs B*) and ``rtlforge behave area-time`` (the area-time Pareto
front of candidate architectures, :mod:`rtlforge.behave.areatime`), registered by
:mod:`rtlforge.behave.plugin`.

Exit codes as ``rtlforge validate``: 0 pass, 1 not passed (fail, error, timeout), 2 usage or
input error (a bad task directory, a golden or model that does not check or does not fit the
interface: the message names the line), 3 infrastructure error. ``--json`` prints one object:
``verdict``, ``mismatches``, ``first_failure``, ``coverage``, ``goals`` (hit / unresolved /
bounded_unreachable), plus ``artifact``, ``violations``, ``message`` and ``metrics``.
``rtlforge behave agent`` runs an OpenAI-compatible tool-calling LLM in the agent environment
(docs/behave-env.md) and judges its submission against B*.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import click

from rtlforge.cmdline import EXIT_INFRA, EXIT_NOT_PASSED, EXIT_OK

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


def _load(task_dir: Path, rtllm_root: Path | None = None) -> tuple[Any, Any]:
    """The task and its golden model; any problem with either is a usage error (exit 2)."""
    from rtlforge.behave.sim.golden import golden_model
    from rtlforge.behave.sim.task import BehaveTaskError, load_behave_task

    try:
        task = load_behave_task(task_dir, rtllm_root=rtllm_root)
        return task, golden_model(task)
    except BehaveTaskError as exc:
        raise click.UsageError(f"--task {task_dir}: {exc}") from exc


def _report(result: Any, golden: Any, as_json: bool, budget_s: float, steps: int,
            guided: Any = None, rtl_cov: Any = None) -> None:
    from rtlforge.behave.sim.golden import goal_report

    goals = None
    if guided is not None:
        goals = guided.goals
    elif result.coverage.branch_goals is not None:
        goals = goal_report(golden, result.coverage.branch_goals, budget_s=budget_s,
                            steps=steps)
    if as_json:
        out = summary(result, goals)
        if guided is not None:
            out.update(guided_summary(guided))
        if rtl_cov is not None:
            out["rtl_coverage"] = rtl_cov.model_dump(mode="json", exclude={"points"})
        click.echo(json.dumps(out))
    else:
        _print(result, goals)
        if guided is not None:
            _print_guided(guided)
        if rtl_cov is not None:
            _print_rtl_coverage(rtl_cov)
    sys.exit(exit_code(result.verdict))


def guided_summary(guided: Any) -> dict[str, Any]:
    """The keys ``--guided`` adds: ``baseline`` (the verdict on random stimulus alone),
    ``guided`` (the search: solver, budget, each query, the sequences added) and, inside
    ``goals``, ``by_kind`` (per model and goal kind: total, baseline_hit, hit,
    bounded_unreachable, unresolved, sequences_added)."""
    base = guided.baseline
    search = guided.search
    return {
        "baseline": {"verdict": base.verdict, "mismatches": base.mismatches,
                     "transactions": base.coverage.transactions},
        "guided": {
            "solver": search.solver, "budget_s": search.budget_s,
            "elapsed_s": search.elapsed_s, "steps": search.steps, "refused": search.refused,
            "sequences_added": len(search.sequences),
            "queries": [q.model_dump(mode="json") for q in search.queries],
            "sequences": [s.model_dump(mode="json") for s in search.sequences],
        },
        "goals": {**(guided.goals.model_dump(mode="json") if guided.goals is not None
                     else {}),
                  "by_kind": {k: v.model_dump(mode="json") for k, v in guided.by_kind.items()}},
    }


def _print_guided(guided: Any) -> None:
    search = guided.search
    click.echo(f"  baseline (random stimulus only): {guided.baseline.verdict}; goal-guided "
               f"search [{search.solver}]: {len(search.sequences)} directed sequence(s) "
               f"added in {search.elapsed_s:.2f} s of {search.budget_s:g} s")
    if search.refused:
        click.echo(f"    refused: {search.refused}")
    for key, c in guided.by_kind.items():
        if not c.total:
            continue
        click.echo(f"    {key}: {c.hit}/{c.total} hit (baseline {c.baseline_hit}), "
                   f"{c.bounded_unreachable} unreachable within {search.steps}, "
                   f"{c.unresolved} unresolved")


def _print_rtl_coverage(cov: Any) -> None:
    if cov.status != "ok":
        click.echo(f"  rtl coverage: {cov.status}: {cov.message[-300:]}")
        return
    for kind, k in cov.kinds.items():
        click.echo(f"  rtl {kind} coverage: {k.covered}/{k.total}")
        for point in k.uncovered[:20]:
            click.echo(f"    uncovered: {point}")


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
    for m in cov.monitors:
        click.echo(f"  monitors on {m.interface}: data-stable and valid-held checked "
                   f"{m.unstable} times ({m.stalls} of {m.transfers} transfers stalled), "
                   f"X on data checked {m.x_data} times")
    for v in result.violations:
        click.echo(f"- [{v.kind}] {v.interface} at cycle {v.cycle}: {v.message}")
    if result.first_failure is not None:
        click.echo(result.first_failure.describe())
    elif result.message and result.verdict != "pass":
        click.echo(result.message)


def _stimulus(seed: int, sequences: int | None, transactions: int | None) -> Any:
    """Only the flags given are set explicitly: the rest come from the task's ``[stimulus]``,
    then the baseline defaults."""
    from rtlforge.behave.sim.stimulus import StimulusConfig

    given = {k: v for k, v in (("sequences", sequences), ("transactions", transactions))
             if v is not None}
    return StimulusConfig(seed=seed, **given)


_TASK = click.option("--task", "task_dir", required=True,
                     type=click.Path(exists=True, file_okay=False, path_type=Path),
                     help="A BEHAVE task directory (behave.toml, spec, golden model).")
_RTLLM = click.option("--rtllm", "rtllm_root", default=None,
                      type=click.Path(exists=True, file_okay=False, path_type=Path),
                      help="RTLLM v2 root, for a task that models an RTLLM design (default: "
                           "$RTLFORGE_RTLLM, files beside behave.toml, or an rtllm / "
                           "shared/benchmarks/rtllm folder above the task).")
_JSON = click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
_SEED = click.option("--seed", type=int, default=0, show_default=True,
                     help="Seed of the random stimulus.")
_SEQUENCES = click.option("--sequences", type=click.IntRange(min=0), default=None,
                          help="Random sequences after the edge sweep [default: the task's "
                               "[stimulus], else 50].")
_TRANSACTIONS = click.option("--transactions", type=click.IntRange(min=1), default=None,
                             help="Transactions per sequence [default: the task's [stimulus], "
                                  "else 100].")
_SOLVE = click.option("--solve-budget", "solve_budget", type=click.FloatRange(min=0),
                      default=None, metavar="SECONDS",
                      help="Wall-clock seconds for the whole Z3 search over the goals the random "
                           "stimulus missed: directed sequences (--guided) and bounded "
                           "unreachability proofs, within --solve-steps transactions from reset "
                           "(0: off; needs z3-solver) [default: 1; 600 with --preset paper].")
_PRESET = click.option("--preset", type=click.Choice(["fast", "paper"]), default="fast",
                       show_default=True,
                       help="Scoring budget: fast (ours) or paper (the BEHAVE paper's: up to "
                            "600 s of goal-guided search within 1,200 s per artifact). Options "
                            "given explicitly still win.")

#: --preset's values: (search seconds, artifact budget seconds, seconds per tool run)
_PRESETS: dict[str, tuple[float, float | None, float]] = {
    "fast": (1.0, None, 120.0), "paper": (600.0, 1200.0, 1200.0)}
_STEPS = click.option("--solve-steps", "solve_steps", type=click.IntRange(1, 16), default=4,
                      show_default=True, help="Sequence length bound of that proof.")
_GUIDED = click.option("--guided/--no-guided", default=True, show_default=True,
                       help="Goal-guided stimulus: Z3 sequences for the goals the random "
                            "stimulus missed are appended and checked too (within "
                            "--solve-budget); the random-only verdict is reported as "
                            "`baseline`.")


@click.group()
def behave() -> None:
    """BEHAVE-Sim: check RTL or a behaviour model against a task's golden behaviour model."""


@behave.command("check")
@click.argument("designs", nargs=-1, required=True,
                type=click.Path(exists=True, dir_okay=False, path_type=Path))
@_TASK
@_RTLLM
@_JSON
@_SEED
@_SEQUENCES
@_TRANSACTIONS
@click.option("--timeout", type=click.FloatRange(min=0.1), default=None,
              help="Wall-clock seconds per tool run [default: 120; 1,200 with --preset paper].")
@click.option("--backend", type=click.Choice(["icarus", "verilator", "cocotb"]),
              default="icarus", show_default=True,
              help="Simulator: Icarus; Verilator (a build of seconds, fast on long runs); "
                   "cocotb (Python drives the design on Icarus).")
@_SOLVE
@_STEPS
@_GUIDED
@_PRESET
@click.option("--rtl-coverage", "rtl_coverage", is_flag=True,
              help="Also build the design with Verilator --coverage on the same stimulus and "
                   "report line/toggle coverage and the uncovered points (slow: a C++ build).")
def check(designs: tuple[Path, ...], task_dir: Path, rtllm_root: Path | None, as_json: bool,
          seed: int, sequences: int | None, transactions: int | None, timeout: float | None,
          backend: str, solve_budget: float | None, solve_steps: int, guided: bool,
          preset: str, rtl_coverage: bool) -> None:
    """Simulate DESIGN files in the task's generated testbench and judge them against B*."""
    from rtlforge.behave.sim.check import check_rtl
    from rtlforge.core.errors import RtlforgeError
    from rtlforge.core.models import Candidate

    search_s, artifact_s, run_s = _PRESETS[preset]
    solve_budget = search_s if solve_budget is None else solve_budget
    timeout = run_s if timeout is None else timeout
    task, golden = _load(task_dir, rtllm_root)
    try:
        candidate = Candidate.from_files(designs)
    except (ValueError, RtlforgeError) as exc:
        raise click.UsageError(str(exc)) from exc
    stim = _stimulus(seed, sequences, transactions)
    outcome = None
    if guided:
        from rtlforge.behave.sim.guided import GuidedConfig, guided_check_rtl

        outcome = guided_check_rtl(task, candidate, golden=golden, stimulus=stim,
                                   config=GuidedConfig(budget_s=solve_budget, steps=solve_steps,
                                                       artifact_budget_s=artifact_s),
                                   timeout_s=timeout, backend=cast("SimBackend", backend))
        result = outcome.result
    else:
        result = check_rtl(task, candidate, stimulus=stim, golden=golden.instance(),
                           timeout_s=timeout, backend=cast("SimBackend", backend))
    cov = _rtl_coverage(task, candidate, stim, outcome, timeout) if rtl_coverage else None
    _report(result, golden, as_json, solve_budget, solve_steps, outcome, cov)


def _rtl_coverage(task: Any, candidate: Any, config: Any, outcome: Any, timeout: float) -> Any:
    """Verilator coverage on the stimulus the verdict came from (directed sequences too)."""
    from rtlforge.behave.sim.guided import stimulus_with
    from rtlforge.behave.sim.rtlcov import RtlCoverage, rtl_coverage
    from rtlforge.behave.sim.stimulus import generate_stimulus
    from rtlforge.core.errors import RtlforgeError
    from rtlforge.sandbox.runner import SandboxRunner

    stim = generate_stimulus(task, config)
    if outcome is not None:
        stim = stimulus_with(stim, outcome.search.sequences, reset=task.reset is not None)
    try:
        with SandboxRunner() as runner:
            return rtl_coverage(task, candidate, stim, runner, timeout_s=max(timeout, 600.0))
    except RtlforgeError as exc:
        return RtlCoverage(status="error", message=str(exc))


@behave.command("check-model")
@click.argument("model_path", metavar="MODEL.py",
                type=click.Path(exists=True, dir_okay=False, path_type=Path))
@_TASK
@_RTLLM
@_JSON
@_SEED
@_SEQUENCES
@_TRANSACTIONS
@_SOLVE
@_STEPS
@_GUIDED
@_PRESET
def check_model_command(model_path: Path, task_dir: Path, rtllm_root: Path | None,
                        as_json: bool, seed: int,
                        sequences: int | None, transactions: int | None,
                        solve_budget: float | None, solve_steps: int, guided: bool,
                        preset: str) -> None:
    """Check a behaviour-DSL model (B̂: checked and interpreted, never run) against B*."""
    from rtlforge.behave.sim.check import check_model
    from rtlforge.behave.sim.golden import TaskModelError, load_task_model, read_model_file

    search_s, artifact_s, _ = _PRESETS[preset]
    solve_budget = search_s if solve_budget is None else solve_budget
    task, golden = _load(task_dir, rtllm_root)
    try:
        model = load_task_model(task, read_model_file(model_path), name=model_path.stem)
    except TaskModelError as exc:  # the artifact under test is wrong: its verdict, as validate
        from rtlforge.behave.sim.check import BehaveResult

        _report(BehaveResult(verdict="error", artifact="model", message=f"{model_path}: {exc}"),
                golden, as_json, 0.0, solve_steps)
        return
    stim = _stimulus(seed, sequences, transactions)
    if guided:
        from rtlforge.behave.sim.guided import GuidedConfig, guided_check_model

        outcome = guided_check_model(task, model, golden=golden, stimulus=stim,
                                     config=GuidedConfig(budget_s=solve_budget,
                                                         steps=solve_steps,
                                                         artifact_budget_s=artifact_s))
        _report(outcome.result, golden, as_json, solve_budget, solve_steps, outcome)
        return
    result = check_model(task, model, stimulus=stim, golden=golden.instance())
    _report(result, golden, as_json, solve_budget, solve_steps)


@behave.command("agent")
@_TASK
@click.option("--base-url", required=True, help="OpenAI-compatible API base, e.g. "
                                                 "http://127.0.0.1:8000/v1.")
@click.option("--model", "model_name", required=True, help="The served model's name.")
@click.option("--api-key-env", default="OPENAI_API_KEY", show_default=True,
              help="Environment variable holding the API key (unset: no key sent).")
@click.option("--max-turns", type=click.IntRange(1, 10_000), default=60, show_default=True,
              help="Turns per episode (the BEHAVE paper's 60).")
@click.option("--max-tool-calls", type=click.IntRange(1, 100_000), default=None,
              help="Tool calls per episode [default: no cap beyond turns x 8 calls a turn].")
@click.option("--max-context-chars", type=click.IntRange(min=1024), default=96_000,
              show_default=True,
              help="Context shown to the model, in characters: past it the oldest turns are "
                   "dropped (the task and the latest tool results stay).")
@click.option("--max-tokens", type=click.IntRange(min=1), default=None,
              help="Token budget of the episode (prompt + completion, as the server counts).")
@click.option("--temperature", type=float, default=0.2, show_default=True)
@click.option("--timeout", type=click.FloatRange(min=1), default=300.0, show_default=True,
              help="Seconds per LLM request.")
@click.option("--attempts", type=click.IntRange(1, 20), default=4, show_default=True,
              help="Attempts per LLM request (429, 5xx and connection errors are retried).")
@click.option("--output", "output", type=click.Path(dir_okay=False, path_type=Path),
              default=None, help="Write the whole episode result (transcript included) as "
                                 "JSON to this file.")
@_JSON
@_SEED
@_SEQUENCES
@_TRANSACTIONS
def agent_command(task_dir: Path, base_url: str, model_name: str, api_key_env: str,
                  max_turns: int, max_tool_calls: int | None, max_context_chars: int,
                  max_tokens: int | None,
                  temperature: float, timeout: float, attempts: int, output: Path | None,
                  as_json: bool, seed: int, sequences: int | None,
                  transactions: int | None) -> None:
    """Run a tool-using LLM agent on a BEHAVE task; judge its submission against B*.

    The hidden check's stimulus is the baseline unless --seed/--sequences/--transactions
    say otherwise. Exit codes: 0 the RTL passed B*, 1 it did not (or nothing was submitted), 3 an
    infrastructure problem left the verdict open (the LLM server, a tool, the sandbox).
    """
    from rtlforge.behave.env import EnvConfig, OpenAIToolAgent, run_episode
    from rtlforge.cmdline import command_host
    from rtlforge.generation.base import RetryPolicy

    task, _ = _load(task_dir)
    try:
        agent = OpenAIToolAgent(model=model_name, base_url=base_url,
                                api_key_env=api_key_env or None, temperature=temperature,
                                timeout=timeout, retry=RetryPolicy(max_attempts=attempts))
    except ValueError as exc:
        raise click.UsageError(str(exc)) from exc
    config = EnvConfig(max_turns=max_turns, max_tool_calls=max_tool_calls,
                       max_context_chars=max_context_chars, max_tokens=max_tokens,
                       hidden_stimulus=_stimulus(seed, sequences, transactions))
    result = run_episode(task, agent, host=command_host(), config=config)
    if output is not None:
        output.write_text(result.model_dump_json(indent=1), encoding="utf-8")
    summary_obj = {
        "task": result.task_id, "end_reason": result.end_reason,
        "submitted": result.submitted, "turns": result.turns,
        "evicted_turns": result.evicted_turns,
        "tool_calls": len(result.tool_calls), "unresolved": result.unresolved,
        "rtl": {"status": result.rtl.status,
                "verdict": result.rtl.result.verdict if result.rtl.result else None},
        "model": {"status": result.model.status,
                  "verdict": result.model.result.verdict if result.model.result else None},
        "prompt_tokens": result.prompt_tokens, "completion_tokens": result.completion_tokens,
        "seconds": result.seconds, "agent_error": result.agent_error}
    if as_json:
        click.echo(json.dumps(summary_obj))
    else:
        click.echo(f"{result.task_id}: {result.end_reason} after {result.turns} turns, "
                   f"{len(result.tool_calls)} tool calls")
        click.echo(f"  RTL vs B*: {result.rtl.status}; model vs B*: {result.model.status}")
        if result.agent_error:
            click.echo(f"  agent error: {result.agent_error}")
    if result.unresolved:
        sys.exit(EXIT_INFRA)
    sys.exit(EXIT_OK if result.rtl.status == "pass" else EXIT_NOT_PASSED)


def _design_sets(designs: tuple[Path, ...], sets: tuple[str, ...]) -> list[Any]:
    """Candidates: each DESIGN file alone (named by its stem), each ``NAME=F1,F2`` together."""
    from rtlforge.behave.areatime import NamedDesign
    from rtlforge.core.errors import RtlforgeError
    from rtlforge.core.models import Candidate

    named: list[tuple[str, list[Path]]] = [(p.stem, [p]) for p in designs]
    for spec in sets:
        name, sep, files = spec.partition("=")
        paths = [Path(f) for f in files.split(",") if f.strip()]
        if not sep or not name.strip() or not paths:
            raise click.UsageError(f"--design-set {spec!r}: expected NAME=FILE[,FILE...]")
        for path in paths:
            if not path.is_file():
                raise click.UsageError(f"--design-set {name}: {path} is not a file")
        named.append((name.strip(), paths))
    if not named:
        raise click.UsageError("give at least one DESIGN.v or --design-set NAME=FILES")
    seen = [n for n, _ in named]
    clashes = sorted({n for n in seen if seen.count(n) > 1})
    if clashes:
        raise click.UsageError(f"candidate names clash: {', '.join(clashes)} (files with the "
                               "same stem: name them with --design-set NAME=FILE)")
    try:
        return [NamedDesign(name=n, candidate=Candidate.from_files(p)) for n, p in named]
    except (ValueError, RtlforgeError) as exc:
        raise click.UsageError(str(exc)) from exc


@behave.command("area-time")
@click.argument("designs", nargs=-1,
                type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--design-set", "design_sets", multiple=True, metavar="NAME=FILE[,FILE...]",
              help="A candidate of several files, named NAME (repeatable). Each DESIGN "
                   "argument is a one-file candidate named by its file stem.")
@_TASK
@click.option("--freq", "freq_mhz", required=True, type=click.FloatRange(min=0, min_open=True),
              metavar="MHZ", help="Clock frequency f0 in MHz (period 1000/f0 ns).")
@click.option("--liberty", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Liberty file (.lib or .lib.gz); default: the bundled generic library.")
@click.option("--workload", "workload_size", type=click.IntRange(1, 100_000), default=64,
              show_default=True, help="Transactions in the workload W.")
@click.option("--workload-seed", type=int, default=0, show_default=True,
              help="Seed of W's values.")
@_SEED
@_SEQUENCES
@_TRANSACTIONS
@click.option("--timeout", type=click.FloatRange(min=0.1), default=120.0, show_default=True,
              help="Wall-clock seconds per tool run.")
@_JSON
@click.option("--report", "report_dir", type=click.Path(file_okay=False, path_type=Path),
              help="Write index.html (SVG plot and table) and area_time.json here.")
def area_time(designs: tuple[Path, ...], design_sets: tuple[str, ...], task_dir: Path,
              freq_mhz: float, liberty: Path | None, workload_size: int, workload_seed: int,
              seed: int, sequences: int | None, transactions: int | None, timeout: float,
              as_json: bool,
              report_dir: Path | None) -> None:
    """Area-time Pareto front of candidate architectures on a workload W at --freq.

    Each candidate is checked against B* (the stimulus options), run on W (N_W cycles from the
    first input offered to the last output accepted; tau_W = N_W / f0) and synthesised for area
    and critical path; the front is taken among those that pass, complete W and meet timing.
    Exit 0 when the front is not empty, 1 when it is, 3 when any candidate hit an
    infrastructure failure.
    """
    from rtlforge.behave.areatime import Workload, explore_area_time, write_report
    from rtlforge.cmdline import command_host
    from rtlforge.core.errors import ConfigError

    task, _ = _load(task_dir)
    candidates = _design_sets(designs, design_sets)
    try:
        estimator = command_host().create("ppa_estimator", "yosys-sta", liberty=liberty,
                                          timeout=timeout)
        estimator.liberty  # noqa: B018 - a bad liberty file is a usage error, reported now
    except (ValueError, ConfigError) as exc:
        raise click.UsageError(f"--liberty: {exc}") from exc
    try:
        result = explore_area_time(
            task, candidates, freq_mhz=freq_mhz, estimator=estimator,
            workload=Workload(transactions=workload_size, seed=workload_seed),
            check=_stimulus(seed, sequences, transactions), timeout_s=timeout)
    finally:
        estimator.close()
    page = write_report(result, report_dir) if report_dir is not None else None
    if as_json:
        # the sources are in area_time.json; stdout names the files
        click.echo(json.dumps({**result.model_dump(
                                   mode="json", exclude={"candidates": {"__all__": {"sources"}}}),
                               "front": [p.name for p in result.front],
                               "report": str(page) if page else None}))
    else:
        click.echo(f"task {result.task}, f0 {freq_mhz:g} MHz (period {result.period_ns:.3f} "
                   f"ns), W = {workload_size} transactions, liberty {result.liberty}")
        click.echo(f"{'candidate':<14} {'status':<20} {'N_W':>6} {'tau_W ns':>10} "
                   f"{'area um2':>10} {'crit ns':>8}")
        for p in result.candidates:
            click.echo(f"{p.name:<14} {p.status:<20} {_num(p.cycles):>6} "
                       f"{_num(p.time_ns, '.1f'):>10} {_num(p.area_um2, '.1f'):>10} "
                       f"{_num(p.critical_path_ns, '.3f'):>8}")
            if p.reason:
                click.echo(f"    {p.reason}")
        click.echo(f"front: {', '.join(p.name for p in result.front) or '(empty)'}")
        if page is not None:
            click.echo(f"report: {page}")
    if any(p.status == "infra_error" for p in result.candidates):
        sys.exit(EXIT_INFRA)
    sys.exit(EXIT_OK if result.front else EXIT_NOT_PASSED)


def _num(value: Any, fmt: str = "") -> str:
    return "-" if value is None else format(value, fmt)
