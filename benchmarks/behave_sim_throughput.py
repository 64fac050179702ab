"""BEHAVE-Sim throughput through Icarus: fixed cost per run and transactions per second.

Runs the rv_accum example's golden RTL at a few stimulus sizes through the sandbox (one
compile + one vvp each) and fits time = fixed + n / rate. Usage:
    python benchmarks/behave_sim_throughput.py [--sizes 100 1000 5000 20000]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from rtlforge.behave.sim.check import check_rtl
from rtlforge.behave.sim.stimulus import StimulusConfig
from rtlforge.behave.sim.task import load_behave_task
from rtlforge.core.models import Candidate
from rtlforge.sandbox.runner import SandboxRunner

ROOT = Path(__file__).resolve().parent.parent / "examples" / "behave"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--task", default="rv_accum")
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 5000, 20000])
    args = parser.parse_args()
    task = load_behave_task(ROOT / args.task)
    candidate = Candidate.from_file(ROOT / args.task / "golden.v")
    rows = []
    with SandboxRunner() as runner:
        check_rtl(task, candidate, runner=runner, stimulus=StimulusConfig(sequences=1,
                                                                          transactions=10))
        for n in args.sizes:
            config = StimulusConfig(sequences=max(1, n // 100), transactions=min(n, 100),
                                    edge_sweep=False)
            start = time.perf_counter()
            result = check_rtl(task, candidate, runner=runner, stimulus=config)
            total = time.perf_counter() - start
            rows.append({"transactions": result.metrics["transactions"],
                         "cycles": result.metrics.get("cycles"), "verdict": result.verdict,
                         "compile_s": result.metrics["compile_s"],
                         "sim_s": result.metrics["sim_s"], "total_s": round(total, 4)})
    (a, b), (c, d) = ((rows[0]["transactions"], rows[0]["total_s"]),
                      (rows[-1]["transactions"], rows[-1]["total_s"]))
    per_txn = (d - b) / (c - a) if c != a else 0.0
    summary = {"task": args.task, "runs": rows, "fixed_cost_s": round(b - per_txn * a, 4),
               "transactions_per_s": round(1 / per_txn) if per_txn > 0 else None}
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
