"""Validation throughput: the local thread pool vs the Ray executor, same CPUs, one run.

Both get 2 workers (threads; Ray actors on a local ``ray.init(num_cpus=2)`` cluster) and the
same batches, through ``Pipeline.validate_many``:

- cold: the bundled goldens, each repeat with a fresh comment, so no cache can answer (lint +
  simulation in the sandbox per item). Ray's store is off here: both sides do the same work.
- hot: the same batch again, every item a cache hit: the thread pool's memory cache, the
  driver pipeline's own cache (Ray: no dispatch at all), and a fresh driver pipeline whose items
  all go to the workers and hit Ray's shared store actor, which leaves what the executor and
  the store cost per item.

The per-item overhead is ``(Ray wall time - thread wall time) / items``. Ray's start (cluster,
actors, the first build of the pipeline in each worker) is reported apart: it is paid once per
executor, not per batch. The load average is printed before and after, since the machine may be
shared.

Run: ``.venv/bin/python benchmarks/ray_vs_threads.py [--repeats N] [--rounds R]`` (needs the
``ray`` extra). Each round validates a fresh batch on threads, then on Ray.
"""

from __future__ import annotations

import argparse
import logging
import os
import time
from pathlib import Path

import structlog

from rtlforge.core.executor import ThreadExecutor
from rtlforge.core.models import Candidate, SourceFile, Task, ValidationReport
from rtlforge.core.plugins import PluginHost
from rtlforge.tasks.loader import load_tasks
from rtlforge.validate.pipeline import Pipeline

ROOT = Path(__file__).resolve().parents[1]
WORKERS = 2


def fresh_batch(tasks: list[Task], repeats: int, label: str) -> list[tuple[Task, Candidate]]:
    return [(t, Candidate(files=tuple(SourceFile(name=f.name, content=f"{f.content}\n// {label} "
                                                 f"{rep}\n") for f in t.golden)))
            for rep in range(repeats) for t in tasks]


def timed(pipeline: Pipeline, pairs: list[tuple[Task, Candidate]],
          executor: object) -> tuple[float, list[ValidationReport]]:
    start = time.perf_counter()
    reports = pipeline.validate_many(pairs, executor=executor)  # type: ignore[arg-type]
    return time.perf_counter() - start, reports


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    # This script is the host application: it decides that library events stay quiet.
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    import ray

    from rtlforge.plugins.executors.ray_cluster import RayExecutor

    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    tasks = load_tasks(ROOT / "examples" / "tasks")
    host = PluginHost(allow=["iverilog"])
    env = {"env_vars": {"PYTHONPATH": str(ROOT)}}

    start = time.perf_counter()
    ray.init(num_cpus=WORKERS, include_dashboard=False, log_to_driver=False,
             configure_logging=False)
    print(f"ray.init (local cluster, {WORKERS} CPUs): {time.perf_counter() - start:.1f} s")
    for store in (False, True):
        pool = RayExecutor(workers=WORKERS, shared_cache=store, runtime_env=env)
        start = time.perf_counter()  # actors up and the pipeline built once in each worker
        timed(Pipeline.build(host, timeout=60), fresh_batch(tasks[:WORKERS], 1, f"warm{store}"),
              pool)
        name = "shared store on" if store else "shared store off"
        print(f"\n[{name}] Ray start (actors + first build in each): "
              f"{time.perf_counter() - start:.1f} s")
        threads = ThreadExecutor(WORKERS)
        local, remote = Pipeline.build(host, timeout=60), Pipeline.build(host, timeout=60)
        for round_ in range(args.rounds):  # interleaved, so drift in the load hits both
            cold = fresh_batch(tasks, args.repeats, f"cold{store}{round_}")
            t_cold, r_local = timed(local, cold, threads)
            ray_cold, r_remote = timed(remote, cold, pool)
            assert [r.verdict for r in r_remote] == [r.verdict for r in r_local]
            n = len(cold)
            print(f"  cold  {n} items  threads {t_cold:6.2f} s ({n / t_cold:5.2f}/s)   ray "
                  f"{ray_cold:6.2f} s ({n / ray_cold:5.2f}/s)   overhead/item "
                  f"{(ray_cold - t_cold) / n * 1e3:+7.1f} ms   load "
                  f"{os.getloadavg()[0]:.2f}")
        if store:
            # every item a hit. The driver's pipeline answers known pairs itself (no dispatch);
            # a fresh pipeline on the driver sends every item to a worker, whose hit comes from
            # the store actor: what the executor and the store cost per item
            t_hot, _ = timed(local, cold, threads)
            driver_hot, _ = timed(remote, cold, pool)
            ray_hot, r_hot = timed(Pipeline.build(host, timeout=60), cold, pool)
            hits = sum(r.cached for r in r_hot)
            print(f"  hot   {n} items  threads {t_hot * 1e3:6.1f} ms   ray, driver cache "
                  f"{driver_hot * 1e3:6.1f} ms   ray, store via workers {ray_hot * 1e3:6.1f} ms "
                  f"({n / ray_hot:6.1f}/s): overhead/item {(ray_hot - t_hot) / n * 1e3:+5.1f} ms"
                  f" (store hits: {hits}/{n})")
        threads.close()
        pool.close()
    ray.shutdown()
    print(f"\nload average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
