"""PPA flow time per design, with and without the persistent OpenSTA process; throughput.

Default mode: the PPA fixtures (``tests/fixtures/ppa``) plus the golden design of every bundled
task (``examples/tasks``). For each design the whole ``yosys-sta`` estimate runs ``--repeats``
times in each mode (after one warm-up that starts the persistent ``sta``); the median per design
is reported, with the OpenSTA share on its own, and the ratios are taken within this one run.

``--rtllm DIR``: throughput on the RTLLM v2 goldens with ``--workers`` threads, designs/min for
each yosys backend in ``--backends`` (``binary``: one yosys process per design; ``pyosys``: the
persistent in-jail worker), back to back in one run, with how many were measured and the
per-design reason for the others. Per-task clock hints come from the task metadata.

Run: `.venv/bin/python benchmarks/ppa_flow.py [--liberty PATH] [--repeats N]`, or
`.venv/bin/python benchmarks/ppa_flow.py --rtllm ../shared/benchmarks/rtllm --workers 2
[--liberty PATH] [--backends binary,pyosys]`.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import structlog

from rtlforge.core.models import Candidate
from rtlforge.plugins.estimators.ppa import PPAError, YosysStaPPA
from rtlforge.sandbox.runner import SandboxRunner
from rtlforge.tasks.loader import load_tasks

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "ppa"


def designs() -> list[tuple[str, str, Candidate]]:
    """(label, top, candidate) for the fixtures and the bundled golden designs."""
    out = [(p.stem, p.stem, Candidate.from_source(p.read_text(), name=p.name))
           for p in sorted(FIXTURES.glob("*.v")) if p.stem != "broken"]
    for task in load_tasks(ROOT / "examples" / "tasks"):
        if task.golden:
            out.append((task.id, task.top, Candidate(files=task.golden)))
    return out


def throughput(root: str, liberty: str | None, backends: list[str], workers: int) -> None:
    """Designs/min of the whole yosys-sta flow on the RTLLM goldens, per yosys backend."""
    from rtlforge.tasks.rtllm import load_rtllm

    tasks = [t for t in load_rtllm(root) if t.golden]
    summary = []
    for backend in backends:
        runner = SandboxRunner()  # one per backend: nothing of one run serves the other
        est = YosysStaPPA(liberty=liberty, yosys=backend)

        def one(task: Any, est: YosysStaPPA = est,
                runner: SandboxRunner = runner) -> tuple[str, str]:
            clock = task.metadata.get("ppa_clock")
            try:
                res = est.estimate(Candidate(files=task.golden), task.top, runner, clock=clock)
            except PPAError as exc:
                return task.id, f"not measured ({exc.stage}): {exc}"
            return task.id, (f"{res.area_um2:.3f} um2  {res.delay_ns:.4f} ns  "
                             f"{res.power_mw:.6f} mW  {res.cells} cells")

        # Warm-up per worker thread (liberty unpacked, sta and the yosys worker started).
        with ThreadPoolExecutor(workers) as pool:
            list(pool.map(one, tasks[:workers]))
        start = time.perf_counter()
        with ThreadPoolExecutor(workers) as pool:
            rows = list(pool.map(one, tasks))
        seconds = time.perf_counter() - start
        est.close()
        runner.close()
        measured = sum(1 for _, text in rows if not text.startswith("not measured"))
        print(f"\n== {est.yosys_version()} ({backend}), liberty {est.liberty[1].name}")
        for task_id, text in rows:
            print(f"  {task_id:<24}{text}")
        rate = len(rows) / seconds * 60
        summary.append((backend, est.yosys_version(), measured, len(rows), seconds, rate))
    print(f"\n{workers} workers, {len(tasks)} RTLLM goldens:")
    for backend, version, measured, total, seconds, rate in summary:
        print(f"  {backend:<7} {version:<14} {measured}/{total} measured  {seconds:6.1f} s  "
              f"{rate:6.1f} designs/min")
    if len(summary) > 1:
        print(f"  ratio {summary[-1][0]}/{summary[0][0]}: {summary[-1][5] / summary[0][5]:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--liberty", help="liberty file (default: the bundled generic library)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rtllm", help="RTLLM v2 root: measure throughput on its goldens")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--backends", default="binary,pyosys",
                        help="comma-separated yosys backends for --rtllm")
    args = parser.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    if args.rtllm:
        throughput(args.rtllm, args.liberty, args.backends.split(","), args.workers)
        return

    runner = SandboxRunner()
    warm = YosysStaPPA(liberty=args.liberty, persistent=True)
    cold = YosysStaPPA(liberty=args.liberty, persistent=False)
    items = designs()
    # Warm-up: unpack the liberty and start the persistent sta outside the measurement.
    warm.estimate(items[0][2], items[0][1], runner)

    rows = []
    print(f"liberty: {warm.liberty[1].name}   repeats: {args.repeats}")
    print(f"{'design':<14}{'area um2':>10}{'delay ns':>10}{'power mW':>11}"
          f"{'flow warm':>11}{'flow cold':>11}{'sta warm':>10}{'sta cold':>10}")
    for label, top, cand in items:
        times: dict[str, list[float]] = {"fw": [], "fc": [], "sw": [], "sc": []}
        try:
            for _ in range(args.repeats):
                for key, est in (("w", warm), ("c", cold)):
                    res = est.estimate(cand, top, runner)
                    times["f" + key].append(res.details["seconds"]["total"])
                    times["s" + key].append(res.details["seconds"]["sta"])
        except PPAError as exc:
            print(f"{label:<14} skipped: {exc}")
            continue
        med = {k: statistics.median(v) for k, v in times.items()}
        rows.append(med)
        print(f"{label:<14}{res.area_um2:>10.1f}{res.delay_ns:>10.3f}{res.power_mw:>11.5f}"
              f"{med['fw']:>10.3f}s{med['fc']:>10.3f}s{med['sw']:>9.3f}s{med['sc']:>9.3f}s")
    warm.close()
    if not rows:
        return
    total = {k: sum(r[k] for r in rows) for k in rows[0]}
    n = len(rows)
    print(f"\n{n} designs, medians per design, summed:")
    print(f"  whole flow: persistent {total['fw'] / n:.3f} s/design, one-shot "
          f"{total['fc'] / n:.3f} s/design -> one-shot / persistent = "
          f"{total['fc'] / total['fw']:.2f}x")
    print(f"  sta alone:  persistent {total['sw'] / n:.3f} s/design, one-shot "
          f"{total['sc'] / n:.3f} s/design -> one-shot / persistent = "
          f"{total['sc'] / total['sw']:.1f}x")


if __name__ == "__main__":
    main()
