"""Executors: how a batch of independent jobs is spread over workers.

The pipeline only needs ``map``; a Ray or Dask backend implements the same two methods. Validation
work is dominated by tool subprocesses, so threads are the right local default: no pickling, and
the GIL is released while waiting on pipes.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol, TypeVar

T = TypeVar("T")
R = TypeVar("R")


class Executor(Protocol):
    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> Iterator[R]:
        """Apply ``fn`` to each item; results come back in input order."""
        ...

    def close(self) -> None:
        ...


class SerialExecutor:
    """Runs jobs one by one in the caller's thread (debugging, deterministic tests)."""

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> Iterator[R]:
        return map(fn, items)

    def close(self) -> None:
        return None


class ThreadExecutor:
    """A local thread pool. ``workers`` defaults to the CPU count (tools are the bottleneck)."""

    def __init__(self, workers: int | None = None) -> None:
        self.workers = max(1, workers or os.cpu_count() or 1)
        self._pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="rtlforge")

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> Iterator[R]:
        return self._pool.map(fn, items)

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)

    def __enter__(self) -> ThreadExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
