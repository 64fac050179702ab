"""Measuring PPA: one design's outcome (the kernel's :class:`PPAMeasure`) and each golden's,
once per task.

Evaluation, rewards and exploration all compare a candidate's PPA with its task's golden, and
all need the golden measured exactly once per task however many threads ask for it.
:class:`GoldenPPA` is that service: a thread-safe per-task cache around one estimator. A
measurement that failed because of the infrastructure (:func:`~rtlforge.core.errors.is_infra`:
a missing tool, a sandbox failure, an estimator crash) is raised and never cached, so it is
retried; a design the estimator cannot measure is a cached :class:`PPAMeasure` with its error.
:class:`PPAWork` is a batch of measurements as an executor work spec: a remote worker rebuilds
the estimator by name and measures there, and every outcome, errors included, comes back as a
:class:`PPAMeasure` (exceptions do not cross processes intact).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from rtlforge.core.errors import RtlforgeError, ToolMissingError, is_infra
from rtlforge.core.executor import WorkerServices, WorkSpec
from rtlforge.core.interfaces import PPAEstimator
from rtlforge.core.models import (
    Candidate,
    PPAMeasure,
    Task,
    ValidationReport,
    Verdict,
)
from rtlforge.core.options import PluginSpec
from rtlforge.core.plugins import HostSpec
from rtlforge.sandbox.runner import SandboxRunner
from rtlforge.tasks.cvdp import is_cvdp_task

if TYPE_CHECKING:
    from rtlforge.validate.pipeline import Pipeline

__all__ = ["PPA_CLOCK_KEY", "GoldenCheck", "GoldenPPA", "GoldenVerdict", "PPAJob", "PPAMeasure",
           "PPAWork", "error_measure", "lost_measure", "measure_job", "measure_ppa",
           "task_ppa_options"]

#: Task metadata key naming the clock port(s) for PPA (``"wclk,rclk"``), for designs whose
#: clock the estimator cannot recognise by name.
PPA_CLOCK_KEY = "ppa_clock"


def task_ppa_options(task: Task | None, options: Mapping[str, Any]) -> dict[str, Any]:
    """``options`` plus the task's clock hint (metadata ``ppa_clock``) unless a clock is set."""
    out = dict(options)
    hint = task.metadata.get(PPA_CLOCK_KEY) if task is not None else None
    if isinstance(hint, str) and hint and out.get("clock") is None:
        out["clock"] = hint
    return out


T = TypeVar("T")


def error_measure(exc: BaseException) -> PPAMeasure:
    """The outcome of a failed measurement: crashes are marked ``internal`` in the message,
    and ``infra`` says whether the error is the infrastructure's rather than the design's."""
    prefix = "" if isinstance(exc, RtlforgeError) else "internal "
    return PPAMeasure(error=f"{prefix}{type(exc).__name__}: {exc}", infra=is_infra(exc))


def measure_ppa(estimator: PPAEstimator, candidate: Candidate, top: str,
                runner: SandboxRunner) -> PPAMeasure:
    """One PPA run; a missing tool is fatal for the whole batch, anything else is per design
    (recorded as an error, marked ``infra`` when :func:`is_infra` says it is not the design's)."""
    try:
        ppa = estimator.estimate(candidate, top, runner)
    except ToolMissingError:
        raise
    except Exception as exc:  # noqa: BLE001 - one bad design must not sink an hour-long batch
        return error_measure(exc)
    return PPAMeasure(ppa=ppa)


class PPAJob(BaseModel):
    """One measurement: the design, its top module and the estimator's keyword options."""

    model_config = ConfigDict(frozen=True)

    candidate: Candidate
    top: str
    options: dict[str, Any] = Field(default_factory=dict)


def measure_job(estimator: PPAEstimator, runner: SandboxRunner, job: PPAJob) -> PPAMeasure:
    """A job's outcome, any error included (the caller decides what a missing tool means)."""
    try:
        ppa = estimator.estimate(job.candidate, job.top, runner, **job.options)
    except Exception as exc:  # noqa: BLE001 - carried back as data, classified by is_infra
        return error_measure(exc)
    return PPAMeasure(ppa=ppa)


def lost_measure(job: PPAJob, reason: str) -> PPAMeasure:
    """A job whose worker kept dying: a missing measurement, never a bad design."""
    return PPAMeasure(error=f"WorkerLostError: {reason}", infra=True)


class PPAWork(WorkSpec):
    """PPA measurements of :class:`PPAJob` items, rebuilt on a worker: the estimator
    ``estimator`` (name and options) from the plugin host ``host``, with its own sandbox."""

    estimator: PluginSpec
    host: HostSpec = Field(default_factory=HostSpec)

    def build(self, services: WorkerServices) -> Callable[[PPAJob], PPAMeasure]:
        host = self.host.build()
        estimator = host.create("ppa_estimator", self.estimator.name, **self.estimator.options)
        runner = SandboxRunner()
        return lambda job: measure_job(estimator, runner, job)


class _OncePerKey(Generic[T]):
    """Results by key, each computed once: concurrent callers of one key wait for the first.

    ``keep`` decides what is cached; a result it rejects (an inconclusive check) is returned
    but computed again next time.
    """

    def __init__(self) -> None:
        self._results: dict[str, T] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._lock = threading.Lock()

    def get(self, key: str) -> T | None:
        with self._lock:
            return self._results.get(key)

    def once(self, key: str, compute: Callable[[], T],
             keep: Callable[[T], bool] = lambda _: True) -> T:
        with self._lock:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            hit = self.get(key)
            if hit is not None:
                return hit
            result = compute()
            if keep(result):
                with self._lock:
                    self._results[key] = result
            return result


class GoldenPPA:
    """Each task's golden PPA, measured once per task (per golden text) and shared by threads.

    ``options`` go to every ``estimate`` call (``clock``, ``period_ns``). :meth:`measure`
    raises an infrastructure failure (see :func:`is_infra`) instead of caching it;
    ``load``/``save`` let a caller keep results across runs (an explore archive).
    """

    def __init__(self, estimator: PPAEstimator, runner: SandboxRunner,
                 options: Mapping[str, Any] | None = None) -> None:
        self.estimator = estimator
        self.runner = runner
        self.options = dict(options or {})
        self._memo: _OncePerKey[PPAMeasure] = _OncePerKey()

    @staticmethod
    def key(task: Task) -> str:
        return f"{task.id}:{task.top}:{Candidate(files=task.golden).digest()}"

    def known(self, task: Task) -> PPAMeasure | None:
        """The cached result, without measuring."""
        return self._memo.get(self.key(task))

    def measure(self, task: Task, *, load: Callable[[], PPAMeasure | None] | None = None,
                save: Callable[[PPAMeasure], None] | None = None) -> PPAMeasure:
        """The golden's PPA (cached). ``task.golden`` must not be empty.

        ``load`` is asked first (a stored result skips the measurement); ``save`` receives a
        fresh result. Concurrent callers for one task wait for the first one's measurement.
        """
        if not task.golden:
            raise ValueError(f"task {task.id!r} has no golden design")

        def compute() -> PPAMeasure:
            result = load() if load is not None else None
            if result is None:
                result = self._estimate(task)
                if save is not None:
                    save(result)
            return result

        return self._memo.once(self.key(task), compute)

    def _estimate(self, task: Task) -> PPAMeasure:
        candidate = Candidate(files=task.golden, task_id=task.id)
        try:
            ppa = self.estimator.estimate(candidate, task.top, self.runner,
                                          **task_ppa_options(task, self.options))
        except Exception as exc:
            if is_infra(exc):
                raise
            return error_measure(exc)
        return PPAMeasure(ppa=ppa)


class GoldenVerdict(BaseModel):
    """Whether a task's golden passes its own testbench, and why not.

    A task whose golden fails (or does not compile with this simulator) cannot tell a right
    design from a wrong one, so a score on it says nothing about the model.
    """

    model_config = ConfigDict(frozen=True)

    task_id: str
    usable: bool
    verdict: str  # the golden's verdict
    reason: str | None = None


class GoldenCheck:
    """Each task's golden validated against its own testbench, once per task (thread-safe).

    An infrastructure failure (``infra_error``) is inconclusive: it is returned as usable and
    never cached, so the next call retries. Tasks without a golden or testbench (or a CVDP
    harness) are usable.
    """

    def __init__(self, pipeline: Pipeline) -> None:
        self.pipeline = pipeline
        self._memo: _OncePerKey[GoldenVerdict] = _OncePerKey()

    def check(self, task: Task) -> GoldenVerdict:
        if not task.golden or not (task.testbench or task.cocotb_module or is_cvdp_task(task)):
            return GoldenVerdict(task_id=task.id, usable=True, verdict="unchecked")

        def compute() -> GoldenVerdict:
            golden = Candidate(files=task.golden, task_id=task.id)
            return _judge(task, self.pipeline.validate(task, golden))

        return self._memo.once(f"{task.digest()}:{Candidate(files=task.golden).digest()}",
                               compute, keep=lambda v: v.verdict != Verdict.INFRA_ERROR.value)


def _judge(task: Task, report: ValidationReport) -> GoldenVerdict:
    value = report.verdict.value
    if report.passed or report.verdict is Verdict.INFRA_ERROR:
        return GoldenVerdict(task_id=task.id, usable=True, verdict=value)
    first = next(iter(report.feedback), None)
    detail = ""
    if first is not None:
        where = f"{first.file}:{first.line}: " if first.file and first.line else (
            f"{first.file}: " if first.file else "")
        detail = f" ({where}{first.message.splitlines()[0][:200] if first.message else ''})"
    bench = {f.name for f in (*task.testbench, *task.support)}
    if report.verdict is Verdict.ERROR and first is not None and first.file in bench:
        reason = f"its testbench does not compile with this simulator{detail}"
    elif report.verdict is Verdict.ERROR:
        reason = f"its golden does not compile with this simulator{detail}"
    else:
        reason = f"its golden gets {value!r} from its own testbench{detail}"
    return GoldenVerdict(task_id=task.id, usable=False, verdict=value, reason=reason)
