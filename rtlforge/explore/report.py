"""Writing an explore run's report: summary.json, records.jsonl, report.html, candidates.jsonl.

The eval report (:mod:`rtlforge.evaluation.report`) draws the tables and plots; this module
turns explore records into its input and adds what only explore has (rHV per iteration and
method, checkpoints, per-iteration progress).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from rtlforge.core.models import Verdict
from rtlforge.evaluation.evaluate import (
    DetailedEval,
    EvalResult,
    PPAMeasure,
    SampleDetail,
    SampleResult,
    TaskScore,
)
from rtlforge.evaluation.passk import mean_pass_at_k
from rtlforge.explore.models import ExploreRecord

__all__ = ["CANDIDATE_FIELDS", "detailed_from_records", "protocol_line", "write_explore_report"]

#: The keys of one ``candidates.jsonl`` line, in order.
CANDIDATE_FIELDS: tuple[str, ...] = (
    "method", "task", "trial", "iteration", "sample", "verdict", "source", "message",
    "feedback", "ppa", "golden", "objectives", "hvc", "ast_similarity", "ast_status",
    "generator", "latency_s")


def _order(record: ExploreRecord) -> tuple[str, str, int, int, int]:
    return record.method, record.task, record.trial, record.iteration, record.sample


def detailed_from_records(records: Sequence[ExploreRecord],
                          golden: Mapping[str, PPAMeasure], *,
                          ks: Sequence[int] = (1, 5, 10)) -> DetailedEval:
    """The :class:`DetailedEval` the eval report is drawn from, rebuilt from archive records."""
    samples, details = [], []
    per_task: dict[str, Counter[str]] = {}
    for index, r in enumerate(sorted(records, key=_order)):
        samples.append(SampleResult(index=index, task_id=r.task, report=r.report))
        per_task.setdefault(r.task, Counter())[r.verdict.value] += 1
        details.append(SampleDetail(
            index=index, task_id=r.task, method=r.method, trial=r.trial,
            iteration=r.iteration, verdict=r.verdict.value,
            source=f"sample {r.sample}", code=r.source, message=r.message,
            ppa=r.ppa, objectives=r.objectives,
            hvc=r.hvc, ast_similarity=r.ast_similarity,
            ast_status=r.ast_status, ast_backend=r.ast_backend))
    scores = {tid: TaskScore(n=sum(v for k, v in c.items() if k != Verdict.INFRA_ERROR.value),
                             correct=c[Verdict.PASS.value], verdicts=dict(c))
              for tid, c in per_task.items()}
    totals: Counter[str] = Counter()
    for c in per_task.values():
        totals.update(c)
    result = EvalResult(
        samples=tuple(samples), tasks=scores, verdicts=dict(totals),
        pass_at_k=mean_pass_at_k({t: (s.n, s.correct) for t, s in scores.items() if s.n}, ks))
    return DetailedEval(result=result, details=tuple(details), golden=dict(golden), ks=tuple(ks))


def _progress(records: Sequence[ExploreRecord]) -> dict[str, Any]:
    """Per method and iteration: samples, passes, mean HVC (how the search moves over time)."""
    out: dict[str, dict[int, dict[str, Any]]] = {}
    for r in records:
        cell = out.setdefault(r.method, {}).setdefault(
            r.iteration, {"samples": 0, "passed": 0, "hvc": []})
        cell["samples"] += 1
        cell["passed"] += r.passed
        if r.hvc is not None:
            cell["hvc"].append(r.hvc)
    return {m: {it: {"samples": c["samples"], "passed": c["passed"],
                     "mean_hvc": float(np.mean(c["hvc"])) if c["hvc"] else None}
                for it, c in sorted(its.items())} for m, its in out.items()}


def _environment(found: Mapping[str, Any], config: Mapping[str, Any]) -> dict[str, Any]:
    """The report's environment: the archive keeps PPA flat (no liberty or clock period per
    circuit), so the estimator's stored settings say which liberty and period measured it."""
    env = dict(found)
    estimator = (config.get("settings") or {}).get("estimator") or {}
    if isinstance(estimator, Mapping):
        if estimator.get("name"):
            env["estimator"] = str(estimator["name"])
        if estimator.get("liberty"):
            env["liberty"] = str(estimator["liberty"])
        if isinstance(estimator.get("period_ns"), int | float):
            env["clock_period_ns"] = [float(estimator["period_ns"])]
        synthesis = estimator.get("yosys")  # "yosys 0.23" or "pyosys 0.70", from cache_key()
        if isinstance(synthesis, str) and synthesis.strip():
            tool, _, version = synthesis.strip().partition(" ")
            env["tools"] = dict(sorted({**(env.get("tools") or {}),
                                        tool: version or "unknown"}.items()))
    return {k: env[k] for k in ("estimator", "liberty", "clock_period_ns", "tools") if k in env}


def protocol_line(protocol: Mapping[str, Any]) -> str:
    """One line for the report's settings table: paper protocol or how the run departs."""
    ref = protocol.get("reference", "paper")
    preset = protocol.get("preset")
    asked = f" (--preset {preset})" if preset else ""
    deviations = protocol.get("deviations") or {}
    if not deviations:
        return f"{ref} protocol{asked}"
    parts = ", ".join(f"{k} {v.get('run')!r} ({ref} {v.get(ref)!r})"
                      for k, v in sorted(deviations.items()))
    return f"custom{asked}: differs from the {ref} protocol in {parts}"


def write_explore_report(run_dir: str | Path, records: Sequence[ExploreRecord],
                         golden: Mapping[str, PPAMeasure], *, config: Mapping[str, Any],
                         checkpoints: Sequence[int] = (1, 5, 10),
                         baseline: str | Sequence[str] | None = None,
                         title: str = "rtlforge explore report", seed: int | None = 0,
                         ) -> tuple[dict[str, Any], dict[str, Path]]:
    """summary.json + records.jsonl + report.html (the eval report) and candidates.jsonl."""
    from rtlforge.evaluation.metrics import Record, compute_metrics, metrics_json
    from rtlforge.evaluation.report import summarise, write_report

    run_dir = Path(run_dir)
    detailed = detailed_from_records(records, golden)
    protocol = config.get("protocol")
    run: dict[str, Any] = {
        "methods": [f"{n} ({c['generator']}, {c['template']}, history {c['history']})"
                    for n, c in config.get("methods", {}).items()],
        "iterations": config.get("iterations"), "trials": config.get("trials"),
        "estimator": config.get("estimator"), "run_dir": str(run_dir)}
    if protocol:
        run["protocol"] = protocol_line(protocol)
    summary = summarise(detailed, extra={"run": run, **({"protocol": protocol} if protocol
                                                        else {})})
    summary["environment"] = _environment(summary.get("environment") or {}, config)
    metric_records = [Record.model_validate(r) for r in detailed.records()]
    summary["checkpoints"] = {}  # rHV per method at each checkpoint: none until a PPA is measured
    if any(r.objectives() is not None for r in metric_records):
        metrics = json.loads(metrics_json(compute_metrics(metric_records, baseline=baseline,
                                                          seed=seed)))
        summary["metrics"] = metrics
        iters = set(metrics["iterations"])
        summary["checkpoints"] = {
            m: {f"rhv@{c}": v["rhv"][str(c)] for c in checkpoints if c in iters}
            for m, v in metrics["methods"].items()}
    summary["progress"] = json.loads(json.dumps(_progress(records)))
    summary["explore"] = {"config": dict(config), "candidates": len(records)}
    paths = write_report(run_dir, detailed, summary, title=title)
    cand_path = run_dir / "candidates.jsonl"
    with cand_path.open("w") as fh:
        for r in sorted(records, key=_order):
            data = r.to_json_dict()
            fh.write(json.dumps({k: data[k] for k in CANDIDATE_FIELDS}, allow_nan=False) + "\n")
    paths["candidates.jsonl"] = cand_path
    return summary, paths
