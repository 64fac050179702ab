"""Sequential Pareto exploration: generate → validate → measure → condition on history, resumably.

For every method, task and trial, iteration ``i`` builds a prompt from the spec and the circuits
of iterations ``< i`` (with their PPA), samples a group of candidates, validates them, measures
the PPA of those that pass and scores each by its hypervolume contribution (HVC) over the
trial's history; the group is then appended to the history and iteration ``i + 1`` follows
("Pareto-Optimal RTL Code Generation via Multi-Objective RL"). Several methods (generator +
template + settings) run side by side, and the report's reference front is their union.

Everything lands in one SQLite archive in the run directory, as idempotent keyed rows:

- ``explore_generations``: one row per (method, task, trial, iteration) group, written as soon
  as the generator returns, so a restart never samples (or pays for) the same group twice;
- ``entries`` (the :class:`~rtlforge.plugins.archives.pareto.SQLiteArchive` table): one row per
  candidate, written together with its ``explore_groups`` key row in a single transaction
  after the whole group has been evaluated.

A run killed at any point (SIGKILL included) restarts where it stopped: committed groups are
skipped and the histories rebuilt from the archive; a group that was generated but not yet
committed is evaluated from its stored generations. No key is ever written twice.

Generation and evaluation overlap: one producer thread samples batches of whatever cells
(method, task, trial) are ready, while evaluation of earlier groups runs on worker threads
(candidates of a group spread over the executor's workers). Only the CLI draws progress; the
library reports through :class:`ExploreEvent` callbacks.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from rtlforge.core.errors import ExtractionError
from rtlforge.core.executor import Executor, ThreadExecutor
from rtlforge.core.interfaces import (
    ArchiveEntry,
    Generation,
    GenerationRequest,
    Generator,
    PPAEstimator,
    SamplingParams,
)
from rtlforge.core.log import get_logger
from rtlforge.core.models import Candidate, Task, ValidationReport, Verdict
from rtlforge.evaluation.evaluate import (
    DetailedEval,
    EvalResult,
    PPAMeasure,
    SampleDetail,
    SampleResult,
    TaskScore,
    candidate_from_completion,
    extraction_failure_report,
    measure_ppa,
)
from rtlforge.evaluation.passk import mean_pass_at_k
from rtlforge.generation.prompts import HistoryEntry, PromptTemplate, load_template
from rtlforge.pareto.hypervolume import Backend, hvc_group, non_dominated, objective_vector
from rtlforge.validate.pipeline import Pipeline

__all__ = [
    "ExploreEvent",
    "ExploreResult",
    "Explorer",
    "HistoryPolicy",
    "Method",
    "format_request_id",
    "parse_request_id",
]

log = get_logger("rtlforge.explore")

HistoryPolicy = Literal["passing-only", "all", "front"]
HISTORY_POLICIES: tuple[str, ...] = ("passing-only", "all", "front")
_MESSAGE_CHARS = 300
Cell = tuple[str, str, int]  # (method, task, trial)


# --------------------------------------------------------------------------------------------
# public types
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Method:
    """One way of generating: a generator, a prompt template and its settings.

    ``history`` decides which earlier circuits the prompt shows: ``"passing-only"`` (default:
    circuits that passed validation, with their PPA), ``"all"`` (also failing ones, with their
    verdict and first feedback message: more signal, longer prompts) or ``"front"`` (only the
    trial's current Pareto front). ``history_limit`` keeps the most recent entries (None: all).
    HVC is always scored against every passing circuit of the trial, whatever the policy.
    ``select`` names labels (``method``, ``trial``, ``iteration``, 1-based) each request carries
    in its ``metadata``: a replaying generator uses them to pick the recording of exactly that
    method, trial and iteration. ``metadata`` is added to every request as is.
    """

    name: str
    generator: Generator
    template: str | Path | PromptTemplate = "pareto"
    sampling: SamplingParams = field(default_factory=SamplingParams)
    history: HistoryPolicy = "passing-only"
    history_limit: int | None = 8
    select: tuple[str, ...] = ()
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        bad = sorted(set(self.select) - {"method", "trial", "iteration"})
        if bad:
            raise ValueError(f"select takes method, trial and iteration, not {bad}")
        if not self.name or "/" in self.name:
            raise ValueError(f"method name {self.name!r} must be non-empty without '/'")
        if self.history not in HISTORY_POLICIES:
            raise ValueError(f"history policy must be one of {HISTORY_POLICIES}, "
                             f"not {self.history!r}")
        if self.history_limit is not None and self.history_limit < 1:
            raise ValueError("history_limit must be >= 1 or None")
        object.__setattr__(self, "template", load_template(self.template))

    @property
    def prompt_template(self) -> PromptTemplate:
        assert isinstance(self.template, PromptTemplate)
        return self.template


@dataclass(frozen=True)
class ExploreEvent:
    """Progress report. ``kind``: start, resumed, generate_start, generate_end,
    evaluate_start, evaluate_end, finish. ``time`` is ``time.monotonic()``."""

    kind: str
    method: str | None = None
    task: str | None = None
    trial: int | None = None
    iteration: int | None = None
    data: dict[str, Any] = field(default_factory=dict)
    time: float = field(default_factory=time.monotonic)


@dataclass(frozen=True)
class ExploreResult:
    run_dir: Path
    summary: dict[str, Any]
    paths: dict[str, Path]
    candidates: int  # in the archive, after this run
    evaluated: int  # groups evaluated by this run (not resumed)
    resumed: int  # groups found complete in the archive


def format_request_id(method: str, task: str, trial: int, iteration: int) -> str:
    """``explore/<method>/<task>/t<trial>/i<iteration>``: lets a replay generator find its
    recorded sample (task ids may contain ``/``; :func:`parse_request_id` splits safely)."""
    return f"explore/{method}/{task}/t{trial}/i{iteration}"


def parse_request_id(request_id: str | None) -> tuple[str, str, int, int] | None:
    """``(method, task, trial, iteration)`` of an explore request id, None for any other id."""
    if not request_id or not request_id.startswith("explore/"):
        return None
    head, _, rest = request_id[len("explore/"):].partition("/")
    parts = rest.rsplit("/", 2)
    if not head or len(parts) != 3 or not parts[1][1:].isdigit() or not parts[2][1:].isdigit():
        return None
    if parts[1][0] != "t" or parts[2][0] != "i":
        return None
    return head, parts[0], int(parts[1][1:]), int(parts[2][1:])


# --------------------------------------------------------------------------------------------
# the store
# --------------------------------------------------------------------------------------------

_SCHEMA = """
CREATE TABLE IF NOT EXISTS explore_groups (
    group_key TEXT PRIMARY KEY, method TEXT NOT NULL, task_id TEXT NOT NULL,
    trial INTEGER NOT NULL, iteration INTEGER NOT NULL, samples INTEGER NOT NULL,
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS explore_generations (
    group_key TEXT PRIMARY KEY, request TEXT NOT NULL, generations TEXT NOT NULL,
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS explore_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


def _group_key(method: str, task: str, trial: int, iteration: int) -> str:
    return json.dumps([method, task, trial, iteration])


class ExploreStore:
    """The run's SQLite file: the candidate archive plus generation and group bookkeeping.

    Shares its file (and ``entries`` table) with :class:`SQLiteArchive`, so ``front()`` and
    ``rtlforge``'s archive tooling read an explore run like any other archive.
    """

    def __init__(self, path: str | Path) -> None:
        from rtlforge.plugins.archives.pareto import SQLiteArchive

        self.path = Path(path)
        self.archive = SQLiteArchive(self.path)  # creates the entries table
        self._conn = sqlite3.connect(self.path, timeout=60.0, isolation_level=None,
                                     check_same_thread=False)
        self._lock = threading.Lock()
        with self._lock:
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=FULL")
            self._conn.executescript(_SCHEMA)

    def close(self) -> None:
        with self._lock:
            self._conn.close()
        self.archive.close()

    def _write(self, statements: Iterable[tuple[str, Sequence[Any]]]) -> bool:
        """One transaction; False (nothing written) when a key row already exists."""
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                for sql, args in statements:
                    self._conn.execute(sql, args)
            except sqlite3.IntegrityError:
                self._conn.execute("ROLLBACK")
                return False
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")
        return True

    def _query(self, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            return self._conn.execute(sql, args).fetchall()

    # ---------------------------------------------------------------- meta

    def get_meta(self, key: str) -> Any:
        rows = self._query("SELECT value FROM explore_meta WHERE key = ?", (key,))
        return json.loads(rows[0][0]) if rows else None

    def set_meta(self, key: str, value: Any) -> None:
        self._write([("INSERT OR REPLACE INTO explore_meta (key, value) VALUES (?, ?)",
                      (key, json.dumps(value)))])

    # ---------------------------------------------------------------- generations

    def generations(self, key: str) -> list[Generation] | None:
        rows = self._query("SELECT generations FROM explore_generations WHERE group_key = ?",
                           (key,))
        if not rows:
            return None
        return [Generation.model_validate(g) for g in json.loads(rows[0][0])]

    def put_generations(self, key: str, request: GenerationRequest,
                        generations: Sequence[Generation]) -> None:
        blob = json.dumps([g.model_dump(mode="json") for g in generations])
        req = request.model_dump_json(exclude={"task"})
        self._write([("INSERT OR IGNORE INTO explore_generations (group_key, request, "
                      "generations, created) VALUES (?, ?, ?, ?)",
                      (key, req, blob, time.time()))])

    # ---------------------------------------------------------------- groups

    def commit_group(self, method: str, task: str, trial: int, iteration: int,
                     entries: Sequence[ArchiveEntry]) -> bool:
        """The group's key row and all its candidates, atomically; False if already there."""
        key = _group_key(method, task, trial, iteration)
        statements: list[tuple[str, Sequence[Any]]] = [(
            "INSERT INTO explore_groups (group_key, method, task_id, trial, iteration, samples, "
            "created) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (key, method, task, trial, iteration, len(entries), time.time()))]
        statements += [("INSERT INTO entries (task_id, entry) VALUES (?, ?)",
                        (e.task_id, e.model_dump_json())) for e in entries]
        return self._write(statements)

    def completed_groups(self) -> set[tuple[str, str, int, int]]:
        rows = self._query("SELECT method, task_id, trial, iteration FROM explore_groups")
        return {(m, t, int(tr), int(it)) for m, t, tr, it in rows}

    def records(self) -> list[dict[str, Any]]:
        """Every explore candidate record, in commit order."""
        return [e.record for e in self.archive.entries() if e.record.get("explore")]

    def __len__(self) -> int:
        return len(self.archive)


# --------------------------------------------------------------------------------------------
# the explorer
# --------------------------------------------------------------------------------------------


@dataclass
class _CellState:
    """What one (method, task, trial) has produced so far, and what it does next."""

    records: list[dict[str, Any]] = field(default_factory=list)
    next_iteration: int = 1


class Explorer:
    """Runs every method on every task for ``trials`` independent trials of ``iterations``.

    ``tasks``: Task objects or a suite directory. ``estimator``: a PPAEstimator, a plugin name
    (default ``"yosys-sta"``) or None (no PPA: verdicts only, no HVC or rHV). ``ast_reward``:
    anything with ``score_detailed`` (e.g. the ``ast-similarity`` reward) or None.
    ``batch_size`` caps the requests per ``generate`` call (None: every ready cell of a
    method); ``max_inflight`` caps groups generated but not yet evaluated (backpressure).
    ``on_event`` is called with :class:`ExploreEvent` objects, one at a time (serialised).
    """

    def __init__(
        self,
        tasks: Sequence[Task] | Mapping[str, Task] | str | Path,
        methods: Sequence[Method],
        *,
        iterations: int = 10,
        trials: int = 1,
        run_dir: str | Path = "runs/explore",
        pipeline: Pipeline | None = None,
        estimator: PPAEstimator | str | None = "yosys-sta",
        ast_reward: Any = None,
        executor: Executor | None = None,
        workers: int | None = None,
        batch_size: int | None = None,
        max_inflight: int | None = None,
        checkpoints: Sequence[int] = (1, 5, 10),
        baseline: str | None = None,
        on_event: Callable[[ExploreEvent], None] | None = None,
        hv_backend: Backend = "moocore",
        title: str = "rtlforge explore report",
    ) -> None:
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
        if iterations < 1 or trials < 1:
            raise ValueError("iterations and trials must be >= 1")
        if baseline is not None and baseline not in names:
            raise ValueError(f"baseline {baseline!r} is not one of the methods {names}")
        self.methods = {m.name: m for m in methods}
        self.iterations, self.trials = iterations, trials
        self.run_dir = Path(run_dir)
        self._pipeline = pipeline
        if isinstance(estimator, str):
            from rtlforge.core.plugins import PluginHost

            estimator = PluginHost().create("ppa_estimator", estimator)
        self.estimator = estimator
        self.ast_reward = ast_reward
        self._executor = executor
        self.workers = workers
        self.batch_size = batch_size
        self.max_inflight = max_inflight
        self.checkpoints = tuple(sorted({c for c in checkpoints if c >= 1}))
        self.baseline = baseline
        self.hv_backend = hv_backend
        self.title = title
        self._on_event = on_event
        self._event_lock = threading.Lock()
        self._golden: dict[str, PPAMeasure | None] = {}
        self._golden_locks: dict[str, threading.Lock] = {t: threading.Lock() for t in self.tasks}

    # ---------------------------------------------------------------- helpers

    @property
    def pipeline(self) -> Pipeline:
        if self._pipeline is None:
            self._pipeline = Pipeline.build()
        return self._pipeline

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
        by_group: dict[tuple[str, str, int, int], list[dict[str, Any]]] = {}
        for rec in store.records():
            by_group.setdefault((rec["method"], rec["task"], rec["trial"], rec["iteration"]),
                                []).append(rec)
        states: dict[Cell, _CellState] = {}
        for cell in self._cells():
            state = _CellState()
            while state.next_iteration <= self.iterations and \
                    (*cell, state.next_iteration) in done:
                group = by_group.get((*cell, state.next_iteration), [])
                state.records += sorted(group, key=lambda r: r["sample"])
                state.next_iteration += 1
            states[cell] = state
        return states

    def _history(self, method: Method, records: Sequence[dict[str, Any]]) -> list[HistoryEntry]:
        """The earlier circuits a prompt shows, by the method's policy."""
        if method.history == "all":
            chosen = [r for r in records if r.get("source")]
        elif method.history == "front":
            scored = [r for r in records if r.get("objectives")]
            mask = (non_dominated(np.array([r["objectives"] for r in scored]))
                    if scored else [])
            chosen = [r for r, keep in zip(scored, mask, strict=True) if keep]
        else:
            chosen = [r for r in records if r["verdict"] == Verdict.PASS.value and r.get("source")]
        if method.history_limit is not None:
            chosen = chosen[-method.history_limit:]
        out = []
        for r in chosen:
            ppa = r.get("ppa") or {}
            message = r.get("message")
            if r["verdict"] == Verdict.PASS.value and ppa.get("error"):
                message = f"PPA not measured ({ppa['error']})"
            out.append(HistoryEntry(
                source=r["source"], iteration=r["iteration"], power=ppa.get("power"),
                delay=ppa.get("delay"), area=ppa.get("area"), cells=ppa.get("cells"),
                verdict=r["verdict"],
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

    def dry_run(self, limit: int | None = None) -> list[GenerationRequest]:
        """The next prompts a run would send (iteration 1 in a fresh run directory)."""
        states = self._load_state(ExploreStore(self.archive_path)) \
            if self.archive_path.exists() else {c: _CellState() for c in self._cells()}
        out = [self._request(cell, st) for cell, st in states.items()
               if st.next_iteration <= self.iterations]
        return out[:limit] if limit is not None else out

    # ---------------------------------------------------------------- golden PPA

    def _golden_ppa(self, store: ExploreStore, task_id: str) -> PPAMeasure | None:
        """Measured once per task and remembered in the archive (a restart reuses it)."""
        if self.estimator is None:
            return None
        with self._golden_locks[task_id]:
            if task_id in self._golden:
                return self._golden[task_id]
            stored = store.get_meta(f"golden/{task_id}")
            task = self.tasks[task_id]
            if stored is not None:
                gold: PPAMeasure | None = PPAMeasure.model_validate(stored)
            elif task.golden:
                gold = measure_ppa(self.estimator, Candidate(files=task.golden, task_id=task_id),
                                task.top, self.pipeline.runner)
                store.set_meta(f"golden/{task_id}", gold.model_dump())
            else:
                gold = None
            self._golden[task_id] = gold
            return gold

    # ---------------------------------------------------------------- evaluation

    def _evaluate_sample(self, task: Task, index: int, gen: Generation) -> dict[str, Any]:
        """Extract, validate, measure (passing only) and AST-score one generation."""
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
        source = "\n".join(f.content for f in candidate.files) if candidate else None
        return {"candidate": candidate, "report": report, "ppa": ppa, "ast": ast,
                "source": source}

    def _evaluate_group(self, store: ExploreStore, pool: Executor, cell: Cell, iteration: int,
                        state: _CellState, gens: Sequence[Generation]) -> None:
        method, task_id, trial = cell
        task = self.tasks[task_id]
        self._emit("evaluate_start", cell, iteration, samples=len(gens))
        gold = self._golden_ppa(store, task_id) if gens else None
        results = list(pool.map(lambda ig: self._evaluate_sample(task, *ig), list(enumerate(gens))))
        vectors = []
        for res in results:
            ppa: PPAMeasure | None = res["ppa"]
            vec = None
            if ppa is not None and ppa.ok and gold is not None and gold.ok:
                vec = objective_vector(ppa.triple(), gold.triple())
            vectors.append(tuple(float(x) for x in vec) if vec is not None else None)
        past = [r["objectives"] for r in state.records if r.get("objectives")]
        hvcs = hvc_group(past, vectors, backend=self.hv_backend)
        entries = []
        for sample, (gen, res, vec, score) in enumerate(
                zip(gens, results, vectors, hvcs, strict=True)):
            report: ValidationReport = res["report"]
            ppa = res["ppa"]
            ast = res["ast"]
            record = {
                "explore": 1,
                "key": json.dumps([method, task_id, trial, iteration, sample]),
                "method": method, "task": task_id, "trial": trial, "iteration": iteration,
                "sample": sample, "verdict": report.verdict.value,
                "source": res["source"], "completion": gen.text, "generator": gen.generator,
                "message": next((fb.message for fb in report.feedback), None)
                if not report.passed else None,
                "feedback": [f.model_dump(mode="json") for f in report.feedback],
                "report": report.model_dump(mode="json"),
                "ppa": ppa.model_dump() if ppa is not None else None,
                "golden": gold.triple() if gold is not None and gold.ok else None,
                "objectives": list(vec) if vec is not None else None,
                "hvc": float(score) if vec is not None else None,
                "ast_similarity": getattr(ast, "similarity", None),
                "ast_status": getattr(ast, "status", None),
                "ast_backend": getattr(ast, "backend", None),
                "latency_s": gen.latency_s, "finish_reason": gen.finish_reason,
            }
            candidate = res["candidate"] or Candidate.from_source(
                gen.text or "(empty)", name="completion.txt", task_id=task_id)
            entries.append(ArchiveEntry(task_id=task_id, candidate=candidate,
                                        objectives=vec, verdict=report.verdict.value,
                                        record=record))
        if not store.commit_group(method, task_id, trial, iteration, entries):
            log.warning("explore_group_already_committed", method=method, task=task_id,
                        trial=trial, iteration=iteration)
        state.records += [e.record for e in entries]
        state.next_iteration = iteration + 1
        passed = sum(e.verdict == Verdict.PASS.value for e in entries)
        self._emit("evaluate_end", cell, iteration, samples=len(entries), passed=passed,
                   hvc=[e.record["hvc"] for e in entries])

    # ---------------------------------------------------------------- the run

    def run(self) -> ExploreResult:
        """Run (or resume) every cell to ``iterations``, then write the report."""
        self.run_dir.mkdir(parents=True, exist_ok=True)
        store = ExploreStore(self.archive_path)
        try:
            store.set_meta("config", self.config())
            states = self._load_state(store)
            resumed = sum(s.next_iteration - 1 for s in states.values())
            total = len(states) * self.iterations
            self._emit("start", total=total, done=resumed)
            if resumed:
                self._emit("resumed", groups=resumed)
            evaluated = self._loop(store, states)
            result = self.report(store)
            self._emit("finish", candidates=len(store), evaluated=evaluated)
            return ExploreResult(run_dir=self.run_dir, summary=result[0], paths=result[1],
                                 candidates=len(store), evaluated=evaluated, resumed=resumed)
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
                elif states[cell].next_iteration <= self.iterations:
                    ready.append(cell)
                else:
                    remaining -= 1
                cond.notify_all()

        def evaluate(cell: Cell, iteration: int, gens: list[Generation]) -> None:
            try:
                self._evaluate_group(store, pool, cell, iteration, states[cell], gens)
                evaluated[0] += 1
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
            stored = store.generations(_group_key(*cell, iteration))
            if stored is not None:
                out.append((cell, iteration, stored))
            else:
                out.append(None)
                todo.append((len(out) - 1, cell, self._request(cell, states[cell])))
        if todo:
            for _, cell, _ in todo:
                self._emit("generate_start", cell, states[cell].next_iteration)
            answers = method.generator.generate([r for _, _, r in todo], method.sampling)
            if len(answers) != len(todo):
                raise RuntimeError(f"generator {method.generator.name!r} returned "
                                   f"{len(answers)} lists for {len(todo)} requests")
            for (pos, cell, request), gens in zip(todo, answers, strict=True):
                iteration = states[cell].next_iteration
                gens = list(gens)[: method.sampling.n]
                store.put_generations(_group_key(*cell, iteration), request, gens)
                self._emit("generate_end", cell, iteration, samples=len(gens))
                out[pos] = (cell, iteration, gens)
        return [o for o in out if o is not None]

    # ---------------------------------------------------------------- report

    def config(self) -> dict[str, Any]:
        return {
            "methods": {n: {"generator": getattr(m.generator, "name", type(m.generator).__name__),
                            "template": m.prompt_template.name, "history": m.history,
                            "history_limit": m.history_limit,
                            "sampling": m.sampling.model_dump(mode="json")}
                        for n, m in self.methods.items()},
            "tasks": sorted(self.tasks), "iterations": self.iterations, "trials": self.trials,
            "estimator": getattr(self.estimator, "name", None),
        }

    def report(self, store: ExploreStore | None = None) -> tuple[dict[str, Any], dict[str, Path]]:
        """Write summary.json, records.jsonl, report.html and candidates.jsonl into run_dir."""
        own = store is None
        store = store or ExploreStore(self.archive_path)
        try:
            records = store.records()
            golden = {t: g for t in sorted({r["task"] for r in records})
                      if (g := self._golden.get(t) or self._stored_golden(store, t)) is not None}
        finally:
            if own:
                store.close()
        return write_explore_report(self.run_dir, records, golden, config=self.config(),
                                    checkpoints=self.checkpoints, baseline=self.baseline,
                                    title=self.title)

    @staticmethod
    def _stored_golden(store: ExploreStore, task_id: str) -> PPAMeasure | None:
        stored = store.get_meta(f"golden/{task_id}")
        return PPAMeasure.model_validate(stored) if stored is not None else None


# --------------------------------------------------------------------------------------------
# report
# --------------------------------------------------------------------------------------------


def detailed_from_records(records: Sequence[Mapping[str, Any]],
                          golden: Mapping[str, PPAMeasure], *,
                          ks: Sequence[int] = (1, 5, 10)) -> DetailedEval:
    """The :class:`DetailedEval` the eval report is drawn from, rebuilt from archive records."""
    ordered = sorted(records, key=lambda r: (r["method"], r["task"], r["trial"],
                                             r["iteration"], r["sample"]))
    samples, details = [], []
    per_task: dict[str, Counter[str]] = {}
    for index, r in enumerate(ordered):
        report = ValidationReport.model_validate(r["report"])
        samples.append(SampleResult(index=index, task_id=r["task"], report=report))
        per_task.setdefault(r["task"], Counter())[r["verdict"]] += 1
        details.append(SampleDetail(
            index=index, task_id=r["task"], method=r["method"], trial=r["trial"],
            iteration=r["iteration"], verdict=r["verdict"],
            source=f"sample {r['sample']}", message=r.get("message"),
            ppa=PPAMeasure.model_validate(r["ppa"]) if r.get("ppa") else None,
            objectives=tuple(r["objectives"]) if r.get("objectives") else None,
            hvc=r.get("hvc"), ast_similarity=r.get("ast_similarity"),
            ast_status=r.get("ast_status"), ast_backend=r.get("ast_backend")))
    scores = {tid: TaskScore(n=sum(v for k, v in c.items() if k != Verdict.INFRA_ERROR.value),
                             correct=c[Verdict.PASS.value], verdicts=dict(c))
              for tid, c in per_task.items()}
    totals: Counter[str] = Counter()
    for c in per_task.values():
        totals.update(c)
    result = EvalResult(
        samples=tuple(samples), tasks=scores, verdicts=dict(totals),
        pass_at_k=mean_pass_at_k({t: (s.n, s.correct) for t, s in scores.items() if s.n}, ks))
    return DetailedEval(result=result, details=tuple(details), golden=dict(golden), ks=tuple(ks))


def _progress(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Per method and iteration: samples, passes, mean HVC (how the search moves over time)."""
    out: dict[str, dict[int, dict[str, Any]]] = {}
    for r in records:
        cell = out.setdefault(r["method"], {}).setdefault(
            r["iteration"], {"samples": 0, "passed": 0, "hvc": []})
        cell["samples"] += 1
        cell["passed"] += r["verdict"] == Verdict.PASS.value
        if r.get("hvc") is not None:
            cell["hvc"].append(r["hvc"])
    return {m: {it: {"samples": c["samples"], "passed": c["passed"],
                     "mean_hvc": float(np.mean(c["hvc"])) if c["hvc"] else None}
                for it, c in sorted(its.items())} for m, its in out.items()}


def write_explore_report(run_dir: str | Path, records: Sequence[Mapping[str, Any]],
                         golden: Mapping[str, PPAMeasure], *, config: Mapping[str, Any],
                         checkpoints: Sequence[int] = (1, 5, 10), baseline: str | None = None,
                         title: str = "rtlforge explore report", seed: int | None = 0,
                         ) -> tuple[dict[str, Any], dict[str, Path]]:
    """summary.json + records.jsonl + report.html (the eval report) and candidates.jsonl."""
    from rtlforge.evaluation.metrics import Record, compute_metrics, metrics_json
    from rtlforge.evaluation.report import summarise, write_report

    run_dir = Path(run_dir)
    detailed = detailed_from_records(records, golden)
    summary = summarise(detailed, extra={"run": {
        "methods": [f"{n} ({c['generator']}, {c['template']}, history {c['history']})"
                    for n, c in config.get("methods", {}).items()],
        "iterations": config.get("iterations"), "trials": config.get("trials"),
        "estimator": config.get("estimator"), "run_dir": str(run_dir)}})
    metric_records = [Record.model_validate(r) for r in detailed.records()]
    if any(r.objectives() is not None for r in metric_records):
        metrics = json.loads(metrics_json(compute_metrics(metric_records, baseline=baseline,
                                                          seed=seed)))
        summary["metrics"] = metrics
        iters = set(metrics["iterations"])
        summary["checkpoints"] = {
            m: {f"rhv@{c}": v["rhv"][str(c)] for c in checkpoints if c in iters}
            for m, v in metrics["methods"].items()}
    summary["progress"] = json.loads(json.dumps(_progress(records)))
    summary["explore"] = {"config": dict(config), "candidates": len(records)}
    paths = write_report(run_dir, detailed, summary, title=title)
    cand_path = run_dir / "candidates.jsonl"
    keep = ("method", "task", "trial", "iteration", "sample", "verdict", "source", "message",
            "feedback", "ppa", "golden", "objectives", "hvc", "ast_similarity", "ast_status",
            "generator", "latency_s")
    with cand_path.open("w") as fh:
        for r in sorted(records, key=lambda r: (r["method"], r["task"], r["trial"],
                                                r["iteration"], r["sample"])):
            fh.write(json.dumps({k: r.get(k) for k in keep}, allow_nan=False) + "\n")
    paths["candidates.jsonl"] = cand_path
    return summary, paths
