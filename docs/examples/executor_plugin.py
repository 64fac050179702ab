"""An executor plugin: batches on a local pool of worker processes.

An executor decides where a batch's items run. Threads (the built-in ``thread``) suit tool-bound
validation; processes suit work whose Python side is heavy. A process cannot receive a closure
over a live pipeline, so this executor ships the batch's :class:`~rtlforge.core.executor.WorkSpec`
instead, and each process rebuilds the function once and keeps it for every later item. The
same contract serves a cluster executor (the built-in ``ray``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, ClassVar, TypeVar

from rtlforge import hookimpl
from rtlforge.core.executor import Executor, Work, WorkerServices, WorkSpec
from rtlforge.core.hookspecs import Register

T = TypeVar("T")
R = TypeVar("R")

#: Functions this worker process built, by spec key: a process builds each spec once. It lives
#: only in the pool's worker processes, never in the host's.
_BUILT: dict[str, Callable[[Any], Any]] = {}


def _run_item(spec: WorkSpec, item: Any) -> Any:
    key = spec.key()
    if key not in _BUILT:
        _BUILT[key] = spec.build(WorkerServices())
    return _BUILT[key](item)


class ProcessExecutor(Executor):
    """Items that can travel (their work has a spec) run in worker processes; plain callables
    run on threads of this process, since a closure cannot be sent to another one."""

    name: ClassVar[str] = "process"

    def __init__(self, workers: int | None = None) -> None:
        """Args:
            workers: worker processes (and threads for plain callables); default: the CPUs.
        """
        self.workers = max(1, workers or os.cpu_count() or 1)
        self._threads = ThreadPoolExecutor(max_workers=self.workers)
        self._processes: ProcessPoolExecutor | None = None

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> Iterator[R]:
        return self._threads.map(fn, items)

    def run(self, work: Work[T, R], items: Sequence[T]) -> list[R]:
        if work.spec is None:
            return list(self.map(work.fn, items))
        if self._processes is None:
            self._processes = ProcessPoolExecutor(max_workers=self.workers)
        pool = self._processes
        futures = [pool.submit(_run_item, work.spec, item) for item in items]
        results: list[R] = []
        try:
            for item, future in zip(items, futures, strict=True):
                try:
                    results.append(future.result())
                except BrokenProcessPool as exc:
                    # a worker died: infrastructure, never a verdict about the item
                    if work.lost is None:
                        raise
                    results.append(work.lost(item, f"worker process died: {exc}"))
        finally:
            if any(isinstance(f.exception(), BrokenProcessPool) for f in futures
                   if f.done() and not f.cancelled()):
                # a broken pool takes no more work: the next batch starts a fresh one
                pool.shutdown(wait=False, cancel_futures=True)
                self._processes = None
        return results

    def close(self) -> None:
        self._threads.shutdown(wait=True, cancel_futures=True)
        if self._processes is not None:
            self._processes.shutdown(wait=True, cancel_futures=True)


@hookimpl
def register_executors(register: Register) -> None:
    register(ProcessExecutor)
