"""BEHAVE-Sim throughput, every backend in one run: fixed cost per check and transactions/s.

Checks the rv_accum example's golden RTL at a few stimulus sizes through the sandbox on
Icarus, Verilator (cold: a build for the size; cached: the same size with another seed, the
binary reused) and cocotb (Python driving the design on Icarus), and runs the golden behaviour
model (the interpreter) and ``check_model`` on the same workloads. Two markdown tables: end to
end (what a caller of ``check_rtl`` waits) and the simulator alone (compile + run seconds of
the tools, which is where the backends differ); a cell is the fastest of ``--repeat`` rounds
(the machine may be shared), each row is fitted as
``seconds = fixed + n / rate`` by least squares. ``--json`` writes the raw rows. Usage:
    python benchmarks/behave_sim_throughput.py [--sizes 100 1000 5000 20000] [--repeat 3]
        [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rtlforge.behave.sim.check import BehaveResult, check_model, check_rtl
from rtlforge.behave.sim.golden import golden_instance
from rtlforge.behave.sim.stimulus import StimulusConfig, generate_stimulus, input_values
from rtlforge.behave.sim.task import BehaveTask, load_behave_task
from rtlforge.behave.sim.verilator import VerilatorBuilds
from rtlforge.core.models import Candidate
from rtlforge.sandbox.runner import SandboxRunner

ROOT = Path(__file__).resolve().parent.parent / "examples" / "behave"


def workload(n: int, seed: int) -> StimulusConfig:
    return StimulusConfig(sequences=max(1, n // 100), transactions=min(n, 100),
                          edge_sweep=False, seed=seed)


def fit(points: list[tuple[int, float]]) -> tuple[float, float | None]:
    """(fixed seconds, transactions/s) of the least-squares line through (n, seconds)."""
    if len(points) < 2:
        return points[0][1], None
    mx = sum(n for n, _ in points) / len(points)
    my = sum(s for _, s in points) / len(points)
    sxx = sum((n - mx) ** 2 for n, _ in points)
    slope = sum((n - mx) * (s - my) for n, s in points) / sxx
    return my - slope * mx, (1 / slope if slope > 0 else None)


def timed(check: Callable[..., BehaveResult], *args: Any, **kwargs: Any,
          ) -> tuple[BehaveResult, float]:
    start = time.perf_counter()
    result = check(*args, **kwargs)
    return result, time.perf_counter() - start


def model_rate(task: BehaveTask, config: StimulusConfig) -> tuple[int, float]:
    """The golden model interpreted over the workload alone: (transactions, seconds)."""
    stim = generate_stimulus(task, config)
    inputs = [input_values(task, t) for t in stim.transactions]
    instance = golden_instance(task)
    start = time.perf_counter()
    instance.reset()
    for values in inputs:
        instance.process(values)
    return len(inputs), time.perf_counter() - start


MODEL_KINDS = ("model (interpreter)", "check_model")


def table(rows: list[dict[str, Any]], kinds: list[str], sizes: list[int], column: str,
          title: str) -> dict[str, dict[str, float | None]]:
    """Print one markdown table of ``column`` per kind and size, with the fitted line."""
    print()
    print(f"{title}:")
    print()
    print("| | " + " | ".join(f"{n} txn" for n in sizes) + " | fixed s | transactions/s |")
    print("|---|" + "---:|" * (len(sizes) + 2))
    out: dict[str, dict[str, float | None]] = {}
    for kind in kinds:
        mine = [min((r for r in rows if r["kind"] == kind and r["size"] == n),
                    key=lambda r: r[column]) for n in sizes]
        fixed, rate = fit([(r["transactions"], r[column]) for r in mine])
        out[kind] = {"fixed_s": fixed, "transactions_per_s": rate}
        speed = f"{rate:,.0f}" if rate else "-"
        cells = " | ".join(f"{r[column]:.4f}" for r in mine)
        print(f"| {kind} | {cells} | {max(fixed, 0):.3f} | {speed} |")
    print()
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--task", default="rv_accum")
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 5000, 20000])
    parser.add_argument("--backends", nargs="+", default=["icarus", "verilator", "cocotb"])
    parser.add_argument("--repeat", type=int, default=3,
                        help="Rounds; a cell is the fastest round (the cold build: one).")
    parser.add_argument("--json", type=Path, default=None, help="Also write the raw rows.")
    args = parser.parse_args()
    task = load_behave_task(ROOT / args.task)
    candidate = Candidate.from_file(ROOT / args.task / "golden.v")
    rows: list[dict[str, Any]] = []

    def record(kind: str, n_req: int, result: BehaveResult, seconds: float) -> None:
        if result.verdict != "pass":
            raise SystemExit(f"{kind} at {n_req}: {result.verdict}: {result.message}")
        rows.append({"kind": kind, "size": n_req,
                     "transactions": result.coverage.transactions,
                     "cycles": result.metrics.get("cycles"),
                     "compile_s": result.metrics.get("compile_s"),
                     "sim_s": result.metrics.get("sim_s"),
                     "cached": result.metrics.get("build_cached"),
                     "tool_s": round(float(result.metrics.get("compile_s", 0))
                                     + float(result.metrics.get("sim_s", 0)), 4),
                     "total_s": round(seconds, 4)})

    load_before = os.getloadavg()
    with SandboxRunner() as runner, VerilatorBuilds() as builds:
        check_rtl(task, candidate, runner=runner, stimulus=workload(10, 0))  # start the gate
        for rep in range(args.repeat):  # rounds over every size, so load drifts hit them all
            for n in args.sizes:
                for kind in args.backends:
                    if kind == "verilator":
                        runs = [("verilator (cold)", 0)] if rep == 0 else []
                        for label, seed in [*runs, ("verilator (cached)", rep + 1)]:
                            result, seconds = timed(
                                check_rtl, task, candidate, runner=runner,
                                stimulus=workload(n, seed), backend="verilator", builds=builds)
                            record(label, n, result, seconds)
                    else:
                        result, seconds = timed(check_rtl, task, candidate, runner=runner,
                                                stimulus=workload(n, rep), backend=kind)
                        record(kind, n, result, seconds)
                count, seconds = model_rate(task, workload(n, rep))
                rows.append({"kind": "model (interpreter)", "size": n, "transactions": count,
                             "total_s": round(seconds, 4)})
                result, seconds = timed(check_model, task, golden_instance(task),
                                        stimulus=workload(n, rep))
                record("check_model", n, result, seconds)
    load_after = os.getloadavg()

    kinds = list(dict.fromkeys(r["kind"] for r in rows))
    print(f"task {args.task}; load average {load_before[0]:.1f} -> {load_after[0]:.1f} on "
          f"{os.cpu_count()} CPUs")
    summary = {
        "end_to_end": table(rows, kinds, args.sizes, "total_s",
                            "End to end: seconds per check (stimulus, golden, sandbox, "
                            "simulator, judge)"),
        "simulator": table(rows, [k for k in kinds if k not in MODEL_KINDS], args.sizes,
                           "tool_s", "The simulator alone: compile/build + run seconds "
                           "(the tool runs in the sandbox, nothing else)"),
    }
    cycles: dict[int, int] = {}
    for r in rows:  # the first round's (seed 0) workloads
        if r["kind"] == "icarus":
            cycles.setdefault(r["size"], r["cycles"])
    if cycles:
        print("cycles per workload: " + ", ".join(f"{n}: {c}" for n, c in cycles.items()))
    sim = summary["simulator"]
    if sim.get("cocotb", {}).get("transactions_per_s"):
        print()
        base = sim["cocotb"]
        for kind in ("icarus", "verilator (cached)"):
            if sim.get(kind, {}).get("transactions_per_s"):
                ratio = sim[kind]["transactions_per_s"] / base["transactions_per_s"]
                print(f"simulator alone, {kind} vs cocotb: {ratio:.1f}x the transactions/s; "
                      f"fixed cost {max(sim[kind]['fixed_s'], 0):.3f} s vs "
                      f"{base['fixed_s']:.3f} s")
    if args.json is not None:
        args.json.write_text(json.dumps({"task": args.task, "rows": rows,
                                         "summary": summary}, indent=2))


if __name__ == "__main__":
    main()
