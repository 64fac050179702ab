"""Executors: how a batch of independent jobs is spread over workers.

Validation work is dominated by tool subprocesses, so threads are the right local default: no
pickling, and the GIL is released while waiting on pipes. A cluster executor (the ``ray`` plugin)
cannot take a closure over a live pipeline or reward: those hold thread pools, sandboxes and
caches that must not travel. So a batch is handed over as a :class:`Work`: the live function for
executors in this process, and a :class:`WorkSpec` (a small frozen pydantic model) from which a
remote worker rebuilds the function once per process. ``Executor.run`` is the one entry point a
caller needs; its default maps the live function, so a local executor implements only ``map``.

Executors are a plugin kind (``register_executors``): ``host.create("executor", "ray", ...)``.
"""

from __future__ import annotations

import os
from abc import abstractmethod
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, Self, TypeVar

from pydantic import BaseModel, ConfigDict

from rtlforge.core.hookspecs import PluginKind
from rtlforge.core.interfaces import Plugin

T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True)
class WorkerServices:
    """What a remote executor's worker offers the work it rebuilds.

    ``cache`` is a result store shared by every worker of the executor (a
    :class:`~rtlforge.validate.cache.ResultCache`), or None when the executor has none: work that
    caches (validation) then falls back to what its spec names.
    """

    cache: Any = None


class WorkSpec(BaseModel):
    """A picklable recipe for a batch's per-item function, rebuilt where the batch runs.

    Subclasses hold only plain data (names, options, paths) and build the plugin host, pipeline
    or reward they need in :meth:`build`. A worker builds each distinct spec once per process and
    reuses the function for every item of that spec, so ``build`` may be slow; the function it
    returns must be safe to call from one thread at a time.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    @abstractmethod
    def build(self, services: WorkerServices) -> Callable[[Any], Any]:
        """The per-item function, constructed in the worker's process."""

    def key(self) -> str:
        """What identifies the built function in a worker's per-process table."""
        cls = type(self)
        return f"{cls.__module__}.{cls.__qualname__}:{self.model_dump_json()}"


@dataclass(frozen=True)
class Work(Generic[T, R]):
    """One batch's job: the live function, how to rebuild it elsewhere, and what a lost item is.

    ``fn`` serves executors in this process. ``spec`` (None: the work cannot leave this process)
    serves remote ones. ``lost(item, reason)`` is the result of an item whose worker died more
    often than the executor retries: it must say "infrastructure failure" (an ``infra_error``
    report, an abstaining reward), never a verdict about the item. Without it, a lost item makes
    ``run`` raise :class:`~rtlforge.core.errors.WorkerLostError`.
    """

    fn: Callable[[T], R]
    spec: WorkSpec | None = None
    lost: Callable[[T, str], R] | None = None


class Executor(Plugin):
    """Runs a batch of independent items; results come back in input order.

    ``map`` is what every executor implements. ``run`` takes a :class:`Work` and defaults to
    mapping its live function; a remote executor overrides it to ship ``work.spec`` instead.
    """

    name: ClassVar[str]

    @abstractmethod
    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> Iterator[R]:
        """Apply ``fn`` to each item in this process's workers; results in input order."""

    def run(self, work: Work[T, R], items: Sequence[T]) -> list[R]:
        """Results of ``work`` on each item, in order (a remote executor rebuilds it there)."""
        return list(self.map(work.fn, items))

    def close(self) -> None:
        """Release the workers (a no-op for executors that hold none)."""
        return None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class SerialExecutor(Executor):
    """Runs jobs one by one in the caller's thread (debugging, deterministic tests)."""

    name: ClassVar[str] = "serial"

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> Iterator[R]:
        return map(fn, items)


class ThreadExecutor(Executor):
    """A local thread pool.

    Args:
        workers: threads (default: the CPU count; the tools' subprocesses are the bottleneck and
            release the GIL while they run).
    """

    name: ClassVar[str] = "thread"

    def __init__(self, workers: int | None = None) -> None:
        self.workers = max(1, workers or os.cpu_count() or 1)
        self._pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="rtlforge")

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> Iterator[R]:
        return self._pool.map(fn, items)

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


#: The executor kind, declared to every host next to the interfaces' built-in kinds.
EXECUTOR_KIND = PluginKind("executor", Executor, "register_executors",
                           "spreads batches of validation, PPA and reward work over workers")
