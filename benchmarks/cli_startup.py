"""What the command line costs before it does any work (issue 24, item 6).

One run interleaves, per repeat, each a fresh process timed from start to exit:

- bare: ``python -c pass`` (the interpreter alone);
- help: ``rtlforge --help``;
- plugins: ``rtlforge plugins``;
- help, no manifest: ``rtlforge --help`` with ``RTLFORGE_PLUGIN_CACHE=off``, so every plugin is
  imported, as before the plugin manifest (the first run after an install pays this once);
- validate: ``rtlforge validate --json --task TASK GOLDEN`` (default:
  ``examples/tasks/add8_carry``, an 8-bit adder whose testbench checks all 131,072 input
  combinations), also reported as its time outside the stages it prints (start-up, set-up,
  report and exit: rtlforge's own cost, without the simulation's noise);
- raw: the tools that validation runs, by hand: ``iverilog -g2012`` + ``vvp -n`` on the same
  files in a temporary folder (``validation_overhead.raw_seconds``; no sandbox, no gate);

and reports medians and the ratios help / bare and validate / raw (the targets are help
<= 150 ms and validate <= 1.5x raw). ``--task examples/tasks/mux4`` times a 40 ms job instead.
``--baseline DIR`` also times help, plugins and validate with another checkout on
``PYTHONPATH`` (the code before a change), interleaved with the rest, so both see the same load.
The manifest is made and bytecode is cached once before the timed runs, as after any install
(``PYTHONDONTWRITEBYTECODE`` is dropped for the runs). Run with the rtlforge to measure on
``PYTHONPATH``:

    PYTHONPATH=$PWD .venv/bin/python benchmarks/cli_startup.py [--repeats 10] [--baseline DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from validation_overhead import raw_seconds

from rtlforge.tasks.loader import load_task

ROOT = Path(__file__).resolve().parents[1]


def timed(argv: list[str], env: dict[str, str], expect: int = 0) -> tuple[float, str]:
    """Seconds from start to exit, and what the command printed."""
    start = time.perf_counter()
    run = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    if run.returncode != expect:
        raise SystemExit(f"{' '.join(argv)} exited {run.returncode}:\n{run.stderr[-2000:]}")
    return seconds, run.stdout


def outside_stages(seconds: float, printed: str) -> float:
    """A ``validate --json`` run's time outside its stages (start-up, set-up, report, exit):
    steadier than the ratio, which also carries the simulation's noise."""
    return seconds - sum(stage["seconds"] for stage in json.loads(printed)["stages"])


def rtlforge_command() -> list[str]:
    """The console script beside this interpreter (what a user runs), else ``-m``."""
    script = Path(sys.executable).with_name("rtlforge")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "rtlforge.cli"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--task", type=Path, default=ROOT / "examples" / "tasks" / "add8_carry")
    parser.add_argument("--baseline", type=Path, help="another checkout to time alongside")
    args = parser.parse_args()
    if shutil.which("iverilog") is None or shutil.which("vvp") is None:
        print("skipped: iverilog/vvp not installed")
        return 0
    task = load_task(args.task)
    golden = [str(args.task / f.name) for f in task.golden]
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    off = {**env, "RTLFORGE_PLUGIN_CACHE": "off"}
    rtlforge = rtlforge_command()
    which = subprocess.run([sys.executable, "-c", "import rtlforge; print(rtlforge.__file__)"],
                           env=env, capture_output=True, text=True, check=True).stdout.strip()
    runs = {
        "bare": ([sys.executable, "-c", "pass"], env, 0),
        "help": ([*rtlforge, "--help"], env, 0),
        "plugins": ([*rtlforge, "plugins"], env, 0),
        "help, no manifest": ([*rtlforge, "--help"], off, 0),
        "validate": ([*rtlforge, "validate", "--json", "--task", str(args.task), *golden], env,
                     0),
    }
    if args.baseline is not None:
        before = {**env, "PYTHONPATH": str(args.baseline.resolve())}
        for name in ("help", "plugins", "validate"):
            runs[f"{name} (baseline)"] = (runs[name][0], before, 0)
    print(f"rtlforge: {' '.join(rtlforge)} ({which}); python {sys.version.split()[0]}")
    print(f"task: {task.id}; {args.repeats} repeats, interleaved; load average at start "
          f"{os.getloadavg()[0]:.2f}, {os.cpu_count()} CPUs")
    for argv, run_env, expect in runs.values():  # warm-up: disk caches, the manifest
        timed(argv, run_env, expect)
    raw_seconds(task)
    times: dict[str, list[float]] = {name: [] for name in (*runs, "raw")}
    outside: dict[str, list[float]] = {name: [] for name in runs if name.startswith("validate")}
    for _ in range(args.repeats):
        for name, (argv, run_env, expect) in runs.items():
            seconds, printed = timed(argv, run_env, expect)
            times[name].append(seconds)
            if name in outside:
                outside[name].append(outside_stages(seconds, printed))
        times["raw"].append(raw_seconds(task))
    med = {name: statistics.median(values) for name, values in times.items()}
    for name, values in times.items():
        print(f"{name:<22} median {med[name] * 1e3:8.1f} ms   min {min(values) * 1e3:8.1f} ms")
    print(f"help / bare              {med['help'] / med['bare']:6.2f}x  "
          f"(help {med['help'] * 1e3:.0f} ms; target <= 150 ms)")
    print(f"help, no manifest / help {med['help, no manifest'] / med['help']:6.2f}x")
    print(f"validate / raw           {med['validate'] / med['raw']:6.2f}x  (target <= 1.5x; "
          f"validate - raw = {(med['validate'] - med['raw']) * 1e3:.0f} ms)")
    for name, values in outside.items():
        print(f"{name + ' outside stages':<34} median {statistics.median(values) * 1e3:6.1f} ms"
              f"   min {min(values) * 1e3:6.1f} ms")
    if args.baseline is not None:
        print(f"baseline: help {med['help (baseline)'] / med['bare']:.2f}x bare, validate "
              f"{med['validate (baseline)'] / med['raw']:.2f}x raw")
    print(f"load average at end {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
