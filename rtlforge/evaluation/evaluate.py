"""Score a batch of samples (VerilogEval/HumanEval-style JSONL) against tasks.

:func:`evaluate_samples` gives pass@k; :func:`evaluate_detailed` adds, for papers that compare
methods on PPA, the PPA of every passing circuit and of each golden, the objective vector and
hypervolume contribution of each circuit within its run, and AST similarity to the golden.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from rtlforge.core.answers import answer_files, candidate_from_answer
from rtlforge.core.errors import ExtractionError, TaskFormatError, ToolMissingError
from rtlforge.core.executor import Executor, ThreadExecutor
from rtlforge.core.extract import extract_verilog
from rtlforge.core.interfaces import PPAEstimator, Reward
from rtlforge.core.models import (
    PPA_KEYS,
    Candidate,
    Feedback,
    Objectives,
    PPAMeasure,
    Provenance,
    StageResult,
    Task,
    ValidationReport,
    Verdict,
)
from rtlforge.core.options import PluginSpec
from rtlforge.evaluation.golden import (
    GoldenCheck,
    GoldenPPA,
    error_measure,
    measure_ppa,
)
from rtlforge.evaluation.passk import mean_pass_at_k
from rtlforge.pareto.hypervolume import Backend, hvc_group
from rtlforge.tasks.cvdp import is_cvdp_task
from rtlforge.tasks.samples import Sample
from rtlforge.validate.pipeline import Pipeline

if TYPE_CHECKING:
    from rtlforge.core.plugins import PluginHost


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
    #: tasks whose golden fails its own testbench (or whose testbench does not compile), with
    #: why; left out of pass@k unless ``include_broken``
    broken_tasks: dict[str, str] = {}
    include_broken: bool = False
    #: pass@k per group of tasks, ``{"category": {"cid003": {...}}, "difficulty": {...}}``,
    #: for tasks that carry a category or a ``difficulty`` in their metadata
    groups: dict[str, dict[str, dict[str, Any]]] = {}

    def counted(self, per_task: Mapping[str, tuple[int, int]]) -> dict[str, tuple[int, int]]:
        """The ``(n, correct)`` that enter pass@k: samples with a verdict, on usable tasks."""
        return {tid: nc for tid, nc in per_task.items() if nc[0] > 0
                and (self.include_broken or tid not in self.broken_tasks)}

    def summary(self) -> dict[str, Any]:
        return {
            "samples": len(self.samples),
            "tasks": len(self.tasks),
            "verdicts": self.verdicts,
            "pass_at_k": {f"pass@{k}": round(v, 4) for k, v in self.pass_at_k.items()},
            "pass_at_k_tasks": len(self.counted({t: (s.n, s.correct)
                                                 for t, s in self.tasks.items()})),
            "broken_tasks": dict(sorted(self.broken_tasks.items())),
            "broken_tasks_in_pass_at_k": self.include_broken,
            **({"pass_at_k_by": self.groups} if self.groups else {}),
            "per_task": {tid: score.model_dump() for tid, score in sorted(self.tasks.items())},
        }

    def grouped(self, tasks: Mapping[str, Task], ks: Iterable[int]
                ) -> dict[str, dict[str, dict[str, Any]]]:
        """pass@k of the tasks of each category and each difficulty (CVDP reports both), over
        the tasks that enter pass@k; a key no task has is left out."""
        counted = self.counted({t: (s.n, s.correct) for t, s in self.tasks.items()})
        out: dict[str, dict[str, dict[str, Any]]] = {}
        for key, label in (("category", lambda t: t.category),
                           ("difficulty", lambda t: t.metadata.get("difficulty"))):
            members: dict[str, dict[str, tuple[int, int]]] = {}
            for tid, nc in counted.items():
                value = label(tasks[tid]) if tid in tasks else None
                if isinstance(value, str) and value:
                    members.setdefault(value, {})[tid] = nc
            if members:
                out[key] = {value: {"tasks": len(group), **{
                    f"pass@{k}": round(v, 4) for k, v in mean_pass_at_k(group, ks).items()}}
                    for value, group in sorted(members.items())}
        return out


def candidate_from_completion(task: Task, completion: str, *, index: int,
                              generator: str | None = None) -> Candidate:
    """Extract Verilog from model text and wrap it as a Candidate (raises ExtractionError).

    A task that wants several files back (a CVDP problem, :mod:`rtlforge.core.answers`) gets
    one candidate file per file the answer gives."""
    provenance = Provenance(generator=generator, sample_index=index)
    files = answer_files(task)
    if files:
        return candidate_from_answer(completion, files, task_id=task.id, provenance=provenance)
    source = extract_verilog(completion)
    return Candidate.from_source(source, task_id=task.id, provenance=provenance)


def pipeline_for(host: PluginHost, tasks: Iterable[Task], *,
                 extra: Iterable[str | tuple[str, Mapping[str, Any]] | PluginSpec] = (),
                 **options: Any) -> Pipeline:
    """``Pipeline.build`` for these tasks: CVDP problems (:mod:`rtlforge.tasks.cvdp`) run their
    own harness, the ``cvdp`` validator, in place of the simulator's lint and simulation."""
    extra = list(extra)
    if any(is_cvdp_task(t) for t in tasks):
        named = any(PluginSpec.of(item).name == "cvdp" for item in extra)  # with its options
        return Pipeline.build(host, lint=False, simulate=False,
                              extra=extra if named else [*extra, "cvdp"], **options)
    return Pipeline.build(host, extra=extra, **options)


def extraction_failure_report(task: Task, exc: ExtractionError) -> ValidationReport:
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
    check_goldens: bool = True,
    include_broken: bool = False,
    golden_check: GoldenCheck | None = None,
) -> EvalResult:
    """Validate every ``(task_id, completion)`` and aggregate pass@k.

    ``infra_error`` samples are excluded from ``n`` (they say nothing about the model); timeouts
    count as not passing and are reported separately in ``verdicts``.
    With ``check_goldens`` each task's golden is first validated against its own testbench
    (once per task; ``golden_check`` shares the cache across calls): a task whose golden fails,
    or whose testbench does not compile, cannot tell right from wrong, so it is left out of
    pass@k (``include_broken`` keeps it) and listed in ``broken_tasks`` with the reason.
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
            report = extraction_failure_report(task, exc)
        else:
            report = pipeline.validate(task, candidate)
        result = SampleResult(index=index, task_id=task_id, report=report)
        if on_result is not None:
            on_result(result)
        return result

    own = executor is None
    pool: Executor = executor or ThreadExecutor()
    broken: dict[str, str] = {}
    try:
        if check_goldens:
            checker = golden_check or GoldenCheck(pipeline)
            used = sorted({tid for tid, _ in samples})
            for verdict in pool.map(lambda tid: checker.check(tasks[tid]), used):
                if not verdict.usable:
                    broken[verdict.task_id] = verdict.reason or verdict.verdict
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
    totals: Counter[str] = Counter()
    for counts in per_task.values():
        totals.update(counts)
    partial = EvalResult(samples=tuple(results), tasks=scores, pass_at_k={},
                         verdicts=dict(totals), broken_tasks=broken,
                         include_broken=include_broken)
    counted = partial.counted({tid: (s.n, s.correct) for tid, s in scores.items()})
    ks = tuple(ks)
    return partial.model_copy(update={"pass_at_k": mean_pass_at_k(counted, ks),
                                      "groups": partial.grouped(tasks, ks)})


# --------------------------------------------------------------------------------------------
# PPA, Pareto and AST scoring on top of pass/fail (``rtlforge eval --ppa --ast --report``)
# --------------------------------------------------------------------------------------------


class SampleDetail(BaseModel):
    """Everything the report shows about one sample; ``hvc`` is against earlier iterations."""

    model_config = ConfigDict(frozen=True)

    index: int
    task_id: str
    method: str
    trial: int
    iteration: int
    verdict: str
    source: str | None = None  # file or note the sample came from (display only)
    code: str | None = None  # the circuit as submitted (shown collapsed in the report)
    message: str | None = None  # first feedback message of a sample that did not pass
    ppa: PPAMeasure | None = None  # None when not measured (not passing, or no --ppa)
    objectives: Objectives | None = None  # golden/generated ratios, maximised
    hvc: float | None = None
    ast_similarity: float | None = None
    ast_status: str | None = None
    ast_backend: str | None = None

    @property
    def passed(self) -> bool:
        return self.verdict == Verdict.PASS.value


class DetailedEval(BaseModel):
    """Pass@k plus per-sample PPA/HVC/AST details and each task's golden PPA."""

    model_config = ConfigDict(frozen=True)

    result: EvalResult
    details: tuple[SampleDetail, ...]
    golden: dict[str, PPAMeasure]
    ks: tuple[int, ...] = (1, 5, 10)

    def records(self) -> list[dict[str, Any]]:
        """One metrics record per circuit (the schema of :mod:`rtlforge.evaluation.metrics`)."""
        out = []
        for d in self.details:
            gold = self.golden.get(d.task_id)
            ppa = d.ppa.ppa if d.ppa is not None and d.passed else None
            out.append({
                "method": d.method, "task": d.task_id, "trial": d.trial,
                "iteration": d.iteration, "passed": d.passed,
                **(ppa.triple() if ppa is not None else dict.fromkeys(PPA_KEYS)),
                "golden": gold.triple() if gold is not None else None,
            })
        return out

    def per_method(self) -> dict[str, dict[str, Any]]:
        """Verdict counts and pass@k of each method on its own (methods are never pooled)."""
        out: dict[str, dict[str, Any]] = {}
        for method in sorted({d.method for d in self.details}):
            mine = [d for d in self.details if d.method == method]
            per_task: dict[str, Counter[str]] = {}
            for d in mine:
                per_task.setdefault(d.task_id, Counter())[d.verdict] += 1
            counted = {
                tid: (sum(v for k, v in c.items() if k != Verdict.INFRA_ERROR.value),
                      c[Verdict.PASS.value])
                for tid, c in per_task.items()
            }
            counted = self.result.counted(counted)
            verdicts = Counter(d.verdict for d in mine)
            out[method] = {
                "samples": len(mine),
                "tasks": len(per_task),
                "passed": verdicts[Verdict.PASS.value],
                "pass_rate": verdicts[Verdict.PASS.value] / len(mine),
                "verdicts": dict(sorted(verdicts.items())),
                "pass_at_k": {f"pass@{k}": round(v, 4)
                              for k, v in mean_pass_at_k(counted, self.ks).items()},
                "measured": sum(1 for d in mine if d.ppa is not None and d.ppa.ok),
                # missing, not bad: the PPA flow failed for a reason that is not the design's
                "ppa_infra_errors": sum(1 for d in mine if d.ppa is not None and d.ppa.infra),
            }
        return out


def sample_labels(extra: Mapping[str, Any], default_method: str) -> tuple[str, int, int]:
    """``(method, trial, iteration)`` from a sample's extra keys; bad values are input errors."""
    method = extra.get("method", default_method)
    if not isinstance(method, str) or not method:
        raise TaskFormatError(f"'method' must be a non-empty string, got {method!r}")
    values = []
    for key in ("trial", "iteration"):
        value = extra.get(key, 1)
        if isinstance(value, bool) or not isinstance(value, int):
            raise TaskFormatError(f"{key!r} must be an integer, got {value!r}")
        values.append(value)
    return method, values[0], values[1]


def _first_message(report: ValidationReport) -> str | None:
    if report.passed:
        return None
    return next((fb.message for fb in report.feedback), None)


def _assign_hvc(details: list[SampleDetail], backend: Backend) -> list[SampleDetail]:
    """HVC of each sample over the earlier iterations of its own (method, task, trial) run.

    Samples of one iteration are siblings (one GRPO group, one refinement round): each is
    scored against the strictly earlier iterations only, never against its siblings, so the
    order of lines in a samples file cannot change a score.
    """
    runs: dict[tuple[str, str, int, int], list[int]] = {}
    for pos, d in enumerate(details):
        runs.setdefault((d.method, d.task_id, d.trial, d.iteration), []).append(pos)
    out = list(details)
    history: dict[tuple[str, str, int], list[tuple[float, ...]]] = {}
    for (method, task_id, trial, _), positions in sorted(runs.items(), key=lambda kv: kv[0]):
        past = history.setdefault((method, task_id, trial), [])
        group = [details[p].objectives for p in positions]
        scores = hvc_group(past, group, backend=backend)
        for pos, vec, score in zip(positions, group, scores, strict=True):
            if vec is not None:
                out[pos] = details[pos].model_copy(update={"hvc": float(score)})
        past.extend(v for v in group if v is not None)
    return out


def evaluate_detailed(
    samples: Sequence[Sample],
    tasks: Mapping[str, Task],
    pipeline: Pipeline,
    *,
    default_method: str = "default",
    estimator: PPAEstimator | None = None,
    ast_reward: Reward | None = None,
    ks: Iterable[int] = (1, 5, 10),
    executor: Executor | None = None,
    on_result: Callable[[SampleResult], None] | None = None,
    on_measured: Callable[[], None] | None = None,
    hv_backend: Backend = "moocore",
    check_goldens: bool = True,
    include_broken: bool = False,
) -> DetailedEval:
    """:func:`evaluate_samples`, then PPA of passing candidates and goldens, HVC and AST.

    Only candidates that passed are measured: they already went through the security check,
    and the PPA of a wrong design means nothing. Each task's golden is measured once.
    ``ast_reward`` is a Reward scored with ``score_detailed(prompts, completions,
    reference=[...])``; the ``similarity``, ``status`` and ``backend`` of its details are kept
    where its detail type has them (the ``ast-similarity`` reward's does).
    A missing PPA tool raises :class:`ToolMissingError`; other PPA failures are per design.
    ``check_goldens``/``include_broken``: see :func:`evaluate_samples`.
    """
    labels = [sample_labels(s.extra, default_method) for s in samples]
    k_values = tuple(ks)
    own = executor is None
    pool: Executor = executor or ThreadExecutor()
    try:
        result = evaluate_samples([(s.task_id, s.completion) for s in samples], tasks, pipeline,
                                  ks=k_values, executor=pool, on_result=on_result,
                                  check_goldens=check_goldens, include_broken=include_broken)
        golden: dict[str, PPAMeasure] = {}
        measured: dict[int, PPAMeasure] = {}
        if estimator is not None:
            wanted = sorted({s.task_id for s in samples if tasks[s.task_id].golden})

            goldens = GoldenPPA(estimator, pipeline.runner)

            def gold(tid: str) -> PPAMeasure:
                try:
                    out = goldens.measure(tasks[tid])
                except ToolMissingError:
                    raise
                except Exception as exc:  # noqa: BLE001 - infrastructure, reported per task
                    out = error_measure(exc)
                if on_measured is not None:
                    on_measured()
                return out

            golden = dict(zip(wanted, pool.map(gold, wanted), strict=True))
            passing = [r for r in result.samples if r.report.passed]

            def cand(res: SampleResult) -> PPAMeasure:
                task = tasks[res.task_id]
                candidate = candidate_from_completion(task, samples[res.index].completion,
                                                      index=res.index)
                out = measure_ppa(estimator, candidate, candidate.top or task.top, pipeline.runner)
                if on_measured is not None:
                    on_measured()
                return out

            measured = {r.index: m for r, m in zip(passing, pool.map(cand, passing), strict=True)}
    finally:
        if own:
            pool.close()

    ast_scores: dict[int, Any] = {}
    if ast_reward is not None:
        scored = [i for i, s in enumerate(samples) if tasks[s.task_id].golden]
        refs = ["\n".join(f.content for f in tasks[samples[i].task_id].golden) for i in scored]
        outs = ast_reward.score_detailed([tasks[samples[i].task_id].spec for i in scored],
                                         [samples[i].completion for i in scored], reference=refs)
        ast_scores = dict(zip(scored, outs, strict=True))

    details = []
    for res in result.samples:
        sample, (method, trial, iteration) = samples[res.index], labels[res.index]
        ppa = measured.get(res.index)
        gold_ppa = golden.get(res.task_id)
        vec = Objectives.of(ppa.ppa if ppa is not None else None,
                            gold_ppa.ppa if gold_ppa is not None else None)
        ast = ast_scores.get(res.index)
        source = sample.extra.get("source", sample.extra.get("note"))
        details.append(SampleDetail(
            index=res.index, task_id=res.task_id, method=method, trial=trial,
            iteration=iteration, verdict=res.report.verdict.value,
            source=str(source) if source is not None else None,
            code=sample.completion, message=_first_message(res.report), ppa=ppa,
            objectives=vec,
            ast_similarity=getattr(ast, "similarity", None),
            ast_status=getattr(ast, "status", None),
            ast_backend=getattr(ast, "backend", None),
        ))
    return DetailedEval(result=result, details=tuple(_assign_hvc(details, hv_backend)),
                        golden=golden, ks=k_values)
