"""Where one default validation spends its time, segment by segment (issue 22, item 6).

``validation_overhead.py`` compares the whole against raw iverilog + vvp; this script wraps the
pipeline's own steps (leasing a jail, the security stage and its gate round trip, the jailed tool
runs) and reports the mean time each takes per validation over the RTLLM v2 references, so a
change to one step shows up in that step rather than in a noisy ratio. Run before and after a
change on the same machine:

    PYTHONPATH=$PWD .venv/bin/python benchmarks/validation_segments.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import collections
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rtlforge.core.models import Candidate, SourceFile, Task
from rtlforge.core.plugins import PluginHost
from rtlforge.sandbox import gate, pool, runner
from rtlforge.tasks.rtllm import load_rtllm
from rtlforge.validate import pipeline

DEFAULT_RTLLM = Path(__file__).resolve().parents[2] / "shared" / "benchmarks" / "rtllm"

#: (owner, attribute, label): the steps timed.
SEGMENTS = (
    (pipeline.Pipeline, "validate", "whole validation"),
    (pool.JailPool, "lease", "lease a jail"),
    (pool.PooledJail, "finish_reset", "wait for the last reset"),
    (pipeline.Pipeline, "_security_stage", "security stage"),
    (gate.Gate, "_run", "gate round trip"),
    (runner.SandboxRunner, "run", "jailed tool runs"),
)


def _timed(fn: Callable[..., Any], sink: list[float]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            sink.append(time.perf_counter() - start)
    return wrapper


def _candidate(task: Task, tag: int) -> Candidate:
    """The reference with a comment that differs per repeat, so no cache or memo answers."""
    return Candidate(files=tuple(SourceFile(name=f.name, content=f"{f.content}\n// {tag}")
                                 for f in task.golden), top=task.top)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rtllm", type=Path, default=DEFAULT_RTLLM)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    if not args.rtllm.is_dir():
        raise SystemExit(f"skipped: no RTLLM benchmark at {args.rtllm} (pass --rtllm DIR)")
    pipe = pipeline.Pipeline.build(PluginHost.default())
    tasks = [t for t in load_rtllm(args.rtllm) if t.golden
             and pipe.validate(t, _candidate(t, -1)).passed]
    times: dict[str, list[float]] = collections.defaultdict(list)
    for owner, name, label in SEGMENTS:
        # a plain function on the class: the wrapper receives self like the original
        setattr(owner, name, _timed(getattr(owner, name), times[label]))
    for repeat in range(args.repeats):
        for task in tasks:
            pipe.validate(task, _candidate(task, repeat))
    count = len(tasks) * args.repeats
    print(f"{len(tasks)} RTLLM references that pass, {args.repeats} repeats: mean per validation")
    for _, _, label in SEGMENTS:
        values = times[label]
        print(f"  {label:<26} {sum(values) / count * 1000:8.3f} ms   "
              f"({len(values) / count:.1f} calls)")
    pipe.runner.close()


if __name__ == "__main__":
    main()
