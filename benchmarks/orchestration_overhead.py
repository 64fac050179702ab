"""Overhead of the refinement loop per iteration, excluding generation and validation.

Two measurements, both with the scripted generator (no model) over the bundled tasks, each
task scripted as ``--wrong`` wrong answers and then its golden, so every task runs
``wrong + 1`` iterations:

- **instant pipeline** (with the default keyword retriever, and without): validation is a
  stand-in that answers at once (pass when the design is the golden, else a failing check),
  so the time left after subtracting the generator's and the stand-in's own time is the loop
  itself: role and prompt building, retrieval (leakage-guarded), feedback rendering, ranking,
  routing, the trace and decisions.jsonl;
- **real pipeline**: iverilog lint + simulation (``Pipeline.build``), to show where the time
  goes in a real run.

Time in the generator and in ``pipeline.validate`` is measured by wrapping both (the waveform
seam's re-simulation with a dump counts as validation), so the loop's share is
``total - generation - validation`` per iteration (median over tasks).

Run: `.venv/bin/python benchmarks/orchestration_overhead.py [--wrong 2] [--json OUT]
[--no-real]`. The issue's target: the loop itself under 5 ms per iteration, validation
dominating a real run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rtlforge.agents.base import Router
from rtlforge.agents.models import AgentAction
from rtlforge.agents.orchestrator import Orchestrator
from rtlforge.core.models import Feedback, Mismatch, StageResult, ValidationReport, Verdict
from rtlforge.core.plugins import PluginHost
from rtlforge.plugins.generators import scripted
from rtlforge.tasks.loader import load_tasks

ROOT = Path(__file__).resolve().parents[1]
TASKS = ROOT / "examples" / "tasks"


class _Timed:
    """Wraps an object and adds the wall time of one method's calls to ``seconds``."""

    def __init__(self, inner: Any, method: str) -> None:
        self._inner, self._method, self.seconds = inner, method, 0.0

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        if name != self._method:
            return attr

        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return attr(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - start
        return timed


class _FirstAgent(Router):
    """Stands in for the heuristic router where it is not installed: the first routed agent."""

    name = "first-agent"

    def decide(self, ctx: Any, agents: Sequence[str]) -> AgentAction:
        return AgentAction(agent=agents[0], reason="benchmark stand-in")


def make_router(host: PluginHost) -> Router:
    """The heuristic router when the host has it, else :class:`_FirstAgent`."""
    if "heuristic" in host.names("router"):
        return host.create("router", "heuristic")
    return _FirstAgent()


class InstantPipeline:
    """Validation with no tools: the golden passes, anything else fails one check."""

    validators: tuple[Any, ...] = ()
    runner = None

    def __init__(self, goldens: dict[str, str]) -> None:
        self.goldens = goldens

    def validate(self, task: Any, candidate: Any) -> ValidationReport:
        code = "\n".join(f.content for f in candidate.files).strip()
        if code == self.goldens[task.id]:
            return ValidationReport(verdict=Verdict.PASS, task_id=task.id, stages=(
                StageResult(name="simulate", verdict=Verdict.PASS),))
        fb = Feedback(category="functional", stage="simulate", message="1 failing check",
                      mismatches=(Mismatch(signal="y", expected="1", observed="0", raw="y"),))
        return ValidationReport(verdict=Verdict.FAIL, task_id=task.id, stages=(
            StageResult(name="simulate", verdict=Verdict.FAIL, feedback=(fb,)),))


def _timed_seam(seam: Any, clock: Any) -> Any:
    """``seam`` with its wall time added to ``clock.seconds`` (a :class:`_Timed`)."""
    def timed(*args: Any) -> Any:
        start = time.perf_counter()
        try:
            return seam(*args)
        finally:
            clock.seconds += time.perf_counter() - start
    return timed


def _script(tasks: list[Any], wrong: int) -> dict[str, Any]:
    out = {}
    for t in tasks:
        golden = "\n".join(f.content for f in t.golden).strip()
        # the header alone: outputs undriven, so it compiles and fails its checks
        broken = golden[:golden.index(");") + 2] + "\nendmodule"
        out[t.id] = {"*": [f"```verilog\n{broken}\n```"] * wrong + [golden]}
    return out


def run(pipeline_kind: str, wrong: int, *, retrieval: bool = True) -> dict[str, Any]:
    tasks = [t for t in load_tasks(TASKS) if t.golden]
    host = PluginHost.default()
    if "scripted" not in host.names("generator"):
        host.add_plugin(scripted, name="scripted")
    goldens = {t.id: "\n".join(f.content for f in t.golden).strip() for t in tasks}
    generator = _Timed(host.create("generator", "scripted", script=_script(tasks, wrong)),
                       "generate")
    if pipeline_kind == "instant":
        pipeline = _Timed(InstantPipeline(goldens), "validate")
    else:
        from rtlforge.validate.pipeline import Pipeline

        pipeline = _Timed(Pipeline.build(host), "validate")
    per_iteration, rows = [], []
    with tempfile.TemporaryDirectory() as tmp, Orchestrator(
            generator=generator, host=host, pipeline=pipeline,  # type: ignore[arg-type]
            router=make_router(host),
            max_iterations=wrong + 1, symbolic=False, run_dir=Path(tmp),
            retriever="keyword" if retrieval else None) as orch:
        if orch.waveform is not None:  # its re-simulation with a dump is validation time too
            orch.waveform = _timed_seam(orch.waveform, pipeline)
        for task in tasks:
            g0, v0 = generator.seconds, pipeline.seconds
            start = time.perf_counter()
            result = orch.solve(task)
            total = time.perf_counter() - start
            gen, val = generator.seconds - g0, pipeline.seconds - v0
            loop = total - gen - val
            iters = max(result.iterations, 1)
            per_iteration.append(loop / iters)
            rows.append({"task": task.id, "verdict": result.verdict.value,
                         "iterations": result.iterations, "total_ms": total * 1e3,
                         "generation_ms": gen * 1e3, "validation_ms": val * 1e3,
                         "loop_ms_per_iteration": loop / iters * 1e3})
    total = sum(r["total_ms"] for r in rows)
    return {"pipeline": pipeline_kind, "retrieval": retrieval, "tasks": len(rows),
            "wrong_answers": wrong,
            "passed": sum(r["verdict"] == "pass" for r in rows),
            "iterations": sum(r["iterations"] for r in rows),
            "loop_ms_per_iteration_median": statistics.median(per_iteration) * 1e3,
            "loop_ms_per_iteration_max": max(per_iteration) * 1e3,
            "validation_share": sum(r["validation_ms"] for r in rows) / total if total else 0.0,
            "generation_share": sum(r["generation_ms"] for r in rows) / total if total else 0.0,
            "rows": rows}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--wrong", type=int, default=2, help="wrong answers before the golden")
    ap.add_argument("--json", type=Path, help="write the results here")
    ap.add_argument("--no-real", action="store_true", help="skip the iverilog pipeline")
    args = ap.parse_args(argv)
    configs = [("instant", True), ("instant", False)] + ([] if args.no_real
                                                         else [("real", True)])
    results = [run(kind, args.wrong, retrieval=k) for kind, k in configs]
    head = ("pipeline", "retrieval", "tasks", "passed", "iters", "loop ms/iter (median)",
            "max", "validation", "generation")
    widths = (9, 9, 5, 6, 5, 22, 7, 10, 10)
    print(" ".join(h.ljust(w) if i < 2 else h.rjust(w)
                   for i, (h, w) in enumerate(zip(head, widths, strict=True))))
    for r in results:
        cells = (r["pipeline"], "keyword" if r["retrieval"] else "none", str(r["tasks"]),
                 str(r["passed"]), str(r["iterations"]),
                 f"{r['loop_ms_per_iteration_median']:.2f}",
                 f"{r['loop_ms_per_iteration_max']:.2f}", f"{r['validation_share']:.1%}",
                 f"{r['generation_share']:.1%}")
        print(" ".join(c.ljust(w) if i < 2 else c.rjust(w)
                       for i, (c, w) in enumerate(zip(cells, widths, strict=True))))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
