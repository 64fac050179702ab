"""What a default validation costs against running iverilog + vvp by hand (issue 22, item 6).

Over the RTLLM v2 reference designs (``../shared/benchmarks/rtllm`` beside the checkout, or
``--rtllm DIR``), one run interleaves, per design and repeat:

- raw: ``iverilog -g2012`` + ``vvp -n`` on the reference and the testbench with ``subprocess``
  in a temporary directory (no sandbox, no gate, no pipeline);
- a cold default ``Pipeline.validate`` (``Pipeline.build(host)`` defaults: security gate,
  iverilog lint/compile, vvp simulation, persistent jails), each repeat with a fresh candidate
  text (a trailing comment differs) so neither the result cache nor the gate's memo can answer;
- the same with a bubblewrap jail per tool run (``SandboxRunner(persistent_jails=False)``, the
  behaviour before issue 22), for the before/after comparison;

and reports medians, the ratio of medians, and where the pipeline's time goes: the security
stage (the gate's round trips), the jailed tool runs (``SandboxRunner.run`` wall time), the
share of that which is the sandbox (the same runner starting ``/bin/true``, measured
interleaved too), and the rest (host work: workspace, instrumentation, judging, caching).

``--gate-sizes`` also times the gate alone on generated designs of 100, 1,000 and 5,000 lines,
to show whether its cost grows faster than the design.

Designs whose reference does not pass under the default pipeline are left out of both columns
(the ratio compares like with like) and counted. Run:

    PYTHONPATH=$PWD .venv/bin/python benchmarks/validation_overhead.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import structlog

from rtlforge.core.models import Candidate, SourceFile, Task
from rtlforge.core.plugins import PluginHost
from rtlforge.sandbox.runner import SandboxRunner
from rtlforge.tasks.rtllm import load_rtllm
from rtlforge.validate.cache import MemoryCache
from rtlforge.validate.pipeline import Pipeline

#: ``../shared`` beside the checkout, as CI and the other RTLLM benchmarks lay it out.
DEFAULT_RTLLM = Path(__file__).resolve().parents[2] / "shared" / "benchmarks" / "rtllm"


def raw_seconds(task: Task) -> float:
    """iverilog + vvp directly, as a user would without rtlforge."""
    with tempfile.TemporaryDirectory() as tmp:
        wd = Path(tmp)
        for f in (*task.golden, *task.testbench, *task.support):
            (wd / f.name).write_text(f.content)
        hdl = [f.name for f in (*task.golden, *task.testbench) if f.name.endswith((".v", ".sv"))]
        start = time.perf_counter()
        subprocess.run(["iverilog", "-g2012", "-o", "sim.vvp", *hdl], cwd=wd, check=False,
                       capture_output=True)
        subprocess.run(["vvp", "-n", "sim.vvp"], cwd=wd, check=False, capture_output=True)
        return time.perf_counter() - start


@contextmanager
def timed_runs(runner: SandboxRunner, sink: list[float]) -> Iterator[None]:
    """Record the wall time of every ``runner.run`` while inside."""
    original = runner.run

    def run(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            sink.append(time.perf_counter() - start)

    runner.run = run  # type: ignore[method-assign]
    try:
        yield
    finally:
        del runner.run


def jail_floor(runner: SandboxRunner) -> float:
    """One jailed ``/bin/true`` through the runner: what the sandbox alone costs per tool run."""
    with runner.workspace(prefix="rtlforge-floor-") as wd:
        start = time.perf_counter()
        runner.run(["true"], cwd=wd)
        return time.perf_counter() - start


def synthetic_design(lines: int) -> SourceFile:
    """A module of about ``lines`` lines: registers, adders and a case statement per block."""
    body = []
    blocks = max(1, lines // 10)
    for i in range(blocks):
        body += [f"  reg [7:0] r{i};",
                 "  always @(posedge clk) begin",
                 "    case (a[1:0])",
                 f"      2'd0: r{i} <= a + 8'd{i % 256};",
                 f"      2'd1: r{i} <= a ^ r{(i + 1) % blocks};",
                 f"      default: r{i} <= r{i} - 8'd1;",
                 "    endcase",
                 "  end",
                 f"  wire [7:0] w{i} = r{i} & a;",
                 ""]
    text = "module big(input clk, input [7:0] a, output [7:0] y);\n" + "\n".join(body) + \
        "\n  assign y = w0;\nendmodule\n"
    return SourceFile(name="big.v", content=text)


def gate_scaling(runner: SandboxRunner, sizes: list[int], repeats: int) -> None:
    for size in sizes:
        design = synthetic_design(size)
        n_lines = design.content.count("\n")
        times = {"check": [], "contained": []}
        for rep in range(repeats + 1):
            fresh = (SourceFile(name=design.name,
                                content=f"{design.content}// {rep} {time.time_ns()}\n"),)
            start = time.perf_counter()
            runner.gate.check(fresh, role="design", available=[design.name])
            t_check = time.perf_counter() - start
            start = time.perf_counter()
            runner.gate.contained(fresh, (), ())
            t_cont = time.perf_counter() - start
            if rep:
                times["check"].append(t_check)
                times["contained"].append(t_cont)
        check, cont = (statistics.median(times[k]) for k in ("check", "contained"))
        print(f"gate on {n_lines:6d} lines: check {check * 1e3:8.1f} ms, containment "
              f"{cont * 1e3:8.1f} ms, total {(check + cont) * 1e3:8.1f} ms "
              f"({(check + cont) * 1e6 / n_lines:6.1f} us/line)")


def median_ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1e3:8.2f} ms" if values else "     n/a"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rtllm", type=Path, default=DEFAULT_RTLLM)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--limit", type=int, default=0, help="only the first N designs")
    parser.add_argument("--gate-sizes", default="100,1000,5000",
                        help="design sizes (lines) for the gate-scaling table; empty: skip")
    args = parser.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    if not args.rtllm.is_dir():
        print(f"skipped: no RTLLM benchmark at {args.rtllm} (pass --rtllm DIR)")
        return 0
    tasks = load_rtllm(args.rtllm)
    if args.limit:
        tasks = tasks[: args.limit]
    host = PluginHost()
    pipeline = Pipeline.build(host, cache=MemoryCache(0))
    runner = pipeline.runner
    per_run = Pipeline.build(host, cache=MemoryCache(0),
                             runner=SandboxRunner(persistent_jails=False))

    # Warm-up: find which references pass, start the spawners and gate workers.
    usable = []
    for task in tasks:
        report = pipeline.validate(task, Candidate(files=task.golden))
        per_run.validate(task, Candidate(files=task.golden))
        if report.passed:
            usable.append(task)
    print(f"load average at start: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f}, "
          f"{os.cpu_count()} CPUs")
    print(f"designs: {len(usable)} of {len(tasks)} RTLLM references pass the default pipeline "
          f"(the rest are left out); {args.repeats} repeats, interleaved")

    raw: list[float] = []
    piped: list[float] = []
    before: list[float] = []
    floor_before: list[float] = []
    gate: list[float] = []
    tools: list[float] = []
    floor: list[float] = []
    n_runs: list[int] = []
    for rep in range(args.repeats):
        for task in usable:
            cand = Candidate(files=tuple(
                SourceFile(name=f.name, content=f"{f.content}\n// cold {rep} {time.time_ns()}\n")
                for f in task.golden))
            raw.append(raw_seconds(task))
            start = time.perf_counter()
            report = per_run.validate(task, cand.model_copy(update={"files": tuple(
                SourceFile(name=f.name, content=f.content + "// per-run\n")
                for f in cand.files)}))
            before.append(time.perf_counter() - start)
            assert report.passed and not report.cached, (task.id, report.to_summary())
            runs: list[float] = []
            with timed_runs(runner, runs):
                start = time.perf_counter()
                report = pipeline.validate(task, cand)
                piped.append(time.perf_counter() - start)
            assert report.passed, (task.id, report.to_summary())
            assert not report.cached
            gate.append(sum(s.seconds for s in report.stages if s.name == "security"))
            tools.append(sum(runs))
            n_runs.append(len(runs))
            floor.append(jail_floor(runner))
            floor_before.append(jail_floor(per_run.runner))

    raw_med, piped_med = statistics.median(raw), statistics.median(piped)
    per = sorted(p / r for p, r in zip(piped, raw, strict=True))
    runs_med = statistics.median(n_runs)
    floor_med = statistics.median(floor)
    tool_med = statistics.median(tools)
    rest = [p - g - t for p, g, t in zip(piped, gate, tools, strict=True)]
    print(f"raw iverilog+vvp                 median {median_ms(raw)}")
    print(f"default Pipeline.validate, cold  median {median_ms(piped)}  "
          f"ratio {piped_med / raw_med:5.2f}x (per-design ratio median "
          f"{statistics.median(per):5.2f}x)")
    print(f"same, a jail per tool run (before) median {median_ms(before)}  ratio "
          f"{statistics.median(before) / raw_med:5.2f}x; jailed /bin/true "
          f"{median_ms(floor_before)} per tool run")
    print("breakdown of the pipeline with persistent jails (medians):")
    print(f"  security stage (gate)          {median_ms(gate)}")
    print(f"  jailed tool runs ({runs_med:.0f} per validation) {median_ms(tools)}")
    print(f"    of which sandbox (jailed /bin/true {floor_med * 1e3:.2f} ms x {runs_med:.0f})"
          f" {floor_med * runs_med * 1e3:8.2f} ms")
    print(f"    tool work inside             {(tool_med - floor_med * runs_med) * 1e3:8.2f} ms")
    print(f"  host overhead (the rest)       {median_ms(rest)}")
    print(f"  sandbox alone vs raw: (tool runs) / raw = {tool_med / raw_med:5.2f}x")
    print(f"load average at end: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f}")

    sizes = [int(s) for s in args.gate_sizes.split(",") if s.strip()]
    if sizes:
        gate_scaling(runner, sizes, args.repeats)
    runner.close()
    per_run.runner.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
