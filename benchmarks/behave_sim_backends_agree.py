"""Do the BEHAVE-Sim backends see the same thing? Every example design on every backend.

Checks each design under examples/behave/ with Icarus, Verilator and cocotb on the same small
stimulus and compares the verdicts and the raw transaction logs byte for byte (the workspaces
are kept under a scratch directory to read them). One Verilator build per design. Usage:
    python benchmarks/behave_sim_backends_agree.py [--backends icarus verilator cocotb]
        [--tasks DIR...] [--rtllm ROOT] [--extra FILE...]

``--tasks`` checks those task directories instead (an RTLLM task's design is RTLLM's
reference, found under ``--rtllm``); ``--extra`` adds designs to every task checked (e.g.
alternative implementations of one task).
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

from rtlforge.behave.rtllm import reference_candidate
from rtlforge.behave.sim.check import check_rtl
from rtlforge.behave.sim.stimulus import StimulusConfig
from rtlforge.behave.sim.task import load_behave_task
from rtlforge.behave.sim.verilator import VerilatorBuilds
from rtlforge.core.models import Candidate
from rtlforge.sandbox.runner import SandboxRunner

ROOT = Path(__file__).resolve().parent.parent / "examples" / "behave"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--backends", nargs="+", default=["icarus", "verilator", "cocotb"])
    parser.add_argument("--sequences", type=int, default=4)
    parser.add_argument("--transactions", type=int, default=24)
    parser.add_argument("--tasks", nargs="+", type=Path)
    parser.add_argument("--rtllm", type=Path)
    parser.add_argument("--extra", nargs="+", type=Path, default=[])
    args = parser.parse_args()
    task_dirs = args.tasks or sorted(p for p in ROOT.iterdir() if (p / "behave.toml").is_file())
    config = StimulusConfig(sequences=args.sequences, transactions=args.transactions)
    scratch = Path(tempfile.mkdtemp(prefix="behave-agree-"))
    differ = 0
    try:
        with VerilatorBuilds() as builds:
            for task_dir in task_dirs:
                task = load_behave_task(task_dir, rtllm_root=args.rtllm)
                designs = {d.name: Candidate.from_file(d)
                           for d in [*sorted(task_dir.glob("*.v")), *args.extra]}
                if task.rtllm is not None:
                    designs = {"rtllm_reference": reference_candidate(task), **designs}
                for name, candidate in designs.items():
                    cells, logs = [], set()
                    for backend in args.backends:
                        where = scratch / backend / task_dir.name / Path(name).stem
                        with SandboxRunner(base_dir=where, keep_workspaces=True) as runner:
                            result = check_rtl(task, candidate, runner=runner,
                                               stimulus=config, backend=backend,
                                               builds=builds)
                        kind = result.first_failure.kind if result.first_failure else "-"
                        cells.append(f"{result.verdict} {result.mismatches} {kind} "
                                     f"{sorted({v.kind for v in result.violations})}")
                        found = sorted(where.rglob("behave_log.txt"))
                        logs.add(found[0].read_text() if found else None)
                    same = len(logs) == 1 and None not in logs
                    differ += not same
                    print(f"| {task_dir.name}/{name} | " + " | ".join(cells) +
                          f" | {'identical' if same else 'DIFFERENT'} |", flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"backends {args.backends}: {differ} design(s) with different logs")


if __name__ == "__main__":
    main()
