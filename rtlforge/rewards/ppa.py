"""The PPA rewards: a passing design scored by its power, delay and area against the golden's
(:class:`PPAReward`), measured in parallel with the golden measured once per task."""

from __future__ import annotations

import functools
import math
import threading
from abc import abstractmethod
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, ClassVar

from rtlforge.core.errors import (
    ConfigError,
    DesignError,
    InfraError,
    is_infra,
)
from rtlforge.core.executor import Work
from rtlforge.core.interfaces import PPAEstimator
from rtlforge.core.log import get_logger
from rtlforge.core.models import (
    PPA_KEYS,
    Candidate,
    Objectives,
    PPAMeasure,
    PPAResult,
    Task,
)
from rtlforge.core.options import PluginSpec
from rtlforge.evaluation.golden import (
    GoldenPPA,
    PPAJob,
    PPAWork,
    lost_measure,
    measure_job,
    task_ppa_options,
)
from rtlforge.rewards import guards
from rtlforge.rewards.base import (
    PPA_INFRA,
    PPA_INVALID,
    TASK_UNUSABLE,
    Item,
    RTLReward,
)
from rtlforge.rewards.columns import TaskSource, _as_ppa, freeze, history_ppa, parse_ppa
from rtlforge.validate.pipeline import Pipeline

log = get_logger("rtlforge.rewards")


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
