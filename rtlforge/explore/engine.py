"""Sequential Pareto exploration: generate → validate → measure → condition on history, resumably.

For every method, task and trial, iteration ``i`` builds a prompt from the spec and the circuits
of iterations ``< i`` (with their PPA), samples a group of candidates, validates them, measures
the PPA of those that pass and scores each by its hypervolume contribution (HVC) over the
trial's history; the group is then appended to the history and iteration ``i + 1`` follows
("Pareto-Optimal RTL Code Generation via Multi-Objective RL"). Several methods (generator +
template + settings) run side by side, and the report's reference front is their union.

Everything lands in one archive in the run directory (:class:`~rtlforge.explore.store.ExploreStore`
over the host's ``sqlite`` archive): a group's generations as soon as the generator returns, so
a restart never samples (or pays for) the same group twice; its candidates, with the group's
marker, in one archive batch after the whole group has been evaluated.

A run killed at any point (SIGKILL included) restarts where it stopped: committed groups are
skipped and the histories rebuilt from the archive; a group that was generated but not yet
committed is evaluated from its stored generations. No key is ever written twice.

Generation and evaluation overlap: one producer thread samples batches of whatever cells
(method, task, trial) are ready, while evaluation of earlier groups runs on worker threads
(candidates of a group spread over the executor's workers). Only the CLI draws progress; the
library reports through :class:`ExploreEvent` callbacks.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from rtlforge.core.errors import ExtractionError, ToolMissingError
from rtlforge.core.executor import Executor, ThreadExecutor
from rtlforge.core.interfaces import (
    ArchiveEntry,
    Generation,
    GenerationRequest,
    PPAEstimator,
)
from rtlforge.core.log import get_logger
from rtlforge.core.models import (
    Candidate,
    HistoryEntry,
    Objectives,
    SourceFile,
    Task,
    ValidationReport,
    Verdict,
)
from rtlforge.evaluation.evaluate import (
    PPAMeasure,
    candidate_from_completion,
    extraction_failure_report,
    measure_ppa,
)
from rtlforge.evaluation.golden import GoldenPPA, error_measure
from rtlforge.evaluation.protocol import PAPER, EvalProtocol, protocol_record
from rtlforge.evaluation.protocol import preset as protocol_preset
from rtlforge.explore.models import (
    Cell,
    ExploreEvent,
    ExploreRecord,
    ExploreResult,
    HistoryPolicy,
    Method,
    SimilarityScore,
    SimilarityScorer,
    format_request_id,
    parse_request_id,
)
from rtlforge.explore.report import write_explore_report
from rtlforge.explore.settings import (
    SETTINGS_VERSION,
    RunSettingsMismatch,
    differences,
    redact,
    template_digest,
    template_fields,
)
from rtlforge.explore.store import ExploreStore, group_key, remove_run_files
from rtlforge.generation.base import with_candidates
from rtlforge.pareto.hypervolume import Backend, hvc_group, non_dominated
from rtlforge.validate.pipeline import Pipeline

if TYPE_CHECKING:
    from rtlforge.core.plugins import PluginHost

__all__ = [
    "ExploreEvent",
    "ExploreResult",
    "Explorer",
    "HistoryPolicy",
    "Method",
    "OnExisting",
    "RunSettingsMismatch",
    "format_request_id",
    "parse_request_id",
]

log = get_logger("rtlforge.explore")

_MESSAGE_CHARS = 300

#: What to do with a run directory that already holds results (see :mod:`.settings`).
OnExisting = Literal["resume", "overwrite", "extend"]
_EXTENSIBLE = ("iterations", "trials")


# --------------------------------------------------------------------------------------------
# the explorer
# --------------------------------------------------------------------------------------------


def _empty_groups(store: ExploreStore) -> dict[str, dict[str, int]]:
    """Completed groups without a candidate, counted by method and task."""
    filled = {rec.group for rec in store.records()}
    out: dict[str, dict[str, int]] = {}
    for group in sorted(store.completed_groups() - filled):
        method, task = group[0], group[1]
        out.setdefault(method, {})[task] = out.get(method, {}).get(task, 0) + 1
    return out


@dataclass
class _CellState:
    """What one (method, task, trial) has produced so far, and what it does next."""

    records: list[ExploreRecord] = field(default_factory=list)
    next_iteration: int = 1
    #: Why the cell stopped before ``iterations``: a group hit an infrastructure failure, so it
    #: was not stored (a rerun of the run directory evaluates it again) and nothing after it ran.
    held: str | None = None


def _infra_reason(record: ExploreRecord) -> str | None:
    """Why ``record`` says nothing about its design (a tool or sandbox failure), if it does."""
    if record.verdict is Verdict.INFRA_ERROR:
        return f"sample {record.sample}: {record.message or 'infrastructure error'}"
    if record.ppa is not None and record.ppa.infra:
        return f"sample {record.sample}: PPA not measured ({record.ppa.error})"
    return None


@dataclass(frozen=True)
class _Outcome:
    """One generation, evaluated: what it became, how it fared, what it measured."""

    candidate: Candidate | None  # None when no Verilog could be extracted
    report: ValidationReport
    ppa: PPAMeasure | None  # measured for passing candidates only
    ast: SimilarityScore | None

    @property
    def source(self) -> str | None:
        return "\n".join(f.content for f in self.candidate.files) if self.candidate else None


class Explorer:
    """Runs every method on every task for ``trials`` independent trials of ``iterations``.

    ``tasks``: Task objects or a suite directory. ``host``: the plugin host the estimator
    (when named), the default pipeline and the run's ``sqlite`` archive come from.
    ``estimator``: a PPAEstimator, a plugin name (default ``"yosys-sta"``) or None (no PPA:
    verdicts only, no HVC or rHV). ``ast_reward``: anything with ``score_detailed`` (e.g. the
    ``ast-similarity`` reward) or None.
    ``batch_size`` caps the requests per ``generate`` call (None: every ready cell of a
    method); ``max_inflight`` caps groups generated but not yet evaluated (backpressure).
    ``on_event`` is called with :class:`ExploreEvent` objects, one at a time (serialised).
    ``preset`` (``"paper"`` or a :class:`~rtlforge.evaluation.protocol.EvalProtocol`) gives
    ``iterations``, ``trials`` and ``checkpoints`` the protocol's values when they are not
    passed (else 10, 1 and (1, 5, 10)); build the methods with :meth:`Method.from_protocol`.
    Every summary records the protocol used and how it departs from the paper's.
    ``on_existing`` decides what a run directory that already holds results becomes:
    ``"resume"`` (default) continues it only when its result-defining settings
    (:mod:`rtlforge.explore.settings`) match, ``"extend"`` also allows more iterations and/or
    trials, ``"overwrite"`` deletes what explore wrote there and starts over; a refused reuse
    raises :class:`RunSettingsMismatch` naming each difference.
    """

    def __init__(
        self,
        tasks: Sequence[Task] | Mapping[str, Task] | str | Path,
        methods: Sequence[Method],
        *,
        iterations: int | None = None,
        trials: int | None = None,
        run_dir: str | Path = "runs/explore",
        host: PluginHost | None = None,
        pipeline: Pipeline | None = None,
        estimator: PPAEstimator | str | None = "yosys-sta",
        ast_reward: SimilarityScorer | None = None,
        executor: Executor | None = None,
        workers: int | None = None,
        batch_size: int | None = None,
        max_inflight: int | None = None,
        checkpoints: Sequence[int] | None = None,
        baseline: str | Sequence[str] | None = None,
        preset: str | EvalProtocol | None = None,
        on_event: Callable[[ExploreEvent], None] | None = None,
        hv_backend: Backend = "moocore",
        title: str = "rtlforge explore report",
        on_existing: OnExisting = "resume",
    ) -> None:
        if on_existing not in ("resume", "overwrite", "extend"):
            raise ValueError(f"on_existing must be resume, overwrite or extend, "
                             f"not {on_existing!r}")
        self.on_existing = on_existing
        if isinstance(tasks, str | Path):
            from rtlforge.tasks.loader import load_tasks

            tasks = load_tasks(tasks)
        task_list = list(tasks.values()) if isinstance(tasks, Mapping) else list(tasks)
        self.tasks = {t.id: t for t in task_list}
        if not self.tasks:
            raise ValueError("no tasks to explore")
        if not methods:
            raise ValueError("give at least one Method")
        names = [m.name for m in methods]
        if len(set(names)) != len(names):
            raise ValueError(f"method names must be unique, got {names}")
        self.preset = protocol_preset(preset) if preset is not None else None
        if iterations is None:
            iterations = self.preset.iterations if self.preset else 10
        if trials is None:
            trials = self.preset.trials if self.preset else 1
        if checkpoints is None:
            checkpoints = self.preset.checkpoints if self.preset else (1, 5, 10)
        if iterations < 1 or trials < 1:
            raise ValueError("iterations and trials must be >= 1")
        baselines = [baseline] if isinstance(baseline, str) else list(baseline or ())
        unknown = [b for b in baselines if b not in names]
        if unknown:
            raise ValueError(f"baseline {unknown[0]!r} is not one of the methods {names}")
        self.methods = {m.name: m for m in methods}
        self.iterations, self.trials = iterations, trials
        self.run_dir = Path(run_dir)
        self._host = host
        self._pipeline = pipeline
        if isinstance(estimator, str):
            estimator = self.host.create("ppa_estimator", estimator)
        self.estimator: PPAEstimator | None = estimator
        self.ast_reward = ast_reward
        self._executor = executor
        self.workers = workers
        self.batch_size = batch_size
        self.max_inflight = max_inflight
        self.checkpoints = tuple(sorted({c for c in checkpoints if c >= 1}))
        self.baseline: str | list[str] | None = (
            None if not baselines else baselines[0] if isinstance(baseline, str) else baselines)
        self.hv_backend = hv_backend
        self.title = title
        self._on_event = on_event
        self._event_lock = threading.Lock()
        self._goldens = (GoldenPPA(self.estimator, self.pipeline.runner)
                         if self.estimator is not None else None)

    # ---------------------------------------------------------------- helpers

    @property
    def host(self) -> PluginHost:
        """The host given, or (built on first use) one for callers that passed none."""
        if self._host is None:
            from rtlforge.core.plugins import PluginHost

            self._host = PluginHost.default()
        return self._host

    @property
    def pipeline(self) -> Pipeline:
        if self._pipeline is None:
            self._pipeline = Pipeline.build(self.host)
        return self._pipeline

    def open_store(self) -> ExploreStore:
        """The run directory's archive, through the host's ``sqlite`` archive plugin."""
        return ExploreStore.open(self.archive_path, self.host)

    @property
    def archive_path(self) -> Path:
        return self.run_dir / "archive.sqlite"

    def _emit(self, kind: str, cell: Cell | None = None, iteration: int | None = None,
              **data: Any) -> None:
        if self._on_event is None:
            return
        method, task, trial = cell if cell is not None else (None, None, None)
        event = ExploreEvent(kind, method, task, trial, iteration, data)
        with self._event_lock:
            self._on_event(event)

    def _cells(self) -> list[Cell]:
        return [(m, t, trial) for m in self.methods for t in sorted(self.tasks)
                for trial in range(1, self.trials + 1)]

    def _load_state(self, store: ExploreStore) -> dict[Cell, _CellState]:
        """Histories rebuilt from the archive; each cell resumes after its last full group."""
        done = store.completed_groups()
        by_group: dict[tuple[str, str, int, int], list[ExploreRecord]] = {}
        for rec in store.records():
            by_group.setdefault(rec.group, []).append(rec)
        states: dict[Cell, _CellState] = {}
        for cell in self._cells():
            state = _CellState()
            while state.next_iteration <= self.iterations and \
                    (*cell, state.next_iteration) in done:
                group = by_group.get((*cell, state.next_iteration), [])
                state.records += sorted(group, key=lambda r: r.sample)
                state.next_iteration += 1
            states[cell] = state
        return states

    def _history(self, method: Method, records: Sequence[ExploreRecord]) -> list[HistoryEntry]:
        """The earlier circuits a prompt shows, by the method's policy."""
        if method.history == "all":
            chosen = [r for r in records if r.source]
        elif method.history == "front":
            scored = [r for r in records if r.objectives]
            mask = (non_dominated(np.array([r.objectives for r in scored]))
                    if scored else [])
            chosen = [r for r, keep in zip(scored, mask, strict=True) if keep]
        else:
            chosen = [r for r in records if r.passed and r.source]
        if method.history_limit is not None:
            chosen = chosen[-method.history_limit:]
        out = []
        for r in chosen:
            ppa = r.ppa or PPAMeasure()
            message = r.message
            if r.passed and ppa.error:
                message = f"PPA not measured ({ppa.error})"
            out.append(HistoryEntry(
                source=r.source or "", iteration=r.iteration, ppa=ppa.ppa, verdict=r.verdict,
                message=(message or "")[:_MESSAGE_CHARS] or None))
        return out

    def _request(self, cell: Cell, state: _CellState) -> GenerationRequest:
        method = self.methods[cell[0]]
        labels = {"method": cell[0], "trial": cell[2], "iteration": state.next_iteration}
        return method.prompt_template.request(
            self.tasks[cell[1]], self._history(method, state.records),
            iteration=state.next_iteration, iterations=self.iterations,
            request_id=format_request_id(cell[0], cell[1], cell[2], state.next_iteration),
            metadata={**method.metadata, **{k: v for k, v in labels.items()
                                            if k in method.select}})

    def dry_run(self, limit: int | None = None, *, per_method: int | None = None
                ) -> list[GenerationRequest]:
        """The next prompts a run would send (iteration 1 in a fresh run directory); at most
        ``per_method`` of each method (so every method's template is seen), then ``limit``."""
        if self.archive_path.exists() and self.on_existing != "overwrite":
            with self.open_store() as store:
                self._check_reuse(store, prompts_only=True)
                states = self._load_state(store)
        else:
            states = {c: _CellState() for c in self._cells()}
        shown: dict[str, int] = {}
        out = []
        for cell, st in states.items():
            if st.next_iteration > self.iterations:
                continue
            shown[cell[0]] = shown.get(cell[0], 0) + 1
            if per_method is None or shown[cell[0]] <= per_method:
                out.append(self._request(cell, st))
        return out[:limit] if limit is not None else out

    # ---------------------------------------------------------------- golden PPA

    def _golden_ppa(self, store: ExploreStore, task_id: str) -> PPAMeasure | None:
        """Measured once per task (the shared golden service) and remembered in the archive,
        so a restart reuses it; an infrastructure failure is neither cached nor stored."""
        task = self.tasks[task_id]
        if self._goldens is None or not task.golden:
            return None
        try:
            return self._goldens.measure(task, load=lambda: store.golden(task_id),
                                         save=lambda gold: store.set_golden(task_id, gold))
        except ToolMissingError:
            raise
        except Exception as exc:  # noqa: BLE001 - infrastructure: retried with the next group
            return error_measure(exc)

    def _known_golden(self, task_id: str) -> PPAMeasure | None:
        if self._goldens is None or task_id not in self.tasks:
            return None
        return self._goldens.known(self.tasks[task_id])

    # ---------------------------------------------------------------- evaluation

    def _evaluate_sample(self, task: Task, index: int, gen: Generation) -> _Outcome:
        """Extract, validate, measure (passing only) and AST-score one generation."""
        candidate: Candidate | None
        try:
            candidate = gen.candidate or candidate_from_completion(
                task, gen.text, index=index, generator=gen.generator)
        except ExtractionError as exc:
            candidate, report = None, extraction_failure_report(task, exc)
        else:
            report = self.pipeline.validate(task, candidate)
        ppa = None
        if report.passed and candidate is not None and self.estimator is not None:
            ppa = measure_ppa(self.estimator, candidate, candidate.top or task.top,
                              self.pipeline.runner)
        ast = None
        if self.ast_reward is not None and task.golden:
            ref = "\n".join(f.content for f in task.golden)
            ast = self.ast_reward.score_detailed([task.spec], [gen.text], reference=[ref])[0]
        return _Outcome(candidate=candidate, report=report, ppa=ppa, ast=ast)

    def _evaluate_group(self, store: ExploreStore, pool: Executor, cell: Cell, iteration: int,
                        state: _CellState, gens: Sequence[Generation]) -> None:
        method, task_id, trial = cell
        task = self.tasks[task_id]
        self._emit("evaluate_start", cell, iteration, samples=len(gens))
        gold = self._golden_ppa(store, task_id) if gens else None
        golden = gold.ppa if gold is not None else None
        outcomes = list(pool.map(lambda ig: self._evaluate_sample(task, *ig),
                                 list(enumerate(gens))))
        vectors = [Objectives.of(out.ppa.ppa if out.ppa is not None else None, golden)
                   for out in outcomes]
        past = [r.objectives for r in state.records if r.objectives]
        hvcs = hvc_group(past, vectors, backend=self.hv_backend)
        records: list[ExploreRecord] = []
        entries: list[ArchiveEntry] = []
        for sample, (gen, out, vec, score) in enumerate(
                zip(gens, outcomes, vectors, hvcs, strict=True)):
            report = out.report
            record = ExploreRecord(
                key=ExploreRecord.make_key(method, task_id, trial, iteration, sample),
                method=method, task=task_id, trial=trial, iteration=iteration, sample=sample,
                verdict=report.verdict, source=out.source, completion=gen.text,
                generator=gen.generator,
                message=None if report.passed else next(
                    (fb.message for fb in report.feedback), None),
                feedback=list(report.feedback), report=report, ppa=out.ppa, golden=golden,
                objectives=vec,
                hvc=float(score) if vec is not None else None,
                ast_similarity=out.ast.similarity if out.ast is not None else None,
                ast_status=out.ast.status if out.ast is not None else None,
                ast_backend=out.ast.backend if out.ast is not None else None,
                latency_s=gen.latency_s, finish_reason=gen.finish_reason)
            candidate = out.candidate or Candidate(  # the raw answer, kept as it came
                files=(SourceFile(name="completion.txt", content=gen.text or "(empty)"),),
                task_id=task_id)
            records.append(record)
            entries.append(ArchiveEntry(task_id=task_id, candidate=candidate,
                                        objectives=vec, verdict=report.verdict,
                                        record=record.to_json_dict()))
        infra = next((_infra_reason(r) for r in records if _infra_reason(r)), None)
        if infra is not None:
            # never a final result: unstored, the group is evaluated again when the run resumes
            # (from its stored generations); its cell stops, as later prompts would show it
            log.warning("explore_group_infra_error", method=method, task=task_id, trial=trial,
                        iteration=iteration, error=infra)
            state.held = f"iteration {iteration}: {infra}"
            self._emit("evaluate_end", cell, iteration, samples=len(records), passed=0, hvc=[],
                       infra_error=infra)
            return
        if not store.commit_group(method, task_id, trial, iteration, entries):
            log.warning("explore_group_already_committed", method=method, task=task_id,
                        trial=trial, iteration=iteration)
        state.records += records
        state.next_iteration = iteration + 1
        self._emit("evaluate_end", cell, iteration, samples=len(records),
                   passed=sum(r.passed for r in records), hvc=[r.hvc for r in records])

    # ---------------------------------------------------------------- the run

    def run(self) -> ExploreResult:
        """Run (or resume) every cell to ``iterations``, then write the report."""
        self.run_dir.mkdir(parents=True, exist_ok=True)
        if self.on_existing == "overwrite":
            removed = remove_run_files(self.run_dir)
            if removed:
                log.info("explore_overwrite", run_dir=str(self.run_dir), files=len(removed))
        store = self.open_store()
        try:
            store.set_config(self._check_reuse(store))
            states = self._load_state(store)
            resumed = sum(s.next_iteration - 1 for s in states.values())
            total = len(states) * self.iterations
            self._emit("start", total=total, done=resumed,
                       passed=sum(r.passed for st in states.values() for r in st.records))
            if resumed:
                self._emit("resumed", groups=resumed)
            evaluated = self._loop(store, states)
            result = self.report(store)
            self._emit("finish", candidates=len(store), evaluated=evaluated)
            held = {"/".join(map(str, cell)): st.held for cell, st in states.items() if st.held}
            return ExploreResult(run_dir=self.run_dir, summary=result[0], paths=result[1],
                                 candidates=len(store), evaluated=evaluated, resumed=resumed,
                                 empty_groups=_empty_groups(store), held=held)
        finally:
            store.close()

    def _loop(self, store: ExploreStore, states: dict[Cell, _CellState]) -> int:
        """Producer (generation) thread + evaluation threads until every cell is done."""
        ready: deque[Cell] = deque(c for c, s in states.items()
                                   if s.next_iteration <= self.iterations)
        remaining = len(ready)
        if not remaining:
            return 0
        cond = threading.Condition()
        inflight = [0]
        errors: list[BaseException] = []
        evaluated = [0]
        own = self._executor is None
        pool: Executor = self._executor or ThreadExecutor(self.workers)
        cap = self.max_inflight or max(2, getattr(pool, "workers", 4))
        groups = ThreadPoolExecutor(max_workers=cap, thread_name_prefix="rtlforge-explore")

        def finished(cell: Cell, exc: BaseException | None) -> None:
            nonlocal remaining
            with cond:
                inflight[0] -= 1
                if exc is not None:
                    errors.append(exc)
                elif states[cell].next_iteration <= self.iterations and not states[cell].held:
                    ready.append(cell)
                else:
                    remaining -= 1
                cond.notify_all()

        def evaluate(cell: Cell, iteration: int, gens: list[Generation]) -> None:
            try:
                self._evaluate_group(store, pool, cell, iteration, states[cell], gens)
                evaluated[0] += states[cell].held is None  # a held group was not stored
            except BaseException as exc:  # noqa: BLE001 - handed to the main thread
                finished(cell, exc)
                return
            finished(cell, None)

        def produce() -> None:
            while True:
                with cond:
                    while not errors and remaining and (not ready or inflight[0] >= cap):
                        cond.wait()
                    if errors or not remaining:
                        return
                    first = ready.popleft()
                    batch = [first]
                    limit = min(self.batch_size or len(ready) + 1, cap - inflight[0])
                    for cell in list(ready):
                        if len(batch) >= limit:
                            break
                        if cell[0] == first[0]:
                            ready.remove(cell)
                            batch.append(cell)
                    inflight[0] += len(batch)
                try:
                    jobs = self._generate(store, batch, states)
                except BaseException as exc:  # noqa: BLE001 - handed to the main thread
                    with cond:
                        inflight[0] -= len(batch)
                        errors.append(exc)
                        cond.notify_all()
                    return
                for cell, iteration, gens in jobs:
                    groups.submit(evaluate, cell, iteration, gens)

        producer = threading.Thread(target=produce, name="rtlforge-explore-gen", daemon=True)
        producer.start()
        try:
            with cond:
                while remaining and not errors:
                    cond.wait()
        finally:
            with cond:
                cond.notify_all()
            producer.join()
            groups.shutdown(wait=True, cancel_futures=True)
            if own:
                pool.close()
        if errors:
            raise errors[0]
        return evaluated[0]

    def _generate(self, store: ExploreStore, batch: Sequence[Cell],
                  states: Mapping[Cell, _CellState]) -> list[tuple[Cell, int, list[Generation]]]:
        """Sample one group per cell (one ``generate`` call), reusing stored generations."""
        method = self.methods[batch[0][0]]
        out: list[tuple[Cell, int, list[Generation]] | None] = []
        todo: list[tuple[int, Cell, GenerationRequest]] = []
        for cell in batch:
            iteration = states[cell].next_iteration
            stored = store.generations(group_key(*cell, iteration))
            if stored is not None:
                out.append((cell, iteration, stored))
            else:
                out.append(None)
                todo.append((len(out) - 1, cell, self._request(cell, states[cell])))
        if todo:
            for _, cell, _ in todo:
                self._emit("generate_start", cell, states[cell].next_iteration)
            asked = [r for _, _, r in todo]
            answers = with_candidates(method.generator.generate(asked, method.sampling), asked)
            if len(answers) != len(todo):
                raise RuntimeError(f"generator {method.generator.name!r} returned "
                                   f"{len(answers)} lists for {len(todo)} requests")
            for (pos, cell, request), gens in zip(todo, answers, strict=True):
                iteration = states[cell].next_iteration
                gens = list(gens)[: method.sampling.n]
                store.put_generations(group_key(*cell, iteration), request, gens)
                self._emit("generate_end", cell, iteration, samples=len(gens))
                out[pos] = (cell, iteration, gens)
        return [o for o in out if o is not None]

    # ---------------------------------------------------------------- report

    def check_run_dir(self) -> None:
        """Raise :class:`RunSettingsMismatch` now if :meth:`run` would refuse the run directory
        (so a caller can report it before drawing progress or building anything else)."""
        if self.on_existing == "overwrite" or not self.archive_path.exists():
            return
        with self.open_store() as store:
            self._check_reuse(store)

    def _check_reuse(self, store: ExploreStore, *, prompts_only: bool = False) -> dict[str, Any]:
        """The config to store, once the stored settings allow this run to reuse the results.

        ``prompts_only`` (a dry run, which builds no estimator or pipeline) compares only what
        the prompts depend on."""
        config = self.config()
        stored = store.config()
        if store.is_empty():
            return config
        diffs = differences((stored or {}).get("settings"), config["settings"])
        if prompts_only:
            diffs = [d for d in diffs if not d[0].startswith(("estimator", "pipeline", "ast"))]
        if not diffs:
            config["extended"] = (stored or {}).get("extended", [])
            return config
        grown = [d for d in diffs if d[0] in _EXTENSIBLE and isinstance(d[1], int)
                 and isinstance(d[2], int) and d[2] > d[1]]
        others = [d for d in diffs if d not in grown]
        hint = ("Start over with --overwrite (Explorer(on_existing='overwrite')), or use "
                "another --run-dir.")
        if not others and self.on_existing != "extend":
            hint = ("To add iterations or trials to this run, pass --extend "
                    "(Explorer(on_existing='extend')); to start over, --overwrite.")
        if others or self.on_existing != "extend":
            raise RunSettingsMismatch(str(self.run_dir), diffs, hint)
        if any(key == "iterations" for key, _, _ in grown):
            counted = sorted(n for n, m in self.methods.items()
                             if "iterations" in template_fields(m.prompt_template))
            if counted:
                raise RunSettingsMismatch(str(self.run_dir), grown, (
                    f"cannot extend the iterations: the template of {', '.join(counted)} "
                    "shows the iteration count ({iterations}), so the earlier prompts said "
                    "another total; start over with --overwrite."))
        config["extended"] = [*(stored or {}).get("extended", []),
                              {key: {"from": old, "to": new} for key, old, new in grown}]
        log.info("explore_extend", run_dir=str(self.run_dir),
                 **{key: f"{old}->{new}" for key, old, new in grown})
        return config

    def settings(self) -> dict[str, Any]:
        """The result-defining settings (see :mod:`rtlforge.explore.settings`): stored with the
        run and compared when the run directory is reused."""
        def task_digest(task: Task) -> str:
            blob = json.dumps([task.digest(), task.spec, [f.digest() for f in task.golden]])
            return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()[:16]

        est = self.estimator
        estimator: Any = None
        if est is not None:
            estimator = est.cache_key()
        pipe = self.pipeline
        return {
            "version": SETTINGS_VERSION,
            "methods": {n: {
                "generator": getattr(m.generator, "name", type(m.generator).__name__),
                "generator_options": redact(m.generator_options),
                "template": m.prompt_template.name,
                "template_digest": template_digest(m.prompt_template),
                "history": m.history, "history_limit": m.history_limit,
                "sampling": m.sampling.model_dump(mode="json"),
                "select": list(m.select), "metadata": dict(m.metadata)}
                for n, m in self.methods.items()},
            "tasks": {t: task_digest(self.tasks[t]) for t in sorted(self.tasks)},
            "iterations": self.iterations, "trials": self.trials,
            "estimator": estimator,
            "pipeline": {"validators": [v.cache_key() for v in pipe.validators],
                         "timeout": pipe.timeout, "options": pipe.options},
            "ast": (getattr(self.ast_reward, "name", type(self.ast_reward).__name__)
                    if self.ast_reward is not None else None),
            "hv_backend": self.hv_backend,
            "preset": self.preset.name if self.preset else None,
        }

    def config(self) -> dict[str, Any]:
        return {
            "settings": self.settings(),
            "methods": {n: {"generator": getattr(m.generator, "name", type(m.generator).__name__),
                            "template": m.prompt_template.name, "history": m.history,
                            "history_limit": m.history_limit,
                            "sampling": m.sampling.model_dump(mode="json")}
                        for n, m in self.methods.items()},
            "tasks": sorted(self.tasks), "iterations": self.iterations, "trials": self.trials,
            "estimator": getattr(self.estimator, "name", None),
            "protocol": self.protocol(),
        }

    def protocol(self) -> dict[str, Any]:
        """The protocol this run follows and how it departs from the paper's (or the preset's)."""
        return protocol_record(
            trials=self.trials, iterations=self.iterations, checkpoints=self.checkpoints,
            methods={n: m.protocol() for n, m in self.methods.items()},
            preset_name=self.preset.name if self.preset else None,
            reference=self.preset or PAPER)

    def report(self, store: ExploreStore | None = None) -> tuple[dict[str, Any], dict[str, Path]]:
        """Write summary.json, records.jsonl, report.html and candidates.jsonl into run_dir."""
        own = store is None
        store = store or self.open_store()
        try:
            records = store.records()
            golden = {t: g for t in sorted({r.task for r in records})
                      if (g := self._known_golden(t) or store.golden(t)) is not None}
        finally:
            if own:
                store.close()
        return write_explore_report(self.run_dir, records, golden, config=self.config(),
                                    checkpoints=self.checkpoints, baseline=self.baseline,
                                    title=self.title)
