"""Score a batch of samples (VerilogEval/HumanEval-style JSONL) against tasks: pass@k."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from rtlforge.core.errors import ExtractionError, TaskFormatError
from rtlforge.core.executor import Executor, ThreadExecutor
from rtlforge.core.extract import extract_verilog
from rtlforge.core.models import (
    Candidate,
    Feedback,
    Provenance,
    StageResult,
    Task,
    ValidationReport,
    Verdict,
)
from rtlforge.core.passk import mean_pass_at_k
from rtlforge.core.pipeline import Pipeline


class SampleResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    index: int
    task_id: str
    report: ValidationReport


class TaskScore(BaseModel):
    model_config = ConfigDict(frozen=True)

    n: int  # samples with a verdict about the design (infra errors excluded)
    correct: int
    verdicts: dict[str, int]


class EvalResult(BaseModel):
    """Per-sample reports plus the aggregate a paper table needs."""

    model_config = ConfigDict(frozen=True)

    samples: tuple[SampleResult, ...]
    tasks: dict[str, TaskScore]
    pass_at_k: dict[int, float]
    verdicts: dict[str, int]

    def summary(self) -> dict[str, Any]:
        return {
            "samples": len(self.samples),
            "tasks": len(self.tasks),
            "verdicts": self.verdicts,
            "pass_at_k": {f"pass@{k}": round(v, 4) for k, v in self.pass_at_k.items()},
            "per_task": {tid: score.model_dump() for tid, score in sorted(self.tasks.items())},
        }


def candidate_from_completion(task: Task, completion: str, *, index: int,
                              generator: str | None = None) -> Candidate:
    """Extract Verilog from model text and wrap it as a Candidate (raises ExtractionError)."""
    source = extract_verilog(completion)
    return Candidate.from_source(
        source, task_id=task.id,
        provenance=Provenance(generator=generator, sample_index=index),
    )


def _extraction_failure(task: Task, exc: ExtractionError) -> ValidationReport:
    stage = StageResult(
        name="extract", verdict=Verdict.ERROR,
        feedback=(Feedback(category="no_code", message=str(exc), stage="extract",
                           hint="Answer with one complete Verilog module, module...endmodule."),),
    )
    return ValidationReport(verdict=Verdict.ERROR, stages=(stage,), task_id=task.id)


def evaluate_samples(
    samples: Sequence[tuple[str, str]],
    tasks: Mapping[str, Task],
    pipeline: Pipeline,
    *,
    ks: Iterable[int] = (1, 5, 10),
    executor: Executor | None = None,
    on_result: Callable[[SampleResult], None] | None = None,
) -> EvalResult:
    """Validate every ``(task_id, completion)`` and aggregate pass@k.

    ``infra_error`` samples are excluded from ``n`` (they say nothing about the model); timeouts
    count as not passing and are reported separately in ``verdicts``.
    """
    unknown = sorted({tid for tid, _ in samples if tid not in tasks})
    if unknown:
        raise TaskFormatError(f"samples refer to unknown task ids: {', '.join(unknown[:10])}")

    def run(item: tuple[int, tuple[str, str]]) -> SampleResult:
        index, (task_id, completion) = item
        task = tasks[task_id]
        try:
            candidate = candidate_from_completion(task, completion, index=index)
        except ExtractionError as exc:
            report = _extraction_failure(task, exc)
        else:
            report = pipeline.validate(task, candidate)
        result = SampleResult(index=index, task_id=task_id, report=report)
        if on_result is not None:
            on_result(result)
        return result

    own = executor is None
    pool: Executor = executor or ThreadExecutor()
    try:
        results = list(pool.map(run, list(enumerate(samples))))
    finally:
        if own:
            pool.close()

    per_task: dict[str, Counter[str]] = {}
    for res in results:
        per_task.setdefault(res.task_id, Counter())[res.report.verdict.value] += 1
    scores = {
        tid: TaskScore(
            n=sum(v for k, v in counts.items() if k != Verdict.INFRA_ERROR.value),
            correct=counts[Verdict.PASS.value],
            verdicts=dict(counts),
        )
        for tid, counts in per_task.items()
    }
    counted = {tid: (s.n, s.correct) for tid, s in scores.items() if s.n > 0}
    totals: Counter[str] = Counter()
    for counts in per_task.values():
        totals.update(counts)
    return EvalResult(
        samples=tuple(results), tasks=scores,
        pass_at_k=mean_pass_at_k(counted, ks), verdicts=dict(totals),
    )
