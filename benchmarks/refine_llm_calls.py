"""LLM calls per solved task with the symbolic tier on and off.

The task set: a few K-map / truth-table tasks built here (specs written for this benchmark,
testbenches checking every input combination against the table) plus the bundled tasks
(``examples/tasks``). The generator is the scripted one, answering every task like a model
that needs one correction: first a wrong design (the module header alone, its outputs
undriven), then a right one (for the table tasks, a hand-written expression; for the bundled
tasks, their golden). So a task the loop solves costs 2 LLM calls, and one the symbolic tier
solves costs none; validation is the real iverilog pipeline in both modes.

Run: `.venv/bin/python benchmarks/refine_llm_calls.py [--json OUT] [--no-bundled]`.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rtlforge.agents.orchestrator import Orchestrator
from rtlforge.agents.run import summarise_results
from rtlforge.core.models import Task
from rtlforge.core.plugins import PluginHost
from rtlforge.plugins.generators import scripted
from rtlforge.tasks.loader import load_tasks
from rtlforge.testing.builders import make_task
from rtlforge.validate.pipeline import Pipeline

sys.path.insert(0, str(Path(__file__).resolve().parent))  # a sibling script:
from orchestration_overhead import make_router

ROOT = Path(__file__).resolve().parents[1]
BUNDLED = ROOT / "examples" / "tasks"

KMAP4 = """Implement the circuit described by the Karnaugh map below.

            ab
   cd   00  01  11  10
   00 | 1 | 0 | 0 | 1 |
   01 | 0 | 0 | 0 | 0 |
   11 | 0 | 1 | 1 | 0 |
   10 | 1 | 0 | 0 | 1 |
"""
KMAP3 = """Implement the circuit described by the Karnaugh map below.

          a
   bc   0   1
   00 | 0 | 1 |
   01 | 0 | 1 |
   11 | 1 | 1 |
   10 | 0 | 0 |
"""
TRUTH3 = """The module should implement a combinational circuit for the following truth table:

 x3 | x2 | x1 | f
 0  | 0  | 0  | 0
 0  | 0  | 1  | 0
 0  | 1  | 0  | 1
 0  | 1  | 1  | 1
 1  | 0  | 0  | 0
 1  | 0  | 1  | 1
 1  | 1  | 0  | 0
 1  | 1  | 1  | 1
"""

#: (id, spec, inputs, output, the function read off the table by hand, its Verilog)
TABLES: tuple[tuple[str, str, tuple[str, ...], str, Callable[..., int], str], ...] = (
    ("kmap4_bcd", KMAP4, ("a", "b", "c", "d"), "out",
     lambda a, b, c, d: int((b and c and d) or (not b and not d)),
     "(b & c & d) | (~b & ~d)"),
    ("kmap3_abc", KMAP3, ("a", "b", "c"), "out",
     lambda a, b, c: int((a and not (b and not c)) or (b and c)),
     "(a & ~(b & ~c)) | (b & c)"),
    ("truth3_f", TRUTH3, ("x3", "x2", "x1"), "f",
     lambda x3, x2, x1: int((x3 and x1) or (not x3 and x2)),
     "(x3 & x1) | (~x3 & x2)"),
)


def table_tasks() -> list[tuple[Task, str]]:
    """The table tasks with the right answer of each."""
    out = []
    for tid, spec, inputs, output, fn, expr in TABLES:
        header = (f"module top_module({', '.join(f'input {i}' for i in inputs)}, "
                  f"output {output});")
        vectors = [{**dict(zip(inputs, bits, strict=True)), output: fn(*bits)}
                   for bits in itertools.product((0, 1), repeat=len(inputs))]
        task = make_task("top_module", ports=[*(f"input {i}" for i in inputs),
                                              f"output {output}"],
                         vectors=vectors, spec=f"{spec}\n{header}\n", task_id=tid)
        out.append((task, f"{header}\n  assign {output} = {expr};\nendmodule\n"))
    return out


def task_set(bundled: bool) -> list[tuple[Task, str]]:
    tasks = table_tasks()
    if bundled:
        tasks += [(t, "\n".join(f.content for f in t.golden)) for t in load_tasks(BUNDLED)
                  if t.golden]
    return tasks


def _script(tasks: list[tuple[Task, str]]) -> dict[str, Any]:
    out = {}
    for task, right in tasks:
        wrong = right[:right.index(");") + 2] + "\nendmodule\n"
        out[task.id] = {"*": [f"```verilog\n{wrong}```", f"```verilog\n{right}```"]}
    return out


def run(tasks: list[tuple[Task, str]], *, symbolic: bool) -> dict[str, Any]:
    host = PluginHost.default()
    if "scripted" not in host.names("generator"):
        host.add_plugin(scripted, name="scripted")
    generator = host.create("generator", "scripted", script=_script(tasks))
    with tempfile.TemporaryDirectory() as tmp, Orchestrator(
            generator=generator, host=host, pipeline=Pipeline.build(host),
            router=make_router(host),
            max_iterations=3, symbolic=symbolic, run_dir=Path(tmp)) as orch:
        results = [orch.solve(task) for task, _ in tasks]
    summary = summarise_results(results)
    tables = {tid for tid, *_ in TABLES}
    return {"symbolic": symbolic, **{k: summary[k] for k in (
                "tasks", "passed", "pass_at_1", "solve_rate", "llm_calls", "tokens",
                "llm_calls_per_solved", "tokens_per_solved", "tiers")},
            "table_tasks_llm_calls": sum(r.llm_calls for r in results if r.task_id in tables),
            "per_task": {r.task_id: {"verdict": r.verdict.value, "llm_calls": r.llm_calls,
                                     "solved_by": r.solved_by.value if r.solved_by else None}
                         for r in results}}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", type=Path, help="write the results here")
    ap.add_argument("--no-bundled", action="store_true", help="only the table tasks")
    args = ap.parse_args(argv)
    tasks = task_set(not args.no_bundled)
    results = [run(tasks, symbolic=on) for on in (True, False)]
    print(f"{len(tasks)} tasks ({len(TABLES)} K-map/truth-table, "
          f"{len(tasks) - len(TABLES)} bundled)")
    print(f"{'symbolic':<9}{'solved':>8}{'LLM calls':>11}{'calls/solved':>14}"
          f"{'tokens/solved':>15}{'by symbolic':>13}{'table-task calls':>18}")
    for r in results:
        per = r["llm_calls_per_solved"]
        tok = r["tokens_per_solved"]
        print(f"{'on' if r['symbolic'] else 'off':<9}{r['passed']:>5}/{r['tasks']:<2}"
              f"{r['llm_calls']:>11}{'n/a' if per is None else f'{per:.2f}':>14}"
              f"{'n/a' if tok is None else f'{tok:.0f}':>15}"
              f"{r['tiers']['symbolic']['solved']:>13}{r['table_tasks_llm_calls']:>18}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
