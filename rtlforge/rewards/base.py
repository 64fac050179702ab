"""Shared machinery of the RTL rewards: batch validation, task checks, PPA, policies.

A reward runs inside an RL loop, so one call scores a whole batch: every completion is extracted
and validated in one ``Pipeline.validate_many`` (parallel, cached, bounded by the pipeline's
timeouts), each task is self-checked once (its golden must pass; an all-zero drop-in must not),
and PPA is measured only for candidates that passed, in parallel, with the golden's PPA measured
once per task. Anything that says nothing about the design (a missing tool, a sandbox failure)
makes the reward abstain with ``None``: a zero would teach the policy that its design was wrong.

Per-sample columns (keyword arguments of :meth:`RTLReward.score`, one value per completion):

- ``task_id`` (required): the id of the task the completion answers.
- ``history`` (optional): the circuits already found for this prompt, a list whose entries are
  either *raw PPA* mappings ``{"power": mW, "delay": ns, "area": um2}`` (``power_mw``/``delay_ns``/
  ``area_um2`` keys and :class:`PPAResult` objects are accepted too) or *objective vectors*: plain
  3-sequences ``(P_g/P, D_g/D, A_g/A)`` already normalised by the golden (what
  :func:`~rtlforge.pareto.hypervolume.objective_vector` returns).
  A mapping may also carry ``"code"`` (the circuit's source), used for duplicate detection,
  or ``"objectives"`` (``"ratio"`` in datasets: a vector). A JSON string of such a list is
  accepted, as datasets often store nested columns that way. Each entry is parsed once into the
  kernel's :class:`~rtlforge.core.models.HistoryEntry`; an entry of none of these shapes is a
  ``ValueError`` naming it.
- ``golden_ppa`` (optional): the golden's PPA as a raw mapping; overrides the measured one.
"""

from __future__ import annotations

import functools
import json
import math
import threading
import time
from abc import abstractmethod
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, ValidationError

from rtlforge.core.errors import (
    ConfigError,
    DesignError,
    ExtractionError,
    InfraError,
    TaskFormatError,
    is_infra,
)
from rtlforge.core.executor import Executor, Work
from rtlforge.core.interfaces import PPAEstimator, Reward
from rtlforge.core.log import get_logger
from rtlforge.core.models import (
    PPA_KEYS,
    Candidate,
    FlatPPA,
    HistoryEntry,
    Objectives,
    PPAMeasure,
    PPAResult,
    Task,
    ValidationReport,
    Verdict,
)
from rtlforge.core.options import PluginSpec
from rtlforge.core.untrusted import load_json
from rtlforge.evaluation.evaluate import candidate_from_completion
from rtlforge.evaluation.golden import (
    GoldenPPA,
    PPAJob,
    PPAWork,
    lost_measure,
    measure_job,
    task_ppa_options,
)
from rtlforge.rewards import guards
from rtlforge.validate.pipeline import Pipeline

if TYPE_CHECKING:
    from rtlforge.core.plugins import PluginHost

log = get_logger("rtlforge.rewards")

GuardPolicy = Literal["flag", "zero", "abstain"]
TaskSource = Mapping[str, Task] | Sequence[Task] | str | Path | Callable[[str], Task]

#: The one reward policy for outcomes that say nothing about the design
#: (:class:`~rtlforge.core.models.Verdict`): an infrastructure failure or a wall-clock timeout
#: abstains (``None``), never 0, which would teach the policy it was wrong for the machine's
#: sake. Every reward applies it (:func:`unresolved`); ``RTLReward(timeout_reward=0.0)`` is the
#: explicit opt-in to punish timeouts.
UNRESOLVED_VERDICTS = frozenset({Verdict.INFRA_ERROR, Verdict.TIMEOUT})


def unresolved(verdict: Verdict | str) -> bool:
    """Whether ``verdict`` (a :class:`Verdict` or its value) gets no reward (``None``)."""
    return Verdict(verdict) in UNRESOLVED_VERDICTS


# Flags besides the guard ones in :mod:`rtlforge.rewards.guards`.
INFRA = "infra_error"
TIMEOUT = "timeout"
NO_CODE = "no_code"
TASK_UNUSABLE = "task_unusable"
PPA_INVALID = "ppa_invalid"
PPA_INFRA = "ppa_infra_error"


class RewardDetail(BaseModel):
    """Why a completion got its reward; ``reward`` is what :meth:`Reward.score` returns."""

    model_config = ConfigDict(frozen=True)

    task_id: str
    reward: float | None
    verdict: Verdict | None = None  # None: the completion was never validated
    objectives: Objectives | None = None  # (P_g/P, D_g/D, A_g/A), maximised
    hvc: float | None = None
    ppa: FlatPPA | None = None  # the candidate's; serialised as {"power", "delay", "area"}
    flags: tuple[str, ...] = ()
    reason: str | None = None
    cached: bool = False  # the validation verdict came from the cache
    #: The Verilog the reward extracted from the completion and judged (None: none found, or
    #: the sample's task is unknown), so a caller logging rollouts never extracts again.
    source: str | None = None


@dataclass(frozen=True)
class TaskCheck:
    """Once-per-task facts: is the task usable, and does an all-zero module pass it?"""

    usable: bool
    weak_testbench: bool | None = None  # None: not probed or inconclusive
    reason: str | None = None
    golden_verdict: Verdict | None = None  # None: no golden, or the check is off
    probe_verdict: Verdict | None = None  # the all-zero module's verdict; None: not probed


@dataclass
class Item:
    """Mutable per-sample state while a batch is scored."""

    index: int
    task_id: str
    task: Task | None
    history: Any = None
    golden_column: Any = None
    candidate: Candidate | None = None
    report: ValidationReport | None = None
    reward: float | None = None
    final: bool = False  # reward decided; later stages leave it alone
    flags: list[str] = field(default_factory=list)
    reason: str | None = None
    code: str | None = None
    ppa: PPAResult | None = None
    golden: PPAResult | None = None
    objectives: Objectives | None = None
    hvc: float | None = None

    def finish(self, reward: float | None, reason: str | None = None,
               flag: str | None = None) -> None:
        self.reward, self.final = reward, True
        if reason is not None:
            self.reason = reason
        if flag is not None and flag not in self.flags:
            self.flags.append(flag)

    def flag(self, name: str) -> None:
        if name not in self.flags:
            self.flags.append(name)

    @property
    def live(self) -> bool:
        """Passed the testbench and no policy has decided its reward yet."""
        return not self.final and self.report is not None and self.report.passed

    def detail(self) -> RewardDetail:
        return RewardDetail(
            task_id=self.task_id, reward=self.reward,
            verdict=self.report.verdict if self.report is not None else None,
            objectives=self.objectives, hvc=self.hvc, ppa=self.ppa,
            flags=tuple(self.flags), reason=self.reason,
            cached=bool(self.report is not None and self.report.cached),
            source=("\n".join(f.content for f in self.candidate.files)
                    if self.candidate is not None else None),
        )


# --------------------------------------------------------------------------------------------
# Helpers shared by rewards and adapters
# --------------------------------------------------------------------------------------------


def completion_text(completion: Any) -> str:
    """The text of a completion: a string, or the last assistant message of a chat list."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, Mapping):
        return str(completion.get("content") or "")
    if isinstance(completion, Sequence):
        messages = [m for m in completion if isinstance(m, Mapping)]
        assistant = [m for m in messages if m.get("role") == "assistant"] or messages
        return str(assistant[-1].get("content") or "") if assistant else ""
    raise TypeError(f"a completion must be text or chat messages, not {type(completion).__name__}")


def resolve_tasks(tasks: TaskSource) -> Callable[[str], Task | None]:
    """A task lookup from a mapping, a list, a task directory (any layout
    :func:`~rtlforge.tasks.loader.load_tasks` reads) or a callable."""
    if isinstance(tasks, str | Path):
        from rtlforge.tasks.loader import load_tasks

        tasks = {t.id: t for t in load_tasks(tasks)}
    elif isinstance(tasks, Sequence):
        tasks = {t.id: t for t in tasks}
    if isinstance(tasks, Mapping):
        return tasks.get
    if callable(tasks):
        lookup = tasks

        def safe(task_id: str) -> Task | None:
            try:
                return lookup(task_id)
            except (KeyError, TaskFormatError):
                return None

        return safe
    raise TypeError(f"tasks must be a mapping, list, directory or callable, not {type(tasks)}")


def parse_ppa(value: Any, *, what: str = "PPA") -> PPAResult | None:
    """A PPA column value through the kernel's one way in (:meth:`PPAResult.from_flat`):
    None, a :class:`PPAResult`, a ``{power, delay, area}`` mapping (or unit-named keys) among
    other keys, or JSON text of one; a value without all three numbers raises ``ValueError``."""
    ppa = PPAResult.from_flat(value, what=what)
    if ppa is None and isinstance(value, Mapping):
        raise ValueError(f"{what} {dict(value)!r} is not a valid PPA: no power, delay or area")
    return ppa


def _as_ppa(ppa: PPAResult | Mapping[str, float] | None) -> PPAResult | None:
    return PPAResult.from_flat(ppa) if isinstance(ppa, Mapping) else ppa


def valid_ppa(ppa: PPAResult | Mapping[str, float] | None) -> bool:
    """Every measurement finite and > 0 (:attr:`PPAResult.valid`): anything else is *invalid
    PPA*, which earns a passing candidate the pass reward only."""
    parsed = _as_ppa(ppa)
    return parsed is not None and parsed.valid


#: One parsed history entry: the kernel's circuit-history model (the reward's old name).
HistoryItem = HistoryEntry


def history_entries(history: Any) -> list[Any]:
    """The entries of one sample's history column (None, a list, an array or a JSON string)."""
    if history is None:
        return []
    if isinstance(history, str):
        history = load_json(history) if history.strip() else []
    if hasattr(history, "tolist"):  # numpy array (k, 3)
        history = history.tolist()
    if isinstance(history, Mapping) or (_is_vector(history) and not any(
            isinstance(e, Mapping) or _is_vector(e) for e in history)):
        history = [history]  # a single entry passed bare
    return list(history)


def _is_vector(entry: Any) -> bool:
    return (not isinstance(entry, str | bytes | Mapping) and isinstance(entry, Sequence | Iterable)
            and hasattr(entry, "__len__") and len(entry) == 3)


def parse_history(history: Any) -> list[HistoryEntry]:
    """One sample's history column parsed and validated (``ValueError`` names a bad entry)."""
    items = []
    for entry in history_entries(history):
        try:
            items.append(HistoryEntry.model_validate(entry))
        except ValidationError as exc:
            raise ValueError("; ".join(str(e["msg"]).removeprefix("Value error, ")
                                       for e in exc.errors())) from exc
    return items


def history_codes(history: Any) -> set[str]:
    """Normalised-source hashes of the history entries that carry their code."""
    return {guards.code_hash(item.code) for item in parse_history(history) if item.code}


def history_ppa(history: Any) -> list[PPAResult]:
    """The raw PPA in a history (objective-vector entries have none)."""
    return [item.ppa for item in parse_history(history) if item.ppa is not None]


def history_objectives(history: Any, golden: PPAResult | Mapping[str, float] | None) -> Any:
    """The history as an ``(k, 3)`` array of objective vectors; invalid entries are dropped.

    Raw PPA is normalised by ``golden`` (the truth the vector was derived from); an entry's
    own vector is taken as it is when it has no PPA or there is no golden.
    """
    gold = _as_ppa(golden)
    rows = []
    for item in parse_history(history):
        vec: Any = item.objectives
        if item.ppa is not None and gold is not None:
            vec = Objectives.of(item.ppa, gold)
        if vec is not None and all(math.isfinite(v) and v > 0 for v in vec):
            rows.append(np.asarray(vec, dtype=float))
    return np.vstack(rows) if rows else np.empty((0, 3))


def freeze(value: Any) -> str:
    """A stable text key of a column value (lists, mappings, arrays), for grouping."""
    if hasattr(value, "tolist"):
        value = value.tolist()
    return json.dumps(value, sort_keys=True, default=str)


def _same(a: PPAResult, b: PPAResult, rel: float = 1e-9) -> bool:
    x, y = a.triple(), b.triple()
    return all(math.isclose(x[k], y[k], rel_tol=rel, abs_tol=1e-12) for k in PPA_KEYS)


class _LRU:
    """A small thread-safe LRU (PPA results are pydantic models: cheap to keep)."""

    def __init__(self, size: int) -> None:
        self.size, self._data, self._lock = size, OrderedDict[Any, Any](), threading.Lock()

    def get(self, key: Any) -> Any:
        with self._lock:
            if key in self._data:
                self._data.move_to_end(key)
                return self._data[key]
        return None

    def put(self, key: Any, value: Any) -> None:
        with self._lock:
            self._data[key] = value
            while len(self._data) > self.size:
                self._data.popitem(last=False)


def _column(columns: Mapping[str, Any], name: str, n: int, *, required: bool = False) -> list:
    if name not in columns or columns[name] is None:
        if required:
            raise ValueError(f"the reward needs a per-sample {name!r} column")
        return [None] * n
    values = list(columns[name])
    if len(values) != n:
        raise ValueError(f"column {name!r} has {len(values)} values for {n} completions")
    return values


# --------------------------------------------------------------------------------------------
# Rewards
# --------------------------------------------------------------------------------------------


class RTLReward(Reward):
    """Base of the testbench-driven rewards.

    Policies (all default to the least destructive choice):

    - ``timeout_reward``: reward of a design whose simulation never finishes. ``None`` (abstain)
      by default, the policy every reward shares (:data:`UNRESOLVED_VERDICTS`): a wall-clock
      limit can be the machine's; ``0.0`` punishes it where the limit is generous.
    - ``on_duplicate``: a candidate whose normalised code repeats a history entry, or an earlier
      candidate of its group (same task and history): ``"flag"`` | ``"zero"`` | ``"abstain"``.
    - ``on_weak_testbench``: the task's testbench passes an all-zero module: flag, zero or abstain
      for every sample of that task.
    - ``on_constant_output``: a passing candidate whose outputs are all constant.
    - ``check_golden`` / ``probe_testbench``: run the once-per-task golden self-check / probe.
    """

    name: ClassVar[str]
    needs_ppa: ClassVar[bool] = False

    def __init__(
        self,
        tasks: TaskSource,
        pipeline: Pipeline | None = None,
        *,
        timeout_reward: float | None = None,
        on_duplicate: GuardPolicy = "flag",
        on_weak_testbench: GuardPolicy = "flag",
        on_constant_output: GuardPolicy = "flag",
        check_golden: bool = True,
        probe_testbench: bool = True,
        executor: Executor | None = None,
        host: PluginHost | None = None,
    ) -> None:
        """Args:
            tasks: the tasks completions are scored against: a mapping by id, a list, a task
                folder (a suite of ``task.toml`` folders or an RTLLM v2 layout) or a lookup.
            pipeline: validates the completions (default: ``Pipeline.build`` on the host, 60 s
                per stage).
            timeout_reward: reward of a design whose simulation never finishes; None (the
                default, :data:`UNRESOLVED_VERDICTS`) abstains, ``0.0`` punishes it.
            on_duplicate: a candidate repeating a history entry or an earlier candidate of its
                group: ``flag``, ``zero`` or ``abstain``.
            on_weak_testbench: a task whose testbench passes an all-zero module: ``flag``,
                ``zero`` or ``abstain`` for each of its samples.
            on_constant_output: a passing candidate whose outputs are all constant: ``flag``,
                ``zero`` or ``abstain``.
            check_golden: run each task's golden through the pipeline once; a task whose golden
                fails makes its samples abstain.
            probe_testbench: probe each task's testbench once with an all-zero module (what
                ``on_weak_testbench`` judges).
            executor: runs the validations (default: the pipeline's own thread pool).
            host: where the default pipeline and PPA estimator come from (default:
                ``PluginHost.default()``).
        """
        self._lookup = resolve_tasks(tasks)
        # ``host`` serves only the defaults (pipeline, estimator); None: PluginHost.default()
        self.host = host
        self.pipeline = pipeline if pipeline is not None else Pipeline.build(
            self._host(), timeout=60.0)
        self.timeout_reward = timeout_reward
        self.on_duplicate = on_duplicate
        self.on_weak_testbench = on_weak_testbench
        self.on_constant_output = on_constant_output
        self.check_golden = check_golden
        self.probe_testbench = probe_testbench
        self.executor = executor
        self._checks: dict[str, TaskCheck] = {}
        self._checks_lock = threading.Lock()

    def _host(self) -> PluginHost:
        if self.host is None:
            from rtlforge.core.plugins import PluginHost

            self.host = PluginHost.default()
        return self.host

    # ---------------------------------------------------------------- public API

    def score(self, prompts: Sequence[Any], completions: Sequence[Any],
              **columns: Any) -> list[float | None]:
        return [d.reward for d in self.score_detailed(prompts, completions, **columns)]

    def score_detailed(self, prompts: Sequence[Any], completions: Sequence[Any],
                       **columns: Any) -> list[RewardDetail]:
        """One :class:`RewardDetail` per completion, in order."""
        start = time.perf_counter()
        n = len(completions)
        task_ids = _column(columns, "task_id", n, required=True)
        histories = _column(columns, "history", n)
        goldens = _column(columns, "golden_ppa", n)
        items = [
            Item(index=i, task_id=str(task_ids[i]), task=self._lookup(str(task_ids[i])),
                 history=histories[i], golden_column=goldens[i])
            for i in range(n)
        ]
        unknown = sorted({it.task_id for it in items if it.task is None})
        if unknown:
            raise TaskFormatError(f"unknown task ids: {', '.join(unknown[:10])}")
        for it, completion in zip(items, completions, strict=True):
            self._extract(it, completion)
        self._validate(items)
        self._apply_verdicts(items)
        self._apply_guards(items)
        self._score_passing([it for it in items if it.live], columns)
        for it in items:
            if not it.final:
                it.finish(0.0)
        log.info("rewards_scored", reward=self.name, n=n,
                 seconds=round(time.perf_counter() - start, 3))
        return [it.detail() for it in items]

    def check_tasks(self, tasks: Iterable[Task]) -> dict[str, TaskCheck]:
        """Golden self-check and weak-testbench probe of each task, in one parallel batch.

        Cached per task digest; a check that hit an infrastructure failure is reported as
        unusable here and retried on the next call.
        """
        items = [Item(index=i, task_id=t.id, task=t) for i, t in enumerate(tasks)]
        self._validate(items)
        failed = TaskCheck(usable=False, reason="infrastructure failure during the task check")
        return {it.task_id: self._checks.get(self._check_key(it.task), failed)
                for it in items if it.task is not None}

    def task_check(self, task: Task) -> TaskCheck:
        """The (cached) golden self-check and weak-testbench probe of one task."""
        return self.check_tasks([task])[task.id]

    # ---------------------------------------------------------------- stages

    def _extract(self, it: Item, completion: Any) -> None:
        assert it.task is not None
        try:
            text = completion_text(completion)
            it.candidate = candidate_from_completion(it.task, text, index=it.index,
                                                     generator=self.name)
        except (ExtractionError, TypeError) as exc:
            it.finish(0.0, f"no Verilog in the completion: {exc}", NO_CODE)
            return
        it.code = guards.code_hash(it.candidate)

    @staticmethod
    def _check_key(task: Task) -> str:
        golden = Candidate(files=task.golden).digest() if task.golden else "-"
        return f"{task.digest()}:{golden}"

    def _validate(self, items: list[Item]) -> None:
        """One ``validate_many`` for the candidates and any task check not yet cached."""
        pairs: list[tuple[Task, Candidate]] = []
        pending: dict[str, tuple[Task, int | None, int | None]] = {}
        for it in items:
            task = it.task
            assert task is not None
            key = self._check_key(task)
            if key in self._checks or key in pending:
                continue
            golden_at = probe_at = None
            if self.check_golden and task.golden:
                golden_at = len(pairs)
                pairs.append((task, Candidate(files=task.golden, task_id=task.id)))
            probe = guards.probe_candidate(task) if self.probe_testbench else None
            if probe is not None:
                probe_at = len(pairs)
                pairs.append((task, probe))
            pending[key] = (task, golden_at, probe_at)
        first = len(pairs)
        live = [it for it in items if it.candidate is not None and not it.final]
        pairs.extend((it.task, it.candidate) for it in live if it.task is not None)
        reports = self.pipeline.validate_many(pairs, executor=self.executor) if pairs else []
        for it, report in zip(live, reports[first:], strict=True):
            it.report = report
        for key, (task, golden_at, probe_at) in pending.items():
            check = self._judge_task(
                task,
                reports[golden_at] if golden_at is not None else None,
                reports[probe_at] if probe_at is not None else None,
            )
            if check is not None:
                with self._checks_lock:
                    self._checks[key] = check

    @staticmethod
    def _judge_task(task: Task, golden: ValidationReport | None,
                    probe: ValidationReport | None) -> TaskCheck | None:
        """None when an infrastructure failure makes the check inconclusive (retried later)."""
        if golden is not None and golden.verdict is Verdict.INFRA_ERROR:
            return None
        golden_verdict = golden.verdict if golden is not None else None
        if golden is not None and not golden.passed:
            return TaskCheck(usable=False, golden_verdict=golden_verdict, reason=(
                f"task {task.id!r} is unusable: its golden design gets verdict "
                f"{golden.verdict.value!r} from its own testbench"))
        if probe is not None and probe.verdict is Verdict.INFRA_ERROR:
            return None
        # A probe that failed or never finished was rejected; one that did not compile proves
        # nothing about the testbench (None: unclassified).
        weak = None
        if probe is not None and probe.verdict in (Verdict.PASS, Verdict.FAIL, Verdict.TIMEOUT):
            weak = probe.passed
        if weak:
            log.warning("weak_testbench", task=task.id)
        return TaskCheck(usable=True, weak_testbench=weak, golden_verdict=golden_verdict,
                         probe_verdict=probe.verdict if probe is not None else None)

    def _apply_verdicts(self, items: list[Item]) -> None:
        for it in items:
            if it.final:
                continue
            assert it.task is not None and it.report is not None
            check = self._checks.get(self._check_key(it.task))
            verdict = it.report.verdict
            if verdict is Verdict.INFRA_ERROR or check is None:
                messages = [fb.message for fb in it.report.feedback][-1:] or ["task check"]
                it.finish(None, f"infrastructure failure: {messages[0]}", INFRA)
            elif not check.usable:
                it.finish(None, check.reason, TASK_UNUSABLE)
            elif verdict is Verdict.TIMEOUT:
                it.finish(self.timeout_reward, "the design timed out", TIMEOUT)
            elif not it.report.passed:
                it.finish(0.0, f"validation verdict {verdict.value!r}")

    def _policy(self, it: Item, policy: GuardPolicy, flag: str, reason: str) -> None:
        it.flag(flag)
        if policy == "zero" and not it.final:
            it.finish(0.0, reason)
        elif policy == "abstain" and not it.final:
            it.finish(None, reason)

    def _apply_guards(self, items: list[Item]) -> None:
        seen: set[tuple[str, str, str]] = set()
        for it in items:
            assert it.task is not None
            check = self._checks.get(self._check_key(it.task))
            if check is not None and check.weak_testbench:
                self._policy(it, self.on_weak_testbench, guards.WEAK_TESTBENCH,
                             "the task's testbench also passes an all-zero module")
            if it.code is None:
                continue
            if it.code in history_codes(it.history):
                self._policy(it, self.on_duplicate, guards.DUPLICATE_HISTORY,
                             "the candidate repeats a circuit in its history")
            key = (it.task_id, freeze(it.history), it.code)
            if key in seen:
                self._policy(it, self.on_duplicate, guards.DUPLICATE_IN_GROUP,
                             "the candidate repeats an earlier candidate of its group")
            seen.add(key)
            if it.live and it.candidate is not None and guards.constant_outputs(
                    it.candidate, it.candidate.top or it.task.top):
                self._policy(it, self.on_constant_output, guards.CONSTANT_OUTPUT,
                             "every output of the candidate is constant")

    def _score_passing(self, items: list[Item], columns: Mapping[str, Any]) -> None:
        """Set the reward of each passing candidate no policy has decided (default: 1.0)."""
        for it in items:
            it.finish(1.0)


class PPAReward(RTLReward):
    """An :class:`RTLReward` that also measures PPA of passing candidates and the golden.

    ``estimator`` defaults to the registered ``yosys-sta`` PPA estimator; ``clock`` and
    ``period_ns`` are passed to it when set (else it auto-detects). An estimator error
    for which :func:`~rtlforge.core.errors.is_infra` holds (missing tool, sandbox, bad liberty,
    an unexpected crash) abstains; a :class:`~rtlforge.core.errors.DesignError` (the design
    cannot be measured) counts as invalid PPA.

    ``estimator`` is an instance, or a :class:`~rtlforge.core.options.PluginSpec` (name and
    options) built from the host. Given by name and with an ``executor``, candidates' PPA goes
    through the executor (on a cluster, each worker rebuilds the estimator; ``ppa_workers``
    then does not apply); an instance cannot travel, so its measurements stay on this
    process's ``ppa_workers`` threads. Each task's golden is measured here, once.
    """

    needs_ppa: ClassVar[bool] = True

    def __init__(self, tasks: TaskSource, pipeline: Pipeline | None = None, *,
                 estimator: PPAEstimator | PluginSpec | None = None, clock: str | None = None,
                 period_ns: float | None = None, ppa_workers: int | None = None,
                 **options: Any) -> None:
        """Args:
            estimator: measures passing candidates and goldens (default: the host's
                ``yosys-sta``).
            clock: the clock port passed to the estimator (default: detected per design).
            period_ns: the clock period passed to the estimator (default: the estimator's).
            ppa_workers: designs measured at once (default: up to 16).
            **options: :class:`RTLReward`'s options.
        """
        super().__init__(tasks, pipeline, **options)
        if estimator is None:
            estimator = PluginSpec(name="yosys-sta")
        # an estimator given by name (a PluginSpec) can be rebuilt on an executor's workers
        self.estimator_spec = estimator if isinstance(estimator, PluginSpec) else None
        if isinstance(estimator, PluginSpec):
            estimator = self._host().create("ppa_estimator", estimator.name, **estimator.options)
        self.estimator: PPAEstimator = estimator
        self.ppa_workers = ppa_workers
        # only what was given: estimators written against the three-argument form still work
        self.ppa_options = {k: v for k, v in (("clock", clock), ("period_ns", period_ns))
                            if v is not None}
        self._ppa = _LRU(20_000)
        self.goldens = GoldenPPA(estimator, self.pipeline.runner, self.ppa_options)

    def _measure(self, candidate: Candidate, top: str,
                 task: Task | None = None) -> PPAResult | Exception:
        options = task_ppa_options(task, self.ppa_options)
        key = (self.estimator.name, candidate.digest(), top, freeze(options))
        hit = self._ppa.get(key)
        if hit is not None:
            return hit
        try:
            result: PPAResult | Exception = self.estimator.estimate(
                candidate, top, self.pipeline.runner, **options)
        except Exception as exc:  # noqa: BLE001 - classified by the caller
            result = exc
        if not _is_infra(result):
            self._ppa.put(key, result)
        return result

    def _golden(self, task: Task) -> PPAMeasure | Exception:
        try:
            return self.goldens.measure(task)
        except Exception as exc:  # noqa: BLE001 - an infrastructure failure, classified below
            return exc

    def _measure_through_executor(self, wanted: Sequence[tuple[Candidate, str, Task | None]],
                                  ) -> list[PPAResult | Exception]:
        """PPA of each ``(candidate, top, task)`` as a :class:`PPAWork` batch on the executor;
        results already measured come from this reward's cache and are not sent."""
        assert self.executor is not None and self.estimator_spec is not None
        out: list[PPAResult | Exception | None] = [None] * len(wanted)
        jobs: list[PPAJob] = []
        keys: list[tuple[int, tuple[Any, ...]]] = []
        for index, (candidate, top, task) in enumerate(wanted):
            options = task_ppa_options(task, self.ppa_options)
            key = (self.estimator.name, candidate.digest(), top, freeze(options))
            hit = self._ppa.get(key)
            if hit is not None:
                out[index] = hit
                continue
            jobs.append(PPAJob(candidate=candidate, top=top, options=options))
            keys.append((index, key))
        runner = self.pipeline.runner
        work: Work[PPAJob, PPAMeasure] = Work(
            fn=lambda job: measure_job(self.estimator, runner, job), lost=lost_measure,
            spec=PPAWork(estimator=self.estimator_spec, host=self._host().spec()))
        for (index, key), measure in zip(keys, self.executor.run(work, jobs), strict=True):
            result = _from_measure(measure)
            if not _is_infra(result):
                self._ppa.put(key, result)
            out[index] = result
        assert all(r is not None for r in out)
        return [r for r in out if r is not None]

    def _remote_ppa(self) -> bool:
        """PPA goes through the executor when there is one and the estimator can be rebuilt
        elsewhere (given by name, on a host a worker can rebuild)."""
        if self.executor is None or self.estimator_spec is None:
            return False
        try:
            self._host().spec()
        except ConfigError:
            return False
        return True

    def _measure_all(self, jobs: Sequence[Callable[[], Any]]) -> list[Any]:
        if not jobs:
            return []
        workers = min(len(jobs), self.ppa_workers or 16)
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="rtlforge-ppa") as pool:
            return list(pool.map(lambda job: job(), jobs))

    def _score_passing(self, items: list[Item], columns: Mapping[str, Any]) -> None:
        # Goldens of tasks without a golden_ppa column, and candidates, in one parallel batch.
        column_golden = {it.index: parse_ppa(it.golden_column, what="golden_ppa")
                         for it in items}
        measured_goldens = list({it.task.id: it.task for it in items
                                 if it.task is not None and it.task.golden
                                 and column_golden[it.index] is None}.values())
        jobs: list[Callable[[], Any]] = [
            functools.partial(self._golden, t) for t in measured_goldens]
        wanted = [(it.candidate, it.candidate.top or it.task.top, it.task)
                  for it in items if it.candidate is not None and it.task is not None]
        if self._remote_ppa():
            # candidates through the executor (a cluster's workers); goldens, once per task,
            # here
            golden_results = self._measure_all(jobs)
            results = [*golden_results, *self._measure_through_executor(wanted)]
        else:
            jobs += [functools.partial(self._measure, *w) for w in wanted]
            results = self._measure_all(jobs)
        golden_of = dict(zip((t.id for t in measured_goldens), results, strict=False))
        for it, result in zip(items, results[len(measured_goldens):], strict=True):
            golden = column_golden[it.index]
            raw = golden_of.get(it.task_id)
            if golden is None:
                if raw is None:
                    it.finish(None, f"task {it.task_id!r} has no golden design and the sample "
                              "no golden_ppa column", TASK_UNUSABLE)
                    continue
                if isinstance(raw, Exception):
                    it.finish(None, f"golden PPA: infrastructure failure: {raw}", PPA_INFRA)
                    continue
                golden = raw.ppa
            if golden is None or not golden.valid:
                it.finish(None, f"the golden of task {it.task_id!r} has no valid PPA",
                          TASK_UNUSABLE)
                continue
            it.golden = golden
            if _is_infra(result):
                it.finish(None, f"PPA: infrastructure failure: {result}", PPA_INFRA)
                continue
            if isinstance(result, Exception):
                it.flag(PPA_INVALID)
                it.reason = f"PPA could not be measured: {result}"
            else:
                it.ppa = result
                it.objectives = Objectives.of(result, golden)
                if it.objectives is None:
                    it.flag(PPA_INVALID)
                if any(_same(result, h) for h in history_ppa(it.history)):
                    self._policy(it, self.on_duplicate, guards.DUPLICATE_HISTORY,
                                 "the candidate's PPA repeats a circuit in its history")
        self._score_ppa([it for it in items if not it.final], columns)

    @abstractmethod
    def _score_ppa(self, items: list[Item], columns: Mapping[str, Any]) -> None:
        """Set the reward of passing candidates whose PPA step finished (objectives may be None)."""


def _from_measure(measure: PPAMeasure) -> PPAResult | Exception:
    """A measurement that came back as data, as :meth:`PPAReward._measure` would return it: the
    result, or an error of the right branch (infrastructure, or the design's)."""
    if measure.ppa is not None:
        return measure.ppa
    message = measure.error or "PPA measurement failed"
    return InfraError(message) if measure.infra else DesignError(message)


def _is_infra(result: Any) -> bool:
    """A measurement (or the error that replaced it) that must abstain rather than score."""
    return isinstance(result, Exception) and is_infra(result)


def scalar_ppa(ppa: PPAResult | Mapping[str, float] | None,
               golden: PPAResult | Mapping[str, float] | None) -> float:
    """``(P_g/P)·(A_g/A)·(D_g/D)``; 0 when either side is not a valid measurement.

    No ``eps`` in the denominator: :func:`valid_ppa` refuses a zero delay (or any zero), so the
    golden scores exactly 1 and nothing is biased by a constant added in nanoseconds.
    """
    gen, gold = _as_ppa(ppa), _as_ppa(golden)
    if gen is None or gold is None or not (gen.valid and gold.valid):
        return 0.0
    return (gold.power_mw / gen.power_mw) * (gold.area_um2 / gen.area_um2) * (
        gold.delay_ns / gen.delay_ns)
