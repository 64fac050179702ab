"""Z3 query times of the goal-guided search (rtlforge.behave.sim.guided), per query and per goal.

Two sets of goals: (1) what BEHAVE-Sim actually asks on the bundled example tasks
(examples/behave/*): the golden's goals the baseline stimulus (50 x 100, seed 0) missed, searched
as `rtlforge behave check` does (per-query cap 250 ms, --steps transactions from reset); (2)
every goal, hit or not, of the same goldens, of the docs' example models and of the two key
locks of benchmarks/behave_model_throughput.py, each searched from reset with a generous cap
(--cap-ms), so the distribution covers easy and deep goals, branch outcomes and fail() sites.
"Single-step" is the first query of a goal (sequence length 1), "multi-step" each further query
(lengths 2..steps, incremental on the same solver). Times are Z3 `check()` wall-clock only
(encoding and replay excluded); "goal total" adds all lengths tried for one goal. Per model it
also prints the whole search's wall-clock (the unrolled encoding is shared by all its goals).

Run: `PYTHONPATH=. .venv/bin/python benchmarks/behave_guided_z3.py [--steps K] [--cap-ms MS]`.
Needs z3-solver.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

from rtlforge.behave.model import BehaviorModel, load_model
from rtlforge.behave.sim.golden import golden_model
from rtlforge.behave.sim.guided import (
    GuidedConfig,
    QueryOutcome,
    _Unrolling,
    directed_search,
    model_goals_hit,
)
from rtlforge.behave.sim.stimulus import StimulusConfig, generate_stimulus
from rtlforge.behave.sim.task import load_behave_task

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def row(label: str, values: list[float]) -> str:
    if not values:
        return f"| {label} | 0 | | | | |"
    return (f"| {label} | {len(values)} | {percentile(values, 0.5):.2f} | "
            f"{percentile(values, 0.9):.2f} | {percentile(values, 0.99):.2f} | "
            f"{max(values):.2f} |")


def table(title: str, outcomes: list[QueryOutcome]) -> None:
    single = [q.query_ms[0] for q in outcomes if q.query_ms]
    multi = [t for q in outcomes for t in q.query_ms[1:]]
    totals = [sum(q.query_ms) for q in outcomes if q.query_ms]
    deep = [sum(q.query_ms) for q in outcomes if q.status == "hit" and q.steps >= 2]
    print(f"\n{title}: {len(outcomes)} goals, "
          + ", ".join(f"{k} {v}" for k, v in sorted(Counter(q.status for q in outcomes)
                                                     .items())))
    print("| queries | n | median ms | p90 ms | p99 ms | max ms |\n|---|---:|---:|---:|---:|---:|")
    print(row("single-step (length 1)", single))
    print(row("multi-step (each length >= 2)", multi))
    print(row("per goal (all lengths)", totals))
    print(row("per goal reached in >= 2 steps", deep))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--cap-ms", type=int, default=10_000)
    args = parser.parse_args()
    tasks = sorted(p.parent for p in (ROOT / "examples" / "behave").glob("*/behave.toml"))
    baseline: list[QueryOutcome] = []
    start = time.perf_counter()
    for directory in tasks:
        task = load_behave_task(directory)
        gold = golden_model(task)
        hit, fails, _ = model_goals_hit(task, gold, generate_stimulus(task, StimulusConfig()))
        got, _, refused = directed_search(
            task, gold, source="golden", branches_hit=hit, fails_hit=fails,
            config=GuidedConfig(steps=args.steps, timeout_ms=250),
            deadline=time.monotonic() + 60)
        baseline += got
        print(f"{task.id}: {len(gold.goals())} branch goals, {len(gold.ir.fails)} fail sites, "
              f"{len(got)} unhit by the baseline{'; ' + refused if refused else ''}")
    table("Goals the baseline stimulus missed (bundled tasks, cap 250 ms)", baseline)

    from behave_model_throughput import LOCKS, doc_models

    models: dict[str, tuple[object, BehaviorModel]] = {}
    for directory in tasks:
        task = load_behave_task(directory)
        models[task.id] = (task, golden_model(task))
    for name, src in {**doc_models(), **LOCKS}.items():
        models[name] = (None, load_model(src, name=name))
    every: list[QueryOutcome] = []
    for name, (task, model) in models.items():
        t0 = time.perf_counter()
        got, _, refused = directed_search(
            task, model, source="golden", branches_hit=set(), fails_hit=set(),  # type: ignore[arg-type]
            config=GuidedConfig(steps=args.steps, timeout_ms=args.cap_ms),
            deadline=time.monotonic() + 600)
        every += got
        wall = (time.perf_counter() - t0) * 1000
        slow = max((sum(q.query_ms) for q in got), default=0.0)
        print(f"{name}: {len(got)} goals, whole search {wall:.0f} ms (encoding, queries, "
              f"replays), slowest goal's queries {slow:.1f} ms{'; ' + refused if refused else ''}")
    print(f"\nencoding {args.steps} transactions from reset (no query):")
    for name, (_, model) in models.items():
        t0 = time.perf_counter()
        unrolled = _Unrolling(model, [])
        unrolled.step(args.steps - 1)
        print(f"  {name}: {(time.perf_counter() - t0) * 1000:.0f} ms")
    table(f"Every goal from reset (cap {args.cap_ms} ms, up to {args.steps} transactions)",
          every)
    fails = [q for q in every if q.kind == "fail"]
    table("of which fail() sites", fails)
    print(f"\ntotal wall-clock {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
