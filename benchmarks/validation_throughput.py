"""Validation throughput and sandbox overhead.

Measures, in one run on the bundled suite:
- raw tool time: iverilog + vvp called directly with subprocess (no sandbox, no pipeline);
- the same work through the pipeline (gate, bubblewrap jail per tool run, instrumentation,
  judging), cold: simulation only, and the default lint + simulation (one shared compile);
- the gate's own cost per candidate (static check + containment, in its worker process);
- a cache hit;
- validate_many throughput (candidates/s), cold vs cached.

"Cold" means nothing is reused between candidates: each repeat gets a fresh candidate text (a
comment differs), so neither the result cache nor the gate's memo can answer.

Run: `make bench` or `.venv/bin/python benchmarks/validation_throughput.py [--repeats N]`.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import structlog

from rtlforge.core.executor import ThreadExecutor
from rtlforge.core.models import Candidate, SourceFile, Task
from rtlforge.core.plugins import PluginHost
from rtlforge.tasks.loader import load_tasks
from rtlforge.validate.cache import MemoryCache
from rtlforge.validate.pipeline import Pipeline

ROOT = Path(__file__).resolve().parents[1]


def raw_tool_seconds(task: Task) -> float:
    """iverilog + vvp directly, as a user would without rtlforge."""
    with tempfile.TemporaryDirectory() as tmp:
        wd = Path(tmp)
        names = []
        for f in (*task.golden, *task.testbench, *task.support):
            (wd / f.name).write_text(f.content)
            names.append(f.name)
        hdl = [n for n in names if n.endswith((".v", ".sv"))]
        start = time.perf_counter()
        subprocess.run(["iverilog", "-g2012", "-o", "sim.vvp", *hdl], cwd=wd, check=True,
                       capture_output=True)
        subprocess.run(["vvp", "-n", "sim.vvp"], cwd=wd, check=True, capture_output=True)
        return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    # This script is the host application: it decides that library events stay quiet.
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))

    tasks = load_tasks(ROOT / "examples" / "tasks")
    host = PluginHost()
    pairs = [(t, Candidate(files=t.golden)) for t in tasks]

    # Per-candidate latency, serial; raw and pipelined runs interleaved so drift hits both.
    sim_only = Pipeline.build(host, lint=False, cache=MemoryCache(0))
    default = Pipeline.build(host, cache=MemoryCache(0))
    raw, sim_piped, default_piped, gate = [], [], [], []
    for rep in range(args.repeats + 1):
        for task, cand in pairs:
            fresh = [Candidate(files=tuple(
                SourceFile(name=f.name, content=f"{f.content}\n// {label} {rep}\n")
                for f in cand.files)) for label in ("sim", "default", "gate")]
            t_raw = raw_tool_seconds(task)
            start = time.perf_counter()
            report = sim_only.validate(task, fresh[0])
            t_sim = time.perf_counter() - start
            assert report.passed, (task.id, report.to_summary())
            start = time.perf_counter()
            report = default.validate(task, fresh[1])
            t_default = time.perf_counter() - start
            assert report.passed, (task.id, report.to_summary())
            start = time.perf_counter()
            default.runner.gate.check(fresh[2].files, role="design",
                                      available=[f.name for f in fresh[2].files])
            default.runner.gate.contained(fresh[2].files, task.testbench, task.support)
            t_gate = time.perf_counter() - start
            if rep:  # the first round starts the jails' spawners and the gate's workers
                raw.append(t_raw)
                sim_piped.append(t_sim)
                default_piped.append(t_default)
                gate.append(t_gate)
    raw_med = statistics.median(raw)
    print(f"designs: {len(pairs)} bundled goldens x {args.repeats} repeats (after a warm-up)")
    print(f"raw iverilog+vvp                median {raw_med * 1e3:8.2f} ms")
    for label, times in (("pipeline sim only, cold", sim_piped),
                         ("pipeline lint+sim, cold", default_piped)):
        med = statistics.median(times)
        ratios = sorted(p / r for p, r in zip(times, raw, strict=True))
        print(f"{label:<31} median {med * 1e3:8.2f} ms  ratio {med / raw_med:5.2f}x "
              f"(per-candidate ratio median {statistics.median(ratios):5.2f}x)")
    print(f"gate per candidate (check+containment) median {statistics.median(gate) * 1e3:8.2f} ms")

    full = Pipeline.build(host)  # lint + sim, in-memory cache
    start = time.perf_counter()
    with ThreadExecutor(args.workers) as pool:
        cold = full.validate_many(pairs, executor=pool)
    cold_s = time.perf_counter() - start
    hits = []
    for task, cand in pairs * args.repeats:
        start = time.perf_counter()
        report = full.validate(task, cand)
        hits.append(time.perf_counter() - start)
        assert report.cached
    start = time.perf_counter()
    with ThreadExecutor(args.workers) as pool:
        full.validate_many(pairs, executor=pool)
    warm_s = time.perf_counter() - start
    assert all(r.passed for r in cold)
    print(f"validate_many lint+sim, {args.workers} workers: "
          f"cold {len(pairs) / cold_s:8.1f} cand/s, cached {len(pairs) / warm_s:10.1f} cand/s")
    print(f"cache hit                 median {statistics.median(hits) * 1e3:8.3f} ms")


if __name__ == "__main__":
    main()
