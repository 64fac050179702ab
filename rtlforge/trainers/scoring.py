"""Scoring a batch of completions with a reward under a wall-clock budget.

Training must not stall on one candidate whose simulation hangs, nor learn from a score the
harness failed to produce: chunks are scored in parallel, and whatever is unfinished at the
deadline, raised or is not finite abstains (``None``, logged), never 0.
"""

from __future__ import annotations

import math
import queue
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor, Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import TYPE_CHECKING, Any

from rtlforge.core.log import get_logger
from rtlforge.trainers.errors import TrainerError

if TYPE_CHECKING:
    from rtlforge.core.interfaces import Reward

log = get_logger("rtlforge.trainers")

__all__ = ["score_completions"]


def _call_reward(reward: Reward, prompts: Sequence[str], completions: Sequence[str],
                 columns: Mapping[str, Sequence[Any]]) -> list[float | None]:
    scores = list(reward.score(prompts, completions, **columns))
    if len(scores) != len(completions):
        raise TrainerError(f"reward returned {len(scores)} scores for {len(completions)} "
                           "completions")
    out: list[float | None] = []
    for s in scores:
        if s is None:
            out.append(None)
            continue
        value = float(s)
        out.append(value if math.isfinite(value) else None)
    return out


def _daemon_submit(jobs: queue.Queue[Callable[[], None] | None], workers: int) -> None:
    def loop() -> None:
        while (job := jobs.get()) is not None:
            job()

    for _ in range(workers):
        threading.Thread(target=loop, name="rtlforge-score", daemon=True).start()


def score_completions(
    reward: Reward,
    prompts: Sequence[str],
    completions: Sequence[str],
    columns: Mapping[str, Sequence[Any]] | None = None,
    *,
    timeout_s: float,
    executor: Executor | None = None,
    chunk_size: int = 1,
    max_workers: int = 8,
) -> list[float | None]:
    """Score a batch, giving up on whatever is unfinished after ``timeout_s`` seconds (wall).

    The batch is split into chunks of ``chunk_size`` completions scored in parallel, so one hung
    candidate only costs its own chunk: unfinished chunks, chunks whose reward raised, and
    non-finite scores become None (abstain) with a logged reason, never 0. Rewards that compare
    completions within a batch need ``chunk_size=len(completions)``. Without an ``executor`` the
    work runs on daemon threads, so a reward that never returns cannot keep the process alive.
    """
    if len(prompts) != len(completions):
        raise ValueError(f"{len(prompts)} prompts but {len(completions)} completions")
    columns = dict(columns or {})
    for key, col in columns.items():
        if len(col) != len(completions):
            raise ValueError(f"column {key!r} has {len(col)} values for {len(completions)} "
                             "completions")
    n = len(completions)
    if n == 0:
        return []
    if chunk_size < 1:
        raise ValueError("chunk_size must be >= 1")
    spans = [(i, min(i + chunk_size, n)) for i in range(0, n, chunk_size)]

    def job(lo: int, hi: int) -> list[float | None]:
        return _call_reward(reward, prompts[lo:hi], completions[lo:hi],
                            {k: list(v[lo:hi]) for k, v in columns.items()})

    futures: list[Future[list[float | None]]] = []
    jobs: queue.Queue[Callable[[], None] | None] | None = None
    if executor is not None:
        futures = [executor.submit(job, lo, hi) for lo, hi in spans]
    else:
        jobs = queue.Queue()
        for lo, hi in spans:
            fut: Future[list[float | None]] = Future()

            def run(fut: Future[list[float | None]] = fut, lo: int = lo, hi: int = hi) -> None:
                if not fut.set_running_or_notify_cancel():
                    return
                try:
                    fut.set_result(job(lo, hi))
                except BaseException as exc:  # noqa: BLE001 - handed to the waiting caller
                    fut.set_exception(exc)

            futures.append(fut)
            jobs.put(run)
        workers = min(max_workers, len(spans))
        for _ in range(workers):
            jobs.put(None)  # one stop marker per worker, after all the work
        _daemon_submit(jobs, workers)

    deadline = time.monotonic() + timeout_s
    out: list[float | None] = [None] * n
    reasons: dict[str, int] = {}
    for (lo, hi), fut in zip(spans, futures, strict=True):
        try:
            scores = fut.result(timeout=max(0.0, deadline - time.monotonic()))
        except FutureTimeout:
            fut.cancel()
            reasons["timeout"] = reasons.get("timeout", 0) + (hi - lo)
            log.warning("reward_timeout", reward=getattr(reward, "name", "?"),
                        samples=list(range(lo, hi)), timeout_s=timeout_s)
            continue
        except Exception as exc:  # noqa: BLE001 - an infrastructure failure: abstain
            reasons["error"] = reasons.get("error", 0) + (hi - lo)
            log.warning("reward_error", reward=getattr(reward, "name", "?"),
                        samples=list(range(lo, hi)), error=f"{type(exc).__name__}: {exc}")
            continue
        out[lo:hi] = scores
    if reasons:
        log.info("reward_abstained", reward=getattr(reward, "name", "?"), **reasons)
    return out
