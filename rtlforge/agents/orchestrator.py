"""The refinement loop: symbolic tier, rule-routed specialists, the router, validation first.

A few lines solve a task::

    from rtlforge.agents.orchestrator import Orchestrator

    with Orchestrator(generator="openai", generator_options={"model": "..."}) as orch:
        result = orch.solve(task)          # a SolveResult: verdict, iterations, cost, trace

How one task is solved (issue 12, section 1):

1. **Tier 1, symbolic**: with ``symbolic=True`` the ``symbolic`` generator is asked first; if
   it answers (a K-map or truth-table spec), its design is validated, and a pass costs no LLM
   call. The symbolic attempt is a record of its own and does not use an LLM iteration.
2. **Decomposition** (seam): a ``decomposer`` may build the design hierarchically; a passing
   assembled top ends the task.
3. **The loop**, up to ``max_iterations`` rounds of generate -> validate -> feedback:
   the first round goes to the first **specialist** role (tier 2) whose ``matches`` gives a
   reason; every other round asks the **router** (tier 3) for an :class:`AgentAction` among
   the routed roles, records a :class:`Decision` with its state, fills in its outcome after
   validation, tells the router (``observe``) and appends it to ``decisions.jsonl``.
   Each agent call gets a fresh :class:`AgentContext`: the spec (guidance applied), the last
   kept candidate's code and rendered feedback (:mod:`rtlforge.agents.feedback`), the
   knowledge its ``k`` retrieves (leakage-guarded), and a waveform window when one is wired.
4. **Stop on pass**; with ``optimize=True`` the remaining rounds go to the ``optimize`` role,
   keeping a candidate only when it still passes and its cells (then critical path) improve.

Multi-candidate mode (``candidates=N > 1``): a round asks for N samples (one request with
``n=N`` in the first round; afterwards one request per kept candidate, N split among them),
ranks them (:func:`rank_key`: verdict, normalised mismatches, cells, critical path) and keeps
the best ``keep`` as what the next round's calls see.

Infrastructure failures (a generator error, a missing tool) end the task with verdict
``infra_error`` and ``error`` set; :meth:`Orchestrator.solve_many` carries on with the next
task. The library never prints: every step is a :class:`~rtlforge.agents.trace.ThoughtEvent`
(``run_dir/traces/<task id>.jsonl`` plus the given sinks) and logging goes through
:func:`rtlforge.core.log.get_logger`.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from rtlforge.agents.base import AgentContext, AgentRole, RoleSettings, Router
from rtlforge.agents.feedback import (
    error_trend,
    mismatch_count,
    mismatch_ratio,
    render_feedback,
)
from rtlforge.agents.knowledge.base import Hit, LeakageGuard, Retriever
from rtlforge.agents.models import (
    ATTEMPT_FEEDBACK,
    AgentAction,
    Attempt,
    Decision,
    Focus,
    IterationRecord,
    RouterContext,
    SolveResult,
    Tier,
)
from rtlforge.agents.run import trace_path as run_trace_path
from rtlforge.agents.trace import JsonlSink, ThoughtKind, Trace, TraceSink
from rtlforge.core.errors import ConfigError, InfraError
from rtlforge.core.interfaces import (
    Generation,
    GenerationRequest,
    Generator,
    PPAEstimator,
    SamplingParams,
)
from rtlforge.core.log import get_logger
from rtlforge.core.models import (
    Candidate,
    Feedback,
    SourceFile,
    StageResult,
    Task,
    ValidationReport,
    Verdict,
)
from rtlforge.core.plugins import PluginHost
from rtlforge.generation.base import with_candidates
from rtlforge.validate.pipeline import Pipeline

if TYPE_CHECKING:
    from rtlforge.sandbox.runner import SandboxRunner

__all__ = ["GENERIC_ROLE", "Orchestrator", "Scored", "rank", "rank_key"]

log = get_logger("rtlforge.agents.orchestrator")

#: The role used when the host registers no routed role at all (no router call is made then).
GENERIC_ROLE = "generic"
OPTIMIZE_ROLE = "optimize"
TESTBENCH_ROLE = "testbench"
#: Sampling for the decomposition's plan and module calls (structured output: low temperature).
DECOMPOSE_TEMPERATURE = 0.3
DECOMPOSE_MAX_TOKENS = 4096
#: How many times the testbench role is asked before the task goes on without a testbench.
TESTBENCH_ATTEMPTS = 2

_VERDICT_RANK = {Verdict.PASS: 0, Verdict.FAIL: 1, Verdict.TIMEOUT: 2, Verdict.ERROR: 3,
                 Verdict.INFRA_ERROR: 4}

#: The seams' signatures (see :class:`Orchestrator` for their contracts).
Guidance = Callable[[Task], tuple[str, Sequence[str]]]
Decomposer = Callable[..., Candidate | None]
Waveform = Callable[[Task, Candidate, ValidationReport], str]


class _GenericRole(AgentRole):
    """The fallback agent: the generic template with the base settings."""

    name = GENERIC_ROLE
    description = "plain spec-to-RTL with feedback (used when no routed role is registered)"


@dataclass(frozen=True)
class Scored:
    """A validated candidate with what ranking and the next round need."""

    candidate: Candidate
    report: ValidationReport
    order: int = 0  # generation order in the task: later wins ties (fresher feedback)
    cells: int | None = None
    delay_ns: float | None = None

    @property
    def passed(self) -> bool:
        return self.report.verdict is Verdict.PASS


def rank_key(item: Scored) -> tuple[float, ...]:
    """Smaller is better: verdict (pass > fail > error), then the normalised mismatch count,
    then cells, then critical path (unmeasured counts as worst), then the later candidate."""
    return (_VERDICT_RANK.get(item.report.verdict, 5), mismatch_ratio(item.report),
            item.cells if item.cells is not None else math.inf,
            item.delay_ns if item.delay_ns is not None else math.inf, -item.order)


def rank(items: Iterable[Scored]) -> list[Scored]:
    """``items`` best first (see :func:`rank_key`)."""
    return sorted(items, key=rank_key)


class _TaskStopped(Exception):
    """An infrastructure failure that ends the task (carried out of the loop)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass
class _Run:
    """The mutable state of solving one task (never shared between tasks)."""

    task: Task
    spec: str
    guard: LeakageGuard
    trace: Trace
    records: list[IterationRecord]
    kept: list[Scored]
    attempts: list[Attempt] = field(default_factory=list)  # the failing iterations' designs
    best: Scored | None = None
    solved_by: Tier | None = None
    order: int = 0
    judge: str = "real"
    #: LLM use outside the iterations (writing a testbench): added to the task's totals.
    extra_calls: int = 0
    extra_tokens: int = 0


class Orchestrator:
    """Solves tasks with specialised agents, a router and validation after every attempt.

    Parameters
    ----------
    generator / generator_options:
        The run's default generator (an instance, owned by the caller, or a plugin name built
        with the options). A role whose settings name another generator gets that one; each
        distinct (name, options) is built once and closed by :meth:`close`.
    host:
        Where roles, routers, retrievers, generators, validators and estimators come from
        (default :meth:`PluginHost.default`).
    pipeline:
        Validation (default ``Pipeline.build(host=host)``).
    roles / enabled_roles:
        Per-role :class:`RoleSettings` overrides (an agents file), by role name; the roles
        to use (None: every registered one).
    router:
        An instance, or a router plugin name.
    max_iterations / candidates / keep:
        LLM rounds per task; samples per round; candidates kept for the next round.
    symbolic / optimize:
        Try the symbolic tier first; continue into an optimize phase after a pass.
    retriever:
        An instance, a retriever plugin name, or None for no retrieval.
    guidance:
        Called once per task before anything else as ``guidance(task)``; returns the enriched
        spec (what every prompt shows) and the names of the guidance applied (recorded in the
        Analysis event). True (the default): the spec-guidance registry
        (:mod:`rtlforge.agents.guidance`); None or False: the task's spec as is.
    decomposer:
        True (the default): :class:`~rtlforge.agents.decompose.Decomposer` on the run's
        generator and pipeline, for specs it judges complex; None or False: never. A callable
        is called once per task after the symbolic tier, with keyword arguments ``task``,
        ``spec`` (enriched), ``generator`` (the default Generator), ``trace`` (the task's
        :class:`Trace`, to emit its own events) and ``host``; returns the assembled top as a
        Candidate (validated here; a pass ends the task, tier ``decomposition``) or None when
        it does not apply. Its LLM use is counted from the generator's ``usage()`` when the
        generator keeps one.
    waveform:
        Called before an agent call whose input candidate failed in simulation, as
        ``waveform(task, candidate, report)``; returns a textual waveform window around the
        first mismatch for the prompt's ``{waveform}`` field ("" for none). True (the default):
        :func:`~rtlforge.agents.waveform.failing_window` (one more simulation with a dump),
        only for roles whose template shows ``{waveform}``; None or False: never.
    testbench:
        For a task without a testbench, ask the ``testbench`` role for one first (checked by
        :func:`~rtlforge.agents.testbench.check_generated_testbench`, one retry with its
        problems); the result's ``judge`` then says ``generated``. A task's own testbench is
        never replaced.
    run_dir:
        Writes ``run_dir/traces/<task id>.jsonl`` and appends ``run_dir/decisions.jsonl``.
    sinks:
        Further trace sinks (the CLI's live view).
    estimator:
        A PPA estimator (instance or name) for the optimize phase and the synthesis tie-break;
        None: the host's ``yosys-abc`` or first ``ppa_estimator`` when ``optimize=True``.
    seed:
        Base sampling seed (round ``i`` uses ``seed + i``).
    """

    def __init__(self, *, generator: Generator | str, host: PluginHost | None = None,
                 generator_options: Mapping[str, Any] | None = None,
                 pipeline: Pipeline | None = None,
                 roles: Mapping[str, Mapping[str, Any]] | None = None,
                 enabled_roles: Sequence[str] | None = None,
                 router: Router | str = "heuristic",
                 max_iterations: int = 5, candidates: int = 1, keep: int = 2,
                 symbolic: bool = True, optimize: bool = False,
                 retriever: Retriever | str | None = "keyword",
                 guidance: Guidance | bool | None = True,
                 decomposer: Decomposer | bool | None = True,
                 waveform: Waveform | bool | None = True,
                 testbench: bool = True,
                 run_dir: Path | None = None,
                 sinks: Sequence[TraceSink] = (), seed: int = 0,
                 estimator: PPAEstimator | str | None = None) -> None:
        if max_iterations < 1:
            raise ValueError("max_iterations must be at least 1")
        if candidates < 1 or keep < 1:
            raise ValueError("candidates and keep must be at least 1")
        self.host = host if host is not None else PluginHost.default()
        self.max_iterations = max_iterations
        self.candidates = candidates
        self.keep = keep
        self.optimize = optimize
        self.guidance: Guidance | None = (
            guidance if callable(guidance) else self._builtin_guidance() if guidance else None)
        self.decomposer: Decomposer | None = (
            decomposer if callable(decomposer) else self._decompose if decomposer else None)
        self.waveform: Waveform | None = (
            waveform if callable(waveform) else self._waveform_window if waveform else None)
        self.testbench = testbench
        self.run_dir = Path(run_dir) if run_dir is not None else None
        self.sinks = tuple(sinks)
        self.seed = seed
        # what close() closes: the generators, estimators and runner built here
        self._owned: list[Generator | PPAEstimator | SandboxRunner] = []
        self._generators: dict[str, Generator] = {}
        if isinstance(generator, str):
            self.generator = self._build_generator(generator, dict(generator_options or {}))
        else:
            self.generator = generator
        self._symbolic: Generator | None = (
            self.host.create("generator", "symbolic") if symbolic else None)
        if self._symbolic is not None:
            self._owned.append(self._symbolic)
        self.pipeline = pipeline if pipeline is not None else Pipeline.build(host=self.host)
        if pipeline is None:  # its sandbox runner (gate workers, spawners) is ours to close
            self._owned.append(self.pipeline.runner)
        self._stage_labels = {v.name: v.stage for v in self.pipeline.validators}
        self.roles = self._build_roles(roles or {}, enabled_roles)
        self.routed = tuple(name for name, role in self.roles.items() if role.routed)
        self.specialists = tuple(role for role in self.roles.values() if not role.routed
                                 and role.name not in (OPTIMIZE_ROLE, GENERIC_ROLE,
                                                       TESTBENCH_ROLE))
        self.router: Router | None = None
        if self.routed:
            self.router = (self.host.create("router", router) if isinstance(router, str)
                           else router)
        self.retriever: Retriever | None = (
            self.host.create("retriever", retriever) if isinstance(retriever, str)
            else retriever)
        self.estimator = self._build_estimator(estimator)

    # ------------------------------------------------------------------ construction

    def _build_generator(self, name: str, options: Mapping[str, Any]) -> Generator:
        key = json.dumps([name, options], sort_keys=True, default=str)
        if key not in self._generators:
            made = self.host.create("generator", name, **options)
            self._generators[key] = made
            self._owned.append(made)
        return self._generators[key]

    def _build_roles(self, overrides: Mapping[str, Mapping[str, Any]],
                     enabled: Sequence[str] | None) -> dict[str, AgentRole]:
        names = self.host.names("agent_role")
        unknown = sorted((set(overrides) | set(enabled or ())) - set(names) - {GENERIC_ROLE})
        if unknown:
            raise ConfigError(f"agents file names unknown role(s) {unknown}; registered: "
                              f"{names}")
        if enabled is not None:
            names = [name for name in names if name in set(enabled)]
        roles: dict[str, AgentRole] = {
            name: self.host.create("agent_role", name, **dict(overrides.get(name, {})))
            for name in names}
        if not any(role.routed for role in roles.values()):
            roles[GENERIC_ROLE] = _GenericRole(**dict(overrides.get(GENERIC_ROLE, {})))
        return roles

    def _build_estimator(self, estimator: PPAEstimator | str | None) -> PPAEstimator | None:
        if not isinstance(estimator, str | None):
            return estimator
        if estimator is None:
            if not self.optimize or "ppa_estimator" not in {k.name for k in self.host.kinds()}:
                return None
            names = self.host.names("ppa_estimator")
            if not names:
                return None
            estimator = "yosys-abc" if "yosys-abc" in names else names[0]
        made = self.host.create("ppa_estimator", estimator)
        self._owned.append(made)
        return made

    def generator_for(self, role: AgentRole) -> Generator:
        """The generator a role's calls go to (its own when its settings name one)."""
        settings: RoleSettings = role.settings
        if settings.generator is None:
            return self.generator
        return self._build_generator(settings.generator, settings.generator_options)

    # ------------------------------------------------------------------ lifecycle

    def close(self) -> None:
        """Close the generators, estimators and sandbox runner built here (not the ones
        passed in)."""
        owned, self._owned = self._owned, []
        for item in owned:
            item.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ solving

    def solve_many(self, tasks: Iterable[Task]) -> Iterator[SolveResult]:
        """Solve each task in turn (an infrastructure failure ends only its own task)."""
        for task in tasks:
            yield self.solve(task)

    def solve(self, task: Task, *, guard: LeakageGuard | None = None) -> SolveResult:
        """Solve one task; never raises for what generators, tools or designs do."""
        start = time.perf_counter()
        trace_path = (run_trace_path(self.run_dir, task.id)
                      if self.run_dir is not None else None)
        jsonl: JsonlSink | None = None
        if trace_path is not None:
            trace_path.unlink(missing_ok=True)  # a re-solved task gets a fresh trace
            jsonl = JsonlSink(trace_path)
        # the caller's sinks outlive the task (a live view spans the run): only ours is closed
        trace = Trace(task.id, self.sinks, owned=() if jsonl is None else (jsonl,))
        run = _Run(task=task, spec=task.spec, trace=trace, records=[], kept=[],
                   guard=guard if guard is not None else LeakageGuard.for_task(task))
        error: str | None = None
        try:
            self._solve(run)
        except _TaskStopped as exc:
            error = exc.message
        except Exception as exc:  # noqa: BLE001 - a bug or a plugin's error ends this task only
            error = f"{type(exc).__name__}: {exc}"
            log.warning("solve_failed", task=task.id, error=error)
            trace.emit(ThoughtKind.ERROR, f"infrastructure failure: {error}",
                       data={"error": error})
        result = self._result(run, error, trace_path, time.perf_counter() - start)
        trace.emit(ThoughtKind.PROGRESS,
                   f"task finished: {result.verdict.value} after {result.iterations} "
                   f"iteration(s), {result.llm_calls} LLM call(s), {result.tokens} tokens",
                   confidence=1.0 if result.passed else None,
                   data={"final": True, **result.summary(),
                         "solved_by": result.solved_by.value if result.solved_by else None})
        trace.close()
        log.info("solved", task=task.id, verdict=result.verdict.value,
                 iterations=result.iterations, llm_calls=result.llm_calls)
        return result

    def _result(self, run: _Run, error: str | None, trace_path: Path | None,
                seconds: float) -> SolveResult:
        best = run.best
        if error is not None:
            verdict = Verdict.INFRA_ERROR
        elif best is not None:
            verdict = best.report.verdict
        else:
            verdict = Verdict.ERROR
        return SolveResult(
            task_id=run.task.id, verdict=verdict, iterations=len(run.records),
            llm_calls=run.extra_calls + sum(r.llm_calls for r in run.records),
            tokens=run.extra_tokens + sum(r.tokens for r in run.records),
            agents=tuple(r.agent for r in run.records),
            tiers=tuple(r.tier for r in run.records),
            solved_by=run.solved_by if verdict is Verdict.PASS else None,
            trace=str(trace_path) if trace_path is not None else None, seconds=seconds,
            records=tuple(run.records), candidate=best.candidate if best else None,
            report=best.report if best else None, error=error, judge=run.judge,
            attempts=tuple(run.attempts))

    def _solve(self, run: _Run) -> None:
        task, trace = run.task, run.trace
        applied: Sequence[str] = ()
        if self.guidance is not None:
            run.spec, applied = self.guidance(task)
        specialist = self._specialist(task, run.spec)
        plan = ("symbolic first, then " if self._symbolic is not None else "") + (
            f"specialist {specialist[0].name} ({specialist[1]})" if specialist
            else "the router" if self.router is not None else f"the {GENERIC_ROLE} agent")
        trace.emit(ThoughtKind.ANALYSIS, f"task {task.id}: {plan}",
                   evidence=tuple(f"guidance: {name}" for name in applied),
                   data={"tier_plan": plan, "guidance": list(applied),
                         "specialist": specialist[0].name if specialist else None,
                         "routed_agents": list(self.routed), "ports": len(task.ports),
                         "has_testbench": bool(task.testbench)})
        # a simulation stage that applies without a testbench (a CVDP problem's own harness, a
        # behaviour-model checker) already judges the task: a generated testbench adds nothing
        judged = any(v.stage == "simulate" and v.applies(task) for v in self.pipeline.validators)
        if not task.testbench and task.cocotb_module is None and not judged:
            run.judge = "none"
            if self.testbench and TESTBENCH_ROLE in self.roles:
                self._generate_testbench(run)
        if self._symbolic is not None and self._symbolic_tier(run):
            return
        if self.decomposer is not None and self._decomposition_tier(run):
            return
        for iteration in range(self.max_iterations):
            if run.best is not None and run.best.passed:
                if not self.optimize:
                    break
                if not self._optimize_round(run, iteration):
                    break
                continue
            first = iteration == 0 and specialist is not None
            self._round(run, iteration, specialist if first else None)

    def _specialist(self, task: Task, spec: str) -> tuple[AgentRole, str] | None:
        for role in self.specialists:
            reason = role.matches(task, spec)
            if reason:
                return role, reason
        return None

    # ------------------------------------------------------------------ built-in seams

    def _builtin_guidance(self) -> Guidance | None:
        """The spec-guidance registry's seam, when the host has its detectors."""
        from rtlforge.agents.guidance.registry import guidance_seam

        if "guidance_detector" not in {kind.name for kind in self.host.kinds()}:
            log.debug("no_guidance", reason="the guidance plugin is not loaded")
            return None
        return guidance_seam(self.host)

    def _waveform_window(self, task: Task, candidate: Candidate, report: ValidationReport
                         ) -> str:
        from rtlforge.agents.waveform import failing_window, window_from_report

        window = window_from_report(task, report)
        if not window.text:
            window = failing_window(task, candidate, self.pipeline)
        if not window.text:
            log.debug("no_waveform_window", task=task.id, reason=window.reason)
        return window.text

    def _decompose(self, *, task: Task, spec: str, generator: Generator, trace: Trace,
                   host: PluginHost) -> Candidate | None:
        """The built-in decomposer seam: a :class:`Decomposer` on this run's generator."""
        from rtlforge.agents.decompose import Decomposer, is_complex

        if not is_complex(task.spec):  # the task's own words: guidance text adds keywords
            return None

        def call_llm(system: str | None, prompt: str, *, purpose: str) -> str:
            request = GenerationRequest(prompt=prompt, system=system, task=task,
                                        request_id=f"{task.id}:{purpose}",
                                        metadata={"agent": "decompose", "purpose": purpose})
            answers = generator.generate([request], SamplingParams(
                n=1, temperature=DECOMPOSE_TEMPERATURE, max_tokens=DECOMPOSE_MAX_TOKENS,
                seed=self.seed))
            if not answers or not answers[0]:
                raise _TaskStopped(f"generator returned no answer for {purpose}")
            return answers[0][0].text

        decomposer = Decomposer(call_llm, host=host, pipeline=self.pipeline)
        enriched = task.model_copy(update={"spec": spec})
        return decomposer(enriched, trace=trace)

    def _generate_testbench(self, run: _Run) -> None:
        """Ask the testbench role for a testbench; on success the task is judged by it."""
        from rtlforge.agents.testbench import (
            TestbenchError,
            check_generated_testbench,
            generated_testbench_task,
        )

        role = self.roles[TESTBENCH_ROLE]
        generator = self.generator_for(role)
        action = AgentAction(agent=role.name, focus=role.settings.focus,
                             reason="the task has no testbench")
        # the role's retrieval depth (k 4, the paper's): reference designs of similar circuits
        # help write the testbench's reference model; the task's own stay out (run.guard)
        knowledge = self._retrieve(run, role, action, 0)
        feedback = ""
        for attempt in range(TESTBENCH_ATTEMPTS):
            ctx = AgentContext(task=run.task, spec=run.spec, action=action, iteration=attempt,
                               max_iterations=TESTBENCH_ATTEMPTS, feedback=feedback,
                               knowledge=knowledge)
            request = role.build_request(ctx, request_id=f"{run.task.id}:testbench:{attempt}")
            answers = self._call(run, generator, request, role.sampling(action, seed=self.seed),
                                 agent=role.name, index=attempt)
            if not answers:
                raise _TaskStopped(f"generator {getattr(generator, 'name', '?')} wrote no "
                                   f"testbench")
            try:
                judged = generated_testbench_task(run.task, answers[0].text)
            except TestbenchError as exc:
                problems: tuple[str, ...] = (str(exc),)
            else:
                check = check_generated_testbench(judged, judged.testbench[0].content)
                problems = check.problems or self._gate_testbench(judged)
                if not problems:
                    run.task, run.judge = judged, "generated"
                    run.trace.emit(ThoughtKind.PROPOSAL,
                                   f"testbench agent wrote a testbench ({check.scenarios} "
                                   f"scenarios); it judges this task, which has none",
                                   agent=role.name, confidence=0.5,
                                   data={"attempt": attempt, "scenarios": check.scenarios})
                    return
            feedback = ("Your testbench cannot be used yet:\n"
                        + "\n".join(f"- {p}" for p in problems))
            run.trace.emit(ThoughtKind.BOTTLENECK, f"generated testbench refused: {problems[0]}",
                           agent=role.name, evidence=problems[:5], data={"attempt": attempt})
        run.trace.emit(ThoughtKind.ANALYSIS, "no usable testbench; validating without one "
                       "(lint and synthesis only)", agent=role.name)

    def _gate_testbench(self, task: Task) -> tuple[str, ...]:
        """The security gate's refusal of a generated testbench, as a problem for the
        testbench agent (empty: accepted). Checked here, with the rules the pipeline applies
        to a testbench, because once it judges the task a refusal would fail every design,
        correct ones included, with feedback about code the design agent never wrote. With
        the gate switched off the jail alone contains it, as for any testbench."""
        from rtlforge.core.errors import InvalidSourceError, SecurityViolation
        from rtlforge.sandbox.runner import normalise_source

        runner = self.pipeline.runner
        if runner.unsafe_skip_gate:
            return ()
        try:
            files = tuple(normalise_source(f) for f in task.testbench)
            runner.gate.check(files, role="testbench",
                              available=[f.name for f in (*task.support, *files)])
        except (SecurityViolation, InvalidSourceError) as exc:
            hint = f" ({exc.hint})" if getattr(exc, "hint", None) else ""
            return (f"the security gate refuses the testbench: {exc}{hint}",)
        return ()

    def _call(self, run: _Run, generator: Generator, request: GenerationRequest,
              params: SamplingParams, *, agent: str, index: int) -> list[Generation]:
        """One generator call outside the iterations, counted in the task's totals."""
        try:
            answers = with_candidates(generator.generate([request], params), [request])
        except Exception as exc:
            message = (f"generator {getattr(generator, 'name', '?')} failed: "
                       f"{type(exc).__name__}: {exc}")
            run.trace.emit(ThoughtKind.ERROR, message, agent=agent,
                           data={"error": message, "infra": isinstance(exc, InfraError)})
            raise _TaskStopped(message) from exc
        got = answers[0] if answers else []
        used_in, used_out = _usage(got)
        run.extra_calls += 1
        run.extra_tokens += used_in + used_out
        run.trace.emit(ThoughtKind.GENERATION, f"{agent} answered ({len(got)} sample(s))",
                       agent=agent, data={"request_id": request.request_id, "samples": len(got),
                                          "attempt": index, "prompt_tokens": used_in,
                                          "completion_tokens": used_out})
        return got

    # ------------------------------------------------------------------ tiers

    def _symbolic_tier(self, run: _Run) -> bool:
        """Tier 1; True when it solved the task."""
        assert self._symbolic is not None
        start = time.perf_counter()
        request = GenerationRequest(prompt=run.spec, task=run.task,
                                    request_id=f"{run.task.id}:symbolic",
                                    metadata={"agent": "symbolic"})
        try:
            answers = with_candidates(self._symbolic.generate([request], SamplingParams(n=1)),
                                      [request])
        except Exception as exc:  # noqa: BLE001 - the symbolic tier is optional: fall through
            run.trace.emit(ThoughtKind.ANALYSIS, f"symbolic tier failed ({exc}); next tier",
                           agent="symbolic")
            return False
        generations = answers[0] if answers else []
        if not generations or generations[0].candidate is None:
            why = getattr(self._symbolic, "declined", {}).get(request.request_id, "")
            run.trace.emit(ThoughtKind.ANALYSIS,
                           "symbolic tier declined" + (f": {why}" if why else ""),
                           agent="symbolic", data={"declined": why})
            return False
        run.trace.emit(ThoughtKind.GENERATION, "symbolic solver answered", agent="symbolic",
                       iteration=0, confidence=0.9, data={"llm_calls": 0, "tokens": 0})
        scored = self._validate(run, generations[0].candidate, iteration=0, agent="symbolic")
        self._record(run, [scored], iteration=0, tier=Tier.SYMBOLIC, agent="symbolic",
                     action=None, llm_calls=0, tokens=(0, 0),
                     seconds=time.perf_counter() - start)
        if scored.passed:
            run.solved_by = Tier.SYMBOLIC
            return True
        return False

    def _decomposition_tier(self, run: _Run) -> bool:
        assert self.decomposer is not None
        start = time.perf_counter()
        before = self.generator.usage()
        candidate = self.decomposer(task=run.task, spec=run.spec, generator=self.generator,
                                    trace=run.trace, host=self.host)
        after = self.generator.usage()
        calls = tokens_in = tokens_out = 0
        if before is not None and after is not None:
            calls = after.requests - before.requests
            tokens_in = after.prompt_tokens - before.prompt_tokens
            tokens_out = after.completion_tokens - before.completion_tokens
        if candidate is None:  # not applicable, or no usable plan: its calls still cost
            run.extra_calls += calls
            run.extra_tokens += tokens_in + tokens_out
            run.trace.emit(ThoughtKind.ANALYSIS,
                           "no usable decomposition; next tier" if calls
                           else "decomposition does not apply",
                           data={"llm_calls": calls, "tokens": tokens_in + tokens_out})
            return False
        iteration = len(run.records)
        scored = self._validate(run, candidate, iteration=iteration, agent="decomposer")
        self._record(run, [scored], iteration=iteration, tier=Tier.DECOMPOSITION,
                     agent="decomposer", action=None, llm_calls=calls,
                     tokens=(tokens_in, tokens_out), seconds=time.perf_counter() - start)
        if scored.passed:
            run.solved_by = Tier.DECOMPOSITION
            return True
        return False

    def _round(self, run: _Run, iteration: int,
               specialist: tuple[AgentRole, str] | None) -> None:
        """One LLM round: choose the agent, generate, validate, rank, record."""
        start = time.perf_counter()
        index = len(run.records)
        decision: Decision | None = None
        if specialist is not None:
            role, reason = specialist
            tier = Tier.SPECIALIST
            action = AgentAction(agent=role.name, focus=role.settings.focus,
                                 reason=f"rule: {reason}")
        elif self.router is not None:
            tier = Tier.ROUTER
            ctx = self._router_context(run, iteration)
            action = self.router.decide(ctx, self.routed)
            if action.agent not in self.routed:
                raise ConfigError(f"router {self.router.name!r} chose {action.agent!r}, not "
                                  f"one of {list(self.routed)}")
            decision = Decision(task_id=run.task.id, iteration=index, router=self.router.name,
                                context=ctx, action=action, state=self.router.state(ctx))
            run.trace.emit(ThoughtKind.DECISION,
                           f"router {self.router.name}: {action.agent}, focus "
                           f"{action.focus.value}" + (f" ({action.reason})" if action.reason
                                                      else ""),
                           iteration=index, agent=action.agent,
                           data={"action": action.model_dump(mode="json"),
                                 "state": list(decision.state) if decision.state else None})
            role = self.roles[action.agent]
        else:
            tier = Tier.ROUTER
            role = self.roles[GENERIC_ROLE]
            action = AgentAction(agent=GENERIC_ROLE, focus=Focus.ERROR if run.kept else
                                 Focus.FULL, reason="no routed role registered")
        scored, calls, tokens = self._attempt(run, role, action, index)
        record = self._record(run, scored, iteration=index, tier=tier, agent=role.name,
                              action=action, llm_calls=calls, tokens=tokens,
                              seconds=time.perf_counter() - start)
        if run.best is not None and run.best.passed and run.solved_by is None:
            run.solved_by = tier
        if decision is not None and self.router is not None:
            done = decision.model_copy(update={"outcome": record})
            self.router.observe(done)
            self._append_decision(done)

    def _optimize_round(self, run: _Run, iteration: int) -> bool:
        """One optimize round after a pass; False when the phase cannot run."""
        role = self.roles.get(OPTIMIZE_ROLE)
        if role is None or self.estimator is None:
            missing = "no 'optimize' role" if role is None else "no PPA estimator"
            run.trace.emit(ThoughtKind.ANALYSIS, f"optimize phase skipped: {missing}",
                           data={"skipped": missing})
            return False
        best = run.best
        assert best is not None
        if best.cells is None:
            run.best = best = self._measure(run, best)
            run.kept = [best]
        start = time.perf_counter()
        index = len(run.records)
        action = AgentAction(agent=OPTIMIZE_ROLE, focus=Focus.SYNTHESIS, area_focus=True,
                             timing_focus=True, reason="optimize phase after a pass")
        scored, calls, tokens = self._attempt(run, role, action, index, optimizing=True)
        improved = [s for s in scored if s.passed and _better_ppa(s, best)]
        self._record(run, scored, iteration=index, tier=Tier.ROUTER, agent=role.name,
                     action=action, llm_calls=calls, tokens=tokens,
                     seconds=time.perf_counter() - start, update_best=False)
        if improved:
            run.best = rank(improved)[0]
            run.kept = [run.best]
            run.trace.emit(ThoughtKind.PROGRESS, f"optimize: kept a smaller design "
                           f"({best.cells} -> {run.best.cells} cells)", iteration=index,
                           data={"cells": run.best.cells, "delay_ns": run.best.delay_ns})
        else:
            run.kept = [best]
            run.trace.emit(ThoughtKind.PROGRESS, "optimize: no improvement kept",
                           iteration=index)
        return True

    # ------------------------------------------------------------------ one attempt

    def _attempt(self, run: _Run, role: AgentRole, action: AgentAction, index: int, *,
                 optimizing: bool = False) -> tuple[list[Scored], int, tuple[int, int]]:
        """Generate this round's candidates from the kept ones and validate them; passing ones
        are measured when there is an estimator and PPA decides something (the optimize phase,
        or several passing candidates to rank). Returns the scored candidates, LLM calls and
        (prompt, completion) tokens."""
        sources: list[Scored | None] = list(run.kept[:self.keep]) if run.kept else [None]
        if self.candidates == 1:
            sources = sources[:1]
        shares = _split(self.candidates, len(sources))
        knowledge = self._retrieve(run, role, action, index)
        requests: list[tuple[GenerationRequest, int]] = []
        for k, (source, n) in enumerate(zip(sources, shares, strict=True)):
            ctx = self._agent_context(run, action, index, source, knowledge)
            request = role.build_request(ctx, request_id=f"{run.task.id}:{index}:{k}")
            requests.append((request, n))
        generator = self.generator_for(role)
        params = role.sampling(action, seed=self.seed + index)
        generations: list[Generation] = []
        calls = prompt_tokens = completion_tokens = 0
        for request, n in requests:
            t0 = time.perf_counter()
            try:
                answers = with_candidates(
                    generator.generate([request], params.model_copy(update={"n": n})),
                    [request])
            except Exception as exc:
                message = f"generator {getattr(generator, 'name', '?')} failed: " \
                          f"{type(exc).__name__}: {exc}"
                run.trace.emit(ThoughtKind.ERROR, message, iteration=index, agent=role.name,
                               data={"error": message, "infra": isinstance(exc, InfraError)})
                raise _TaskStopped(message) from exc
            got = answers[0] if answers else []
            calls += 1
            used_in, used_out = _usage(got)
            prompt_tokens += used_in
            completion_tokens += used_out
            generations.extend(got)
            run.trace.emit(ThoughtKind.GENERATION,
                           f"{role.name} generated {len(got)} candidate(s)",
                           iteration=index, agent=role.name,
                           data={"request_id": request.request_id, "samples": len(got),
                                 "prompt_tokens": used_in, "completion_tokens": used_out,
                                 "seconds": round(time.perf_counter() - t0, 4),
                                 "focus": action.focus.value})
        if not generations:
            message = f"generator {getattr(generator, 'name', '?')} returned no sample"
            run.trace.emit(ThoughtKind.ERROR, message, iteration=index, agent=role.name,
                           data={"error": message})
            raise _TaskStopped(message)
        scored = [self._validate_generation(run, g, index, role.name) for g in generations]
        passing = sum(s.passed for s in scored)
        if self.estimator is not None and (optimizing or passing > 1):
            scored = [self._measure(run, s) if s.passed and s.cells is None else s
                      for s in scored]
        return scored, calls, (prompt_tokens, completion_tokens)

    def _agent_context(self, run: _Run, action: AgentAction, index: int,
                       source: Scored | None, knowledge: tuple[Hit, ...]) -> AgentContext:
        code = feedback = wave = ""
        if source is not None:
            code = _code(source.candidate)
            feedback = render_feedback(source.report, run.records)
            if source.cells is not None:
                delay = (f", critical path {source.delay_ns:.3f} ns"
                         if source.delay_ns is not None else "")
                feedback += f"\nSynthesis: {source.cells} cells{delay}."
            role = self.roles.get(action.agent)
            shows_wave = role is None or role.template.uses("waveform")
            if (self.waveform is not None and shows_wave
                    and source.report.verdict is Verdict.FAIL):
                wave = self.waveform(run.task, source.candidate, source.report)
        return AgentContext(task=run.task, spec=run.spec, action=action, iteration=index,
                            max_iterations=self.max_iterations, feedback=feedback, code=code,
                            knowledge=knowledge, waveform=wave, history=tuple(run.records))

    def _retrieve(self, run: _Run, role: AgentRole, action: AgentAction, index: int
                  ) -> tuple[Hit, ...]:
        if self.retriever is None:
            return ()
        k = role.retrieval_k(action)
        if k <= 0:
            return ()
        query = run.spec
        last = run.records[-1] if run.records else None
        if action.focus is Focus.ERROR and last is not None and last.error_category:
            query = f"{query}\n{last.error_category.replace('_', ' ')}"
        hits = tuple(self.retriever.retrieve(query, focus=action.focus.value, k=k,
                                             guard=run.guard))
        run.trace.emit(ThoughtKind.RETRIEVAL,
                       f"retrieved {len(hits)} of k={k} entries ({self.retriever.name})",
                       iteration=index, agent=role.name,
                       evidence=tuple(f"{h.entry.id} ({h.score:.2f})" for h in hits),
                       data={"k": k, "focus": action.focus.value,
                             "hits": [{"id": h.entry.id, "score": h.score} for h in hits]})
        return hits

    # ------------------------------------------------------------------ validation

    def _validate_generation(self, run: _Run, generation: Generation, index: int,
                             agent: str) -> Scored:
        if generation.candidate is None:
            why = str(generation.metadata.get("extraction_error", "no Verilog in the answer"))
            report = ValidationReport(
                verdict=Verdict.ERROR, task_id=run.task.id,
                stages=(StageResult(name="extract", verdict=Verdict.ERROR, feedback=(
                    Feedback(category="extraction", message=why, stage="extract",
                             hint="Answer with one complete module in a ```verilog block."),
                )),))
            run.order += 1
            self._emit_validation(run, report, index, agent)
            # the answer itself is kept as the record (it is no Verilog, so not from_source)
            answer = SourceFile(name="answer.txt", content=generation.text or "// empty")
            return Scored(Candidate(files=(answer,)), report, order=run.order)
        return self._validate(run, generation.candidate, iteration=index, agent=agent)

    def _validate(self, run: _Run, candidate: Candidate, *, iteration: int,
                  agent: str) -> Scored:
        report = self.pipeline.validate(run.task, candidate)
        run.order += 1
        self._emit_validation(run, report, iteration, agent)
        if report.verdict is Verdict.INFRA_ERROR:
            message = next((f.message for f in report.feedback), "validation infrastructure "
                           "failed")
            run.trace.emit(ThoughtKind.ERROR, f"validation could not run: {message}",
                           iteration=iteration, agent=agent, data={"error": message})
            raise _TaskStopped(message)
        cells = next((s.metrics["cells"] for s in report.stages
                      if isinstance(s.metrics.get("cells"), int)), None)
        return Scored(candidate, report, order=run.order, cells=cells)

    def _emit_validation(self, run: _Run, report: ValidationReport, iteration: int,
                         agent: str) -> None:
        failed = next((s.name for s in report.stages if s.verdict is not Verdict.PASS), None)
        run.trace.emit(
            ThoughtKind.VALIDATION,
            f"{report.verdict.value}" + (f" at {failed}" if failed else ""),
            iteration=iteration, agent=agent, confidence=1.0,
            evidence=tuple(f"{f.category}: {f.message.splitlines()[0][:120]}"
                           for f in report.feedback[:3] if f.message),
            data={"verdict": report.verdict.value, "failed_stage": failed,
                  "stages": [s.name for s in report.stages],
                  "mismatches": mismatch_count(report)})

    def _measure(self, run: _Run, item: Scored) -> Scored:
        assert self.estimator is not None
        top = item.candidate.top or run.task.top
        try:
            ppa = self.estimator.estimate(item.candidate, top, self.pipeline.runner)
        except Exception as exc:  # noqa: BLE001 - a measurement failure keeps the design
            run.trace.emit(ThoughtKind.ERROR, f"PPA measurement failed: {exc}",
                           data={"error": str(exc), "ppa": True})
            return item
        return replace(item, cells=ppa.cells, delay_ns=ppa.delay_ns)

    # ------------------------------------------------------------------ records

    def _record(self, run: _Run, scored: list[Scored], *, iteration: int, tier: Tier,
                agent: str, action: AgentAction | None, llm_calls: int,
                tokens: tuple[int, int], seconds: float,
                update_best: bool = True) -> IterationRecord:
        if update_best:
            pool = rank([*scored, *run.kept]) if self.candidates > 1 else rank(scored)
            run.kept = pool[:self.keep] if self.candidates > 1 else pool[:1]
            candidates = [*scored, *([run.best] if run.best else [])]
            run.best = rank(candidates)[0]
        top = rank(scored)[0]
        report = top.report
        errors = [f for f in report.feedback if f.severity == "error"]
        failed = next((s for s in report.stages if s.verdict is not Verdict.PASS), None)
        record = IterationRecord(
            iteration=iteration, tier=tier, agent=agent, action=action,
            candidates=len(scored), verdict=report.verdict,
            stages_passed=tuple(self._label(s.name) for s in report.stages
                                if s.verdict is Verdict.PASS),
            failed_stage=self._label(failed.name) if failed else None,
            error_count=len(errors), error_category=errors[0].category if errors else None,
            mismatches=mismatch_count(report), llm_calls=llm_calls,
            prompt_tokens=tokens[0], completion_tokens=tokens[1], seconds=seconds,
            candidate_digest=top.candidate.digest(), cells=top.cells)
        run.records.append(record)
        if record.verdict is not Verdict.PASS:
            run.attempts.append(Attempt(iteration=iteration, verdict=record.verdict,
                                        candidate=top.candidate,
                                        feedback=tuple(report.feedback[:ATTEMPT_FEEDBACK])))
            trend = error_trend(run.records)
            run.trace.emit(ThoughtKind.BOTTLENECK,
                           f"{record.error_category or record.verdict.value}"
                           f" at {record.failed_stage or '?'}; trend {trend.value}",
                           iteration=iteration, agent=agent,
                           evidence=tuple(f.message.splitlines()[0][:120] for f in errors[:3]),
                           data={"category": record.error_category, "trend": trend.value,
                                 "errors": record.error_count,
                                 "mismatches": record.mismatches})
        run.trace.emit(ThoughtKind.PROGRESS,
                       f"iteration {iteration}: {record.verdict.value} ({agent}, "
                       f"{llm_calls} LLM call(s), {record.tokens} tokens)",
                       iteration=iteration, agent=agent,
                       data={"verdict": record.verdict.value, "llm_calls": llm_calls,
                             "tokens": record.tokens, "tier": tier.value})
        return record

    def _label(self, stage_name: str) -> str:
        return self._stage_labels.get(stage_name, stage_name)

    def _router_context(self, run: _Run, iteration: int) -> RouterContext:
        last = run.kept[0] if run.kept else None
        return RouterContext(
            task_id=run.task.id, spec=run.spec, category=run.task.category, top=run.task.top,
            ports=len(run.task.ports), has_testbench=bool(run.task.testbench),
            sequential=_sequential(run.task), iteration=iteration,
            max_iterations=self.max_iterations, history=tuple(run.records),
            feedback=last.report.feedback if last else (),
            code=_code(last.candidate) if last else None)

    def _append_decision(self, decision: Decision) -> None:
        if self.run_dir is None:
            return
        self.run_dir.mkdir(parents=True, exist_ok=True)
        with (self.run_dir / "decisions.jsonl").open("a", encoding="utf-8") as handle:
            handle.write(decision.model_dump_json() + "\n")


# ---------------------------------------------------------------------- helpers


def _split(total: int, parts: int) -> list[int]:
    """``total`` samples over ``parts`` requests, the first ones taking the remainder; a
    request gets at least one sample."""
    base, extra = divmod(total, parts)
    return [max(1, base + (1 if k < extra else 0)) for k in range(parts)]


def _usage(generations: Sequence[Generation]) -> tuple[int, int]:
    """(prompt, completion) tokens of one request's samples: the prompt counts once (servers
    repeat it on every sample); completions add up, or the request's shared total."""
    prompt = max((g.prompt_tokens or 0 for g in generations), default=0)
    completion = sum(g.completion_tokens or 0 for g in generations)
    if not completion:
        shared = next((g.metadata.get("request_completion_tokens") for g in generations
                       if isinstance(g.metadata.get("request_completion_tokens"), int)), 0)
        completion = int(shared)
    return prompt, completion


def _better_ppa(new: Scored, old: Scored) -> bool:
    if new.cells is None:
        return False
    if old.cells is None or new.cells < old.cells:
        return True
    return (new.cells == old.cells and new.delay_ns is not None and old.delay_ns is not None
            and new.delay_ns < old.delay_ns)


def _code(candidate: Candidate) -> str:
    if len(candidate.files) == 1:
        return candidate.files[0].content
    return "\n\n".join(f"// file: {f.name}\n{f.content}" for f in candidate.files)


def _sequential(task: Task) -> bool | None:
    if not task.ports:
        return None
    return any(p.name.lower() in {"clk", "clock", "clk_i", "i_clk"} for p in task.ports)

