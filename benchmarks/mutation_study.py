"""How many real bugs do RTLLM v2's own testbenches catch? (issue 13, section 5)

For every RTLLM v2 design whose golden passes its own testbench, this makes single-edit mutants
of the golden (:mod:`rtlforge.behave.mutate`; at most ``--cap`` per design, a sample seeded by
the design name), asks Yosys whether each is equivalent to the golden
(:mod:`rtlforge.behave.equiv`: a proof, a counterexample or ``unknown``), and runs every mutant
through the RTLLM testbench with the ordinary validation pipeline (Icarus). A non-equivalent
mutant the testbench passes is a miss; an equivalent mutant it fails would be a false alarm
(there should be none: it checks the equivalence checker as much as the testbench).

Results are cached per (design, mutant text, settings) under ``--cache``, so an interrupted run
resumes where it stopped. The BEHAVE-Sim column runs every mutant through BEHAVE-Sim against
the design's behaviour task (``examples/behave/rtllm/<design>``: the golden behaviour model,
baseline stimulus, seed 0); its verdicts are cached apart, keyed by the task's own files too, so
editing a model re-runs only that column. A design without a behaviour task shows ``n/a``.

    python benchmarks/mutation_study.py [--rtllm DIR] [--cap 25] [--jobs 1] [--designs a,b]
        [--json runs/mutation_study.json] [--md runs/mutation_study.md]

Measured (46 designs, 1011 mutants, ``--jobs 2 --timeout 20 --depth 24``, two cores shared
with other work, everything cold: 2607 s; seconds from the cache). The table is in
``benchmarks/results/mutation_study_rtllm.md``: of the 916 non-equivalent mutants, RTLLM's
testbenches kill 720 (78.6%; the issue quotes 76.7%, 611 of 797) and BEHAVE-Sim 894 (97.6%; all
46 designs have a task), with no alarm on the 52 equivalent ones from either. Yosys's verdicts
under a 20 s limit move a few mutants between "equivalent" and "unknown" with machine load (the
run before: 48 equivalent, 50 unknown).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import rtlforge.behave
from rtlforge.behave.equiv import Equivalence, check_equivalence
from rtlforge.behave.mutate import Mutant, mutants, sample_mutants
from rtlforge.behave.sim.check import check_rtl
from rtlforge.behave.sim.task import BehaveTask, load_behave_task
from rtlforge.core.models import Candidate, SourceFile, Task, Verdict
from rtlforge.core.plugins import PluginHost
from rtlforge.sandbox.runner import SandboxRunner
from rtlforge.tasks.rtllm import load_rtllm
from rtlforge.validate.pipeline import Pipeline

DEFAULT_ROOT = Path(__file__).resolve().parents[2] / "shared" / "benchmarks" / "rtllm"
BEHAVE_TASKS = Path(__file__).resolve().parents[1] / "examples" / "behave" / "rtllm"
NO_TASK = "n/a"
#: Bump when what a cached record means changes (operators, checker, verdict rules).
CACHE_VERSION = 3


def _key(task: Task, mutant: Mutant, settings: dict[str, Any]) -> str:
    blob = json.dumps({"v": CACHE_VERSION, "task": task.digest(), "mutant": mutant.digest,
                       "settings": settings}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()


def _behave_digest(btask: BehaveTask) -> str:
    """What a BEHAVE verdict depends on besides the mutant: the task's own files and
    BEHAVE-Sim's code (a testbench or stimulus change re-runs the column)."""
    assert btask.directory is not None
    code = sorted(Path(rtlforge.behave.__file__).parent.glob("[ms]*/*.py"))
    blob = b"".join(p.read_bytes() for p in (*code, *(btask.directory / name for name in
                                                      ("behave.toml", btask.golden))))
    return hashlib.sha256(blob).hexdigest()[:16]


def _behave_verdict(btask: BehaveTask | None, task: Task, mutant: Mutant, runner: SandboxRunner,
                    key: str, cache: Path) -> str:
    if btask is None:
        return NO_TASK
    path = cache / f"{key}.behave-{_behave_digest(btask)}.json"
    if path.is_file():
        return str(json.loads(path.read_text())["verdict"])
    files = (SourceFile(name=task.golden[0].name, content=mutant.source),)
    result = check_rtl(btask, Candidate(files=files, task_id=task.id, top=btask.top),
                       runner=runner, timeout_s=60.0)
    if result.verdict != "infra_error":
        path.write_text(json.dumps({"verdict": result.verdict, "message": result.message}))
    return str(result.verdict)


def _study_mutant(task: Task, mutant: Mutant, pipeline: Pipeline, runner: SandboxRunner,
                  settings: dict[str, Any], cache: Path,
                  btask: BehaveTask | None = None) -> dict[str, Any]:
    key = _key(task, mutant, settings)
    path = cache / f"{key}.json"
    if path.is_file():
        record = dict(json.loads(path.read_text()))
        record["behave_sim"] = _behave_verdict(btask, task, mutant, runner, key, cache)
        return record
    golden = task.golden[0]
    mutated = (SourceFile(name=golden.name, content=mutant.source),)
    equiv = check_equivalence(task.golden, mutated, task.top, runner=runner,
                              timeout=settings["timeout"], depth=settings["depth"])
    start = time.perf_counter()
    report = pipeline.validate(task, Candidate(files=mutated, task_id=task.id))
    record = {
        "id": mutant.id, "operator": mutant.operator, "line": mutant.line,
        "description": mutant.description, "original": mutant.original,
        "replacement": mutant.replacement, "digest": mutant.digest,
        "equivalence": equiv.verdict.value, "equiv_method": equiv.method,
        "equiv_reason": equiv.reason, "equiv_steps": equiv.steps,
        "sequential": equiv.sequential, "equiv_seconds": round(equiv.seconds, 3),
        "testbench": report.verdict.value, "testbench_seconds":
            round(time.perf_counter() - start, 3),
    }
    if report.verdict is not Verdict.INFRA_ERROR:  # an infrastructure hiccup is retried later
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(record, indent=1))
        tmp.replace(path)
    record["behave_sim"] = _behave_verdict(btask, task, mutant, runner, key, cache)
    return record


def _summary(records: list[dict[str, Any]]) -> dict[str, Any]:
    eq = Counter(r["equivalence"] for r in records)
    nonequiv = [r for r in records if r["equivalence"] == Equivalence.NON_EQUIVALENT.value]
    scored = [r for r in nonequiv if r["testbench"] != Verdict.INFRA_ERROR.value]
    killed = sum(r["testbench"] != Verdict.PASS.value for r in scored)
    return {
        "mutants": len(records),
        "equivalent": eq[Equivalence.EQUIVALENT.value],
        "unknown": eq[Equivalence.UNKNOWN.value],
        "non_equivalent": len(nonequiv),
        "killed": killed,
        "kill_rate": round(killed / len(scored), 4) if scored else None,
        "missed": [r["id"] for r in scored if r["testbench"] == Verdict.PASS.value],
        # how the testbench run ended on the non-equivalent mutants (a hang counts as a kill)
        "testbench_verdicts": dict(sorted(Counter(r["testbench"] for r in nonequiv).items())),
        "alarms_on_equivalent": sum(
            r["testbench"] not in (Verdict.PASS.value, Verdict.INFRA_ERROR.value)
            for r in records if r["equivalence"] == Equivalence.EQUIVALENT.value),
        "killed_unknown": sum(r["testbench"] not in (Verdict.PASS.value,
                                                     Verdict.INFRA_ERROR.value)
                              for r in records if r["equivalence"] == Equivalence.UNKNOWN.value),
        "infra_errors": sum(r["testbench"] == Verdict.INFRA_ERROR.value for r in records),
        **_behave_summary(records, nonequiv),
    }


def _behave_summary(records: list[dict[str, Any]], nonequiv: list[dict[str, Any]]
                    ) -> dict[str, Any]:
    """The BEHAVE-Sim column: scored where the design has a task and the run was not infra."""
    scored = [r for r in nonequiv if r.get("behave_sim") not in (NO_TASK, "infra_error", None)]
    killed = sum(r["behave_sim"] != "pass" for r in scored)
    equivalent = [r for r in records if r["equivalence"] == Equivalence.EQUIVALENT.value]
    return {
        "behave_scored": len(scored),
        "behave_killed": killed,
        "behave_kill_rate": round(killed / len(scored), 4) if scored else None,
        "behave_missed": [r["id"] for r in scored if r["behave_sim"] == "pass"],
        "behave_verdicts": dict(sorted(Counter(r.get("behave_sim") for r in nonequiv).items())),
        "behave_alarms_on_equivalent": sum(r.get("behave_sim") not in ("pass", NO_TASK,
                                                                         "infra_error", None)
                                           for r in equivalent),
        "behave_infra_errors": sum(r.get("behave_sim") == "infra_error" for r in records),
    }


def _pct(rate: float | None) -> str:
    return "-" if rate is None else f"{100 * rate:.1f}%"


def markdown(result: dict[str, Any]) -> str:
    head = ("| design | mutants | equivalent | unknown | non-equivalent | killed (RTLLM tb) | "
            "kill rate (RTLLM tb) | killed (BEHAVE-Sim) | kill rate (BEHAVE-Sim) | "
            "alarms on equivalent (tb / BEHAVE-Sim) |")
    lines = [head, "|" + "---|" * 10]

    def row(name: str, s: dict[str, Any]) -> str:
        behave = (f"{s['behave_killed']} of {s['behave_scored']}" if s["behave_scored"]
                  else NO_TASK)
        return (f"| {name} | {s['mutants']} | {s['equivalent']} | {s['unknown']} | "
                f"{s['non_equivalent']} | {s['killed']} | {_pct(s['kill_rate'])} | {behave} | "
                f"{_pct(s['behave_kill_rate'])} | {s['alarms_on_equivalent']} / "
                f"{s['behave_alarms_on_equivalent']} |")

    for name, design in result["designs"].items():
        lines.append(row(name, design["summary"]))
    lines.append(row("**overall**", result["overall"]))
    missing = [n for n, d in result["designs"].items() if d["summary"]["missed"]]
    behave_missing = [n for n, d in result["designs"].items() if d["summary"]["behave_missed"]]
    lines += ["", f"Designs whose testbench misses at least one non-equivalent mutant: "
              f"{len(missing)} of {len(result['designs'])}: {', '.join(missing) or 'none'}.",
              f"Designs where BEHAVE-Sim misses at least one: {len(behave_missing)}: "
              f"{', '.join(behave_missing) or 'none'}.",
              f"Skipped (golden fails its own testbench): "
              f"{', '.join(result['skipped']) or 'none'}.",
              f"Settings: {json.dumps(result['settings'])}; {result['seconds']:.0f} s."]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rtllm", type=Path, default=DEFAULT_ROOT)
    parser.add_argument("--cap", type=int, default=25, help="mutants per design (sampled)")
    parser.add_argument("--depth", type=int, default=32, help="sequential search bound (steps)")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per Yosys run")
    parser.add_argument("--tb-timeout", type=float, default=20.0,
                        help="seconds per RTLLM testbench run (a hanging mutant is killed)")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--designs", help="comma-separated subset of design names")
    parser.add_argument("--cache", type=Path, default=Path(".rtlforge-cache/mutation_study"))
    parser.add_argument("--json", type=Path, default=Path("runs/mutation_study.json"))
    parser.add_argument("--md", type=Path, default=Path("runs/mutation_study.md"))
    args = parser.parse_args(argv)
    started = time.perf_counter()
    settings = {"cap": args.cap, "depth": args.depth, "timeout": args.timeout,
                "tb_timeout": args.tb_timeout}
    args.cache.mkdir(parents=True, exist_ok=True)
    tasks = load_rtllm(args.rtllm)
    if args.designs:
        wanted = set(args.designs.split(","))
        tasks = [t for t in tasks if t.id in wanted]
    host = PluginHost.default()
    runner = SandboxRunner()
    pipeline = Pipeline.build(host, runner=runner, timeout=args.tb_timeout)
    designs: dict[str, Any] = {}
    skipped: list[str] = []
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for task in tasks:
            golden = pipeline.validate(task, Candidate(files=task.golden, task_id=task.id))
            if golden.verdict is not Verdict.PASS:
                skipped.append(f"{task.id} ({golden.verdict.value})")
                continue
            t0 = time.perf_counter()
            found = mutants(task.golden[0].content)
            chosen = sample_mutants(found, args.cap, seed=task.id)
            btask = (load_behave_task(BEHAVE_TASKS / task.id, rtllm_root=args.rtllm)
                     if (BEHAVE_TASKS / task.id / "behave.toml").is_file() else None)
            records = list(pool.map(
                lambda m, task=task, btask=btask: _study_mutant(
                    task, m, pipeline, runner, settings, args.cache, btask), chosen))
            summary = _summary(records)
            designs[task.id] = {"candidates": len(found), "summary": summary,
                                "seconds": round(time.perf_counter() - t0, 2),
                                "mutants": records}
            print(f"{task.id}: {len(found)} mutants, {len(chosen)} studied, "
                  f"{summary['non_equivalent']} non-equivalent, {summary['killed']} killed, "
                  f"{summary['behave_killed']} of {summary['behave_scored']} by BEHAVE-Sim, "
                  f"{summary['unknown']} unknown ({time.perf_counter() - t0:.1f} s)", flush=True)
    overall = _summary([r for d in designs.values() for r in d["mutants"]])
    overall["designs_missing"] = sum(bool(d["summary"]["missed"]) for d in designs.values())
    result = {"settings": settings, "root": str(args.rtllm), "designs": designs,
              "overall": overall, "skipped": skipped,
              "seconds": round(time.perf_counter() - started, 1),
              "reference": {"issue_13_rtllm_kill_rate": "76.7% (611 of 797)"}}
    for path, text in ((args.json, json.dumps(result, indent=1)), (args.md, markdown(result))):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    print(markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
