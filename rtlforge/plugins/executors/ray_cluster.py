"""The ``ray`` executor: validation, BEHAVE checks and reward batches spread over a Ray cluster.

Why actors, not tasks: a worker must rebuild the plugin host, the pipeline (validators, sandbox
runner, gate workers) or the reward from a :class:`~rtlforge.core.executor.WorkSpec` once per
process and keep it; a stateless Ray task would rebuild it per item, and Ray's task-level
process reuse gives no place to keep it without a module global. So the executor starts one
actor per CPU (``workers``), each holding a table of the functions it built, and feeds every
actor ``in_flight`` items at a time (one running, the next already queued, which hides the
round trip).

A worker that dies (OOM kill, a crashed node, ``SIGKILL``) is restarted by Ray; the items it
held are resubmitted, each at most ``max_retries`` times, and an item that still cannot finish
becomes what its work says a lost item is (``infra_error`` for validation, an abstaining reward),
never a verdict. An exception the work itself raises is re-raised, as with a thread pool.

The shared result cache is a store actor on the driver's node (``shared_cache``): workers on
every node ask it before validating, so a candidate validated on one node is a hit on another,
without a network file system. ``cache_path`` makes that store a SQLite file on the driver's
disk (persistent across runs); without it the store lives in memory for the executor's
lifetime. See docs/ray.md for the reasons (SQLite's WAL does not work over NFS).

Ray is imported on first use, so the plugin costs nothing in a host that never asks for it; a
missing ``ray`` is a :class:`~rtlforge.core.errors.ConfigError` naming the extra to install.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, ClassVar, TypeVar

from rtlforge.core.errors import ConfigError, WorkerLostError
from rtlforge.core.executor import Executor, ThreadExecutor, Work, WorkerServices, WorkSpec
from rtlforge.core.hookspecs import Register, hookimpl
from rtlforge.core.log import get_logger
from rtlforge.core.models import ValidationReport

log = get_logger("rtlforge.executors.ray")

T = TypeVar("T")
R = TypeVar("R")

INSTALL_HINT = "pip install 'rtlforge[ray]'"


def import_ray() -> Any:
    """The ``ray`` module, or a ConfigError that says how to install it."""
    try:
        import ray
    except ImportError as exc:
        raise ConfigError(f"the 'ray' executor needs ray: {INSTALL_HINT} ({exc})") from exc
    return ray


class _Worker:
    """One worker process: builds each work spec once and applies it to items.

    It takes no constructor arguments: Ray keeps those of a restartable actor in its object
    store and warns that a restart fails once they are gone. The worker finds its executor's
    store by name instead: it is ``<prefix>-worker-<n>`` and the store ``<prefix>-store``.
    """

    def __init__(self) -> None:
        ray = import_ray()
        prefix = str(ray.get_runtime_context().get_actor_name()).rsplit("-worker-", 1)[0]
        try:
            store = ray.get_actor(f"{prefix}-store")
        except ValueError:  # the executor shares no cache
            store = None
        self._services = WorkerServices(cache=_StoreClient(store) if store is not None else None)
        self._built: dict[str, Callable[[Any], Any]] = {}

    def pid(self) -> int:
        return os.getpid()

    def call(self, key: str, spec: WorkSpec, item: Any) -> Any:
        fn = self._built.get(key)
        if fn is None:
            fn = self._built[key] = spec.build(self._services)
        return fn(item)


class _Store:
    """The shared result store: a SQLite file on this node's disk, or memory."""

    def __init__(self, path: str | None) -> None:
        from rtlforge.validate.cache import MemoryCache, ResultCache, SQLiteCache

        self._cache: ResultCache = SQLiteCache(path) if path else MemoryCache()

    def get(self, key: str) -> ValidationReport | None:
        return self._cache.get(key)

    def put(self, key: str, report: ValidationReport) -> None:
        self._cache.put(key, report)


class _StoreClient:
    """A :class:`~rtlforge.validate.cache.ResultCache` in a worker, backed by the store actor.

    ``put`` waits for the store, so a report the driver has received is a hit for every item
    submitted after it. A store that is gone (its node died) is a cache miss, never a failed
    validation: the cache only saves work.
    """

    def __init__(self, store: Any) -> None:
        self._store = store
        self._ray = import_ray()

    def get(self, key: str) -> ValidationReport | None:
        try:
            result: ValidationReport | None = self._ray.get(self._store.get.remote(key))
        except self._ray.exceptions.RayError as exc:
            log.warning("ray_cache_store_unavailable", error=type(exc).__name__)
            return None
        return result

    def put(self, key: str, report: ValidationReport) -> None:
        try:
            self._ray.get(self._store.put.remote(key, report))
        except self._ray.exceptions.RayError as exc:
            log.warning("ray_cache_store_unavailable", error=type(exc).__name__)


class RayExecutor(Executor):
    """Runs :class:`Work` on actors of a Ray cluster (see the module docstring for the design).

    Args:
        address: a cluster to join (``"auto"``, ``"ray://head:10001"``); None uses the Ray
            already initialised in this process, else starts a local one with ``num_cpus``.
        workers: actors (default: the cluster's CPUs).
        num_cpus: CPUs of the local Ray this executor starts when none is running.
        max_retries: resubmissions of an item whose worker died.
        in_flight: items queued per actor.
        shared_cache: keep a result store on the driver's node that every worker reads and
            writes, so a candidate validated on one node is a hit on another.
        cache_path: a SQLite file on the driver's local disk for that store (None: in memory).
        runtime_env: Ray's runtime environment for the workers (e.g. ``env_vars``).
        local_workers: threads for :meth:`map`, which runs plain callables on the driver (a
            closure over a live pipeline cannot travel; work that can travel goes through
            :meth:`run`).
        restart_timeout_s: how long a dead worker may take to come back before its slot is
            dropped (with every slot dropped, the items left are lost: ``infra_error``).
    """

    name: ClassVar[str] = "ray"

    def __init__(self, address: str | None = None, workers: int | None = None, *,
                 num_cpus: int | None = None, max_retries: int = 2, in_flight: int = 2,
                 shared_cache: bool = True, cache_path: str | None = None,
                 runtime_env: dict[str, Any] | None = None,
                 local_workers: int | None = None, restart_timeout_s: float = 120.0) -> None:
        if max_retries < 0:
            raise ValueError(f"max_retries must be at least 0, not {max_retries}")
        if in_flight < 1:
            raise ValueError(f"in_flight must be at least 1, not {in_flight}")
        if workers is not None and workers < 1:
            raise ValueError(f"workers must be at least 1, not {workers}")
        self._ray = import_ray()  # fail now, not at the first batch
        self.address = address
        self.workers = workers
        self.num_cpus = num_cpus
        self.max_retries = max_retries
        self.in_flight = in_flight
        self.shared_cache = shared_cache
        self.cache_path = cache_path
        self.runtime_env = runtime_env
        self.local_workers = local_workers
        self.restart_timeout_s = restart_timeout_s
        self._actors: list[Any] = []
        self._store: Any = None
        self._local: ThreadExecutor | None = None
        self._started_ray = False
        self._lock = threading.Lock()

    # ---------------------------------------------------------------- life cycle

    def _start(self) -> list[Any]:
        with self._lock:
            if self._actors:
                return self._actors
            ray = self._ray
            if not ray.is_initialized():
                # the library stays silent: Ray's own log handler and worker echo stay off
                ray.init(address=self.address, num_cpus=self.num_cpus,
                         include_dashboard=False, log_to_driver=False, configure_logging=False)
                self._started_ray = True
            prefix = f"rtlforge-{uuid.uuid4().hex[:12]}"
            if self.shared_cache:
                from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

                here = ray.get_runtime_context().get_node_id()
                self._store = ray.remote(_Store).options(
                    name=f"{prefix}-store", num_cpus=0,
                    scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=here, soft=False),
                ).remote(self.cache_path)
            count = self.workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
            options: dict[str, Any] = {"num_cpus": 1, "max_restarts": -1, "max_task_retries": 0}
            if self.runtime_env is not None:
                options["runtime_env"] = self.runtime_env
            actor = ray.remote(_Worker)
            self._actors = [actor.options(name=f"{prefix}-worker-{n}", **options).remote()
                            for n in range(count)]
            log.info("ray_executor_started", workers=count, shared_cache=self.shared_cache)
            return self._actors

    def worker_pids(self) -> list[int]:
        """The process id of each worker (diagnostics, and tests that kill one), waiting for
        workers Ray is restarting."""
        ray = self._ray
        deadline = time.monotonic() + self.restart_timeout_s
        pids: list[int] = []
        for actor in self._start():
            while True:
                try:
                    pids.append(ray.get(actor.pid.remote()))
                    break
                except ray.exceptions.RayActorError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(_Batch.PING_EVERY_S)
        return pids

    def close(self) -> None:
        """Stop the workers and the store; shut Ray down if this executor started it."""
        with self._lock:
            ray = self._ray
            for actor in self._actors:
                ray.kill(actor)
            if self._store is not None:
                ray.kill(self._store)
            self._actors, self._store = [], None
            if self._local is not None:
                self._local.close()
                self._local = None
            if self._started_ray:
                ray.shutdown()
                self._started_ray = False

    # ---------------------------------------------------------------- batches

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> Iterator[R]:
        """Runs on the driver's threads: a plain callable may close over live objects."""
        with self._lock:
            if self._local is None:
                self._local = ThreadExecutor(self.local_workers)
            local = self._local
        return local.map(fn, items)

    def run(self, work: Work[T, R], items: Sequence[T]) -> list[R]:
        """Each item on a worker, rebuilt there from ``work.spec``; results in input order."""
        if work.spec is None:
            raise ConfigError(
                "this work cannot leave the process: it has no spec (a pipeline made from "
                "validator instances, or with a custom runner or cache object, has none; build "
                "it with Pipeline.build and a SQLite or memory cache)")
        items = list(items)
        if not items:
            return []
        return _Batch(self, work, items, self._start()).run()


class _Batch:
    """The scheduling of one :meth:`RayExecutor.run`: items in flight per worker, retries, and
    workers set aside while Ray restarts them (an item sent to a restarting actor fails at once,
    which would burn its retries in a few milliseconds)."""

    PING_EVERY_S = 0.2

    def __init__(self, pool: RayExecutor, work: Work[Any, Any], items: list[Any],
                 actors: list[Any]) -> None:
        self.pool, self.work, self.items, self.actors = pool, work, items, actors
        self.ray = pool._ray
        errors = self.ray.exceptions
        self.lost_errors = (errors.RayActorError, errors.WorkerCrashedError,
                            errors.ObjectLostError, errors.NodeDiedError)
        self.results: list[Any] = [None] * len(items)
        self.attempts = [0] * len(items)
        self.queue = deque(range(len(items)))
        self.running: dict[Any, tuple[int, int]] = {}
        self.load = [0] * len(actors)
        self.down_since: dict[int, float] = {}  # worker slot -> when it was seen dead
        self.pings: dict[Any, int] = {}  # a liveness probe of a worker being restarted
        self.next_ping: dict[int, float] = {}
        self.gone: set[int] = set()  # slots that did not come back within restart_timeout_s

    def run(self) -> list[Any]:
        assert self.work.spec is not None
        key, spec_ref = self.work.spec.key(), self.ray.put(self.work.spec)
        while self.queue or self.running:
            self._submit(key, spec_ref)
            self._probe()
            if len(self.gone) == len(self.actors):
                self._give_up_all("no worker came back within "
                                  f"{self.pool.restart_timeout_s:.0f} s of dying")
                break
            waiting = list(self.running) + list(self.pings)
            timeout = self.PING_EVERY_S if self.down_since else None
            ready, _ = (self.ray.wait(waiting, num_returns=1, timeout=timeout) if waiting
                        else ([], None))
            if not waiting:
                time.sleep(self.PING_EVERY_S)
            for ref in ready:
                if ref in self.pings:
                    self._pinged(ref)
                else:
                    self._finished(ref)
        return self.results

    def _submit(self, key: str, spec_ref: Any) -> None:
        while self.queue:
            live = [s for s in range(len(self.actors))
                    if s not in self.down_since and s not in self.gone]
            if not live:
                return
            slot = min(live, key=self.load.__getitem__)
            if self.load[slot] >= self.pool.in_flight:
                return
            index = self.queue.popleft()
            ref = self.actors[slot].call.remote(key, spec_ref, self.items[index])
            self.running[ref] = (index, slot)
            self.load[slot] += 1

    def _probe(self) -> None:
        now = time.monotonic()
        for slot, since in list(self.down_since.items()):
            if now - since > self.pool.restart_timeout_s:
                del self.down_since[slot]
                self.gone.add(slot)
            elif slot not in self.pings.values() and now >= self.next_ping.get(slot, 0.0):
                self.pings[self.actors[slot].pid.remote()] = slot

    def _pinged(self, ref: Any) -> None:
        slot = self.pings.pop(ref)
        try:
            self.ray.get(ref)
        except self.lost_errors:
            self.next_ping[slot] = time.monotonic() + self.PING_EVERY_S
            return
        self.down_since.pop(slot, None)

    def _finished(self, ref: Any) -> None:
        index, slot = self.running.pop(ref)
        self.load[slot] -= 1
        try:
            self.results[index] = self.ray.get(ref)
        except self.lost_errors as exc:
            self.down_since.setdefault(slot, time.monotonic())
            self.attempts[index] += 1
            log.warning("ray_worker_lost", item=index, attempt=self.attempts[index],
                        error=type(exc).__name__)
            if self.attempts[index] <= self.pool.max_retries:
                self.queue.append(index)
                return
            self._lose(index, f"the worker died on this item {self.attempts[index]} times "
                              f"({type(exc).__name__}); given up after "
                              f"{self.pool.max_retries} retries", exc)
        except self.ray.exceptions.RayTaskError as exc:  # the work's own error: as local
            raise exc.as_instanceof_cause() from None

    def _lose(self, index: int, reason: str, cause: BaseException | None = None) -> None:
        if self.work.lost is None:
            raise WorkerLostError(reason) from cause
        self.results[index] = self.work.lost(self.items[index], reason)

    def _give_up_all(self, reason: str) -> None:
        for index in [*self.queue, *(i for i, _ in self.running.values())]:
            self._lose(index, reason)
        self.queue.clear()
        self.running.clear()


@hookimpl
def register_executors(register: Register) -> None:
    register(RayExecutor)
