"""Shared machinery of the RTL rewards: batch validation, task checks, PPA, policies.

A reward runs inside an RL loop, so one call scores a whole batch: every completion is extracted
and validated in one ``Pipeline.validate_many`` (parallel, cached, bounded by the pipeline's
timeouts), each task is self-checked once (its golden must pass; an all-zero drop-in must not),
and PPA is measured only for candidates that passed, in parallel, with the golden's PPA measured
once per task. Anything that says nothing about the design (a missing tool, a sandbox failure)
makes the reward abstain with ``None``: a zero would teach the policy that its design was wrong.

The columns a reward reads, and how each is parsed: :mod:`rtlforge.rewards.columns`; the PPA
rewards: :mod:`rtlforge.rewards.ppa`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict

from rtlforge.core.errors import (
    ExtractionError,
    TaskFormatError,
)
from rtlforge.core.executor import Executor
from rtlforge.core.interfaces import Reward
from rtlforge.core.log import get_logger
from rtlforge.core.models import (
    Candidate,
    FlatPPA,
    Objectives,
    PPAResult,
    Task,
    ValidationReport,
    Verdict,
)
from rtlforge.evaluation.evaluate import candidate_from_completion
from rtlforge.rewards import guards
from rtlforge.rewards.columns import (
    TaskSource,
    _column,
    completion_text,
    freeze,
    history_codes,
    resolve_tasks,
)
from rtlforge.validate.pipeline import Pipeline

if TYPE_CHECKING:
    from rtlforge.core.plugins import PluginHost

log = get_logger("rtlforge.rewards")

GuardPolicy = Literal["flag", "zero", "abstain"]

#: The one reward policy for outcomes that say nothing about the design
#: (:class:`~rtlforge.core.models.Verdict`): an infrastructure failure or a wall-clock timeout
#: abstains (``None``), never 0, which would teach the policy it was wrong for the machine's
#: sake. Every reward applies it (:func:`unresolved`); ``RTLReward(timeout_reward=0.0)`` is the
#: explicit opt-in to punish timeouts.
UNRESOLVED_VERDICTS = frozenset({Verdict.INFRA_ERROR, Verdict.TIMEOUT})


def unresolved(verdict: Verdict | str) -> bool:
    """Whether ``verdict`` (a :class:`Verdict` or its value) gets no reward (``None``)."""
    return Verdict(verdict) in UNRESOLVED_VERDICTS


# Flags besides the guard ones in :mod:`rtlforge.rewards.guards`.
INFRA = "infra_error"
TIMEOUT = "timeout"
NO_CODE = "no_code"
TASK_UNUSABLE = "task_unusable"
PPA_INVALID = "ppa_invalid"
PPA_INFRA = "ppa_infra_error"


class RewardDetail(BaseModel):
    """Why a completion got its reward; ``reward`` is what :meth:`Reward.score` returns."""

    model_config = ConfigDict(frozen=True)

    task_id: str
    reward: float | None
    verdict: Verdict | None = None  # None: the completion was never validated
    objectives: Objectives | None = None  # (P_g/P, D_g/D, A_g/A), maximised
    hvc: float | None = None
    ppa: FlatPPA | None = None  # the candidate's; serialised as {"power", "delay", "area"}
    flags: tuple[str, ...] = ()
    reason: str | None = None
    cached: bool = False  # the validation verdict came from the cache
    #: The Verilog the reward extracted from the completion and judged (None: none found, or
    #: the sample's task is unknown), so a caller logging rollouts never extracts again.
    source: str | None = None


@dataclass(frozen=True)
class TaskCheck:
    """Once-per-task facts: is the task usable, and does an all-zero module pass it?"""

    usable: bool
    weak_testbench: bool | None = None  # None: not probed or inconclusive
    reason: str | None = None
    golden_verdict: Verdict | None = None  # None: no golden, or the check is off
    probe_verdict: Verdict | None = None  # the all-zero module's verdict; None: not probed


@dataclass
class Item:
    """Mutable per-sample state while a batch is scored."""

    index: int
    task_id: str
    task: Task | None
    history: Any = None
    golden_column: Any = None
    candidate: Candidate | None = None
    report: ValidationReport | None = None
    reward: float | None = None
    final: bool = False  # reward decided; later stages leave it alone
    flags: list[str] = field(default_factory=list)
    reason: str | None = None
    code: str | None = None
    ppa: PPAResult | None = None
    golden: PPAResult | None = None
    objectives: Objectives | None = None
    hvc: float | None = None

    def finish(self, reward: float | None, reason: str | None = None,
               flag: str | None = None) -> None:
        self.reward, self.final = reward, True
        if reason is not None:
            self.reason = reason
        if flag is not None and flag not in self.flags:
            self.flags.append(flag)

    def flag(self, name: str) -> None:
        if name not in self.flags:
            self.flags.append(name)

    @property
    def live(self) -> bool:
        """Passed the testbench and no policy has decided its reward yet."""
        return not self.final and self.report is not None and self.report.passed

    def detail(self) -> RewardDetail:
        return RewardDetail(
            task_id=self.task_id, reward=self.reward,
            verdict=self.report.verdict if self.report is not None else None,
            objectives=self.objectives, hvc=self.hvc, ppa=self.ppa,
            flags=tuple(self.flags), reason=self.reason,
            cached=bool(self.report is not None and self.report.cached),
            source=("\n".join(f.content for f in self.candidate.files)
                    if self.candidate is not None else None),
        )


# --------------------------------------------------------------------------------------------


class RTLReward(Reward):
    """Base of the testbench-driven rewards.

    Policies (all default to the least destructive choice):

    - ``timeout_reward``: reward of a design whose simulation never finishes. ``None`` (abstain)
      by default, the policy every reward shares (:data:`UNRESOLVED_VERDICTS`): a wall-clock
      limit can be the machine's; ``0.0`` punishes it where the limit is generous.
    - ``on_duplicate``: a candidate whose normalised code repeats a history entry, or an earlier
      candidate of its group (same task and history): ``"flag"`` | ``"zero"`` | ``"abstain"``.
    - ``on_weak_testbench``: the task's testbench passes an all-zero module: flag, zero or abstain
      for every sample of that task.
    - ``on_constant_output``: a passing candidate whose outputs are all constant.
    - ``check_golden`` / ``probe_testbench``: run the once-per-task golden self-check / probe.
    """

    name: ClassVar[str]
    needs_ppa: ClassVar[bool] = False

    def __init__(
        self,
        tasks: TaskSource,
        pipeline: Pipeline | None = None,
        *,
        timeout_reward: float | None = None,
        on_duplicate: GuardPolicy = "flag",
        on_weak_testbench: GuardPolicy = "flag",
        on_constant_output: GuardPolicy = "flag",
        check_golden: bool = True,
        probe_testbench: bool = True,
        executor: Executor | None = None,
        host: PluginHost | None = None,
    ) -> None:
        """Args:
            tasks: the tasks completions are scored against: a mapping by id, a list, a task
                folder (a suite of ``task.toml`` folders or an RTLLM v2 layout) or a lookup.
            pipeline: validates the completions (default: ``Pipeline.build`` on the host, 60 s
                per stage).
            timeout_reward: reward of a design whose simulation never finishes; None (the
                default, :data:`UNRESOLVED_VERDICTS`) abstains, ``0.0`` punishes it.
            on_duplicate: a candidate repeating a history entry or an earlier candidate of its
                group: ``flag``, ``zero`` or ``abstain``.
            on_weak_testbench: a task whose testbench passes an all-zero module: ``flag``,
                ``zero`` or ``abstain`` for each of its samples.
            on_constant_output: a passing candidate whose outputs are all constant: ``flag``,
                ``zero`` or ``abstain``.
            check_golden: run each task's golden through the pipeline once; a task whose golden
                fails makes its samples abstain.
            probe_testbench: probe each task's testbench once with an all-zero module (what
                ``on_weak_testbench`` judges).
            executor: runs the validations (default: the pipeline's own thread pool).
            host: where the default pipeline and PPA estimator come from (default:
                ``PluginHost.default()``).
        """
        self._lookup = resolve_tasks(tasks)
        # ``host`` serves only the defaults (pipeline, estimator); None: PluginHost.default()
        self.host = host
        self.pipeline = pipeline if pipeline is not None else Pipeline.build(
            self._host(), timeout=60.0)
        self.timeout_reward = timeout_reward
        self.on_duplicate = on_duplicate
        self.on_weak_testbench = on_weak_testbench
        self.on_constant_output = on_constant_output
        self.check_golden = check_golden
        self.probe_testbench = probe_testbench
        self.executor = executor
        self._checks: dict[str, TaskCheck] = {}
        self._checks_lock = threading.Lock()

    def _host(self) -> PluginHost:
        if self.host is None:
            from rtlforge.core.plugins import PluginHost

            self.host = PluginHost.default()
        return self.host

    # ---------------------------------------------------------------- public API

    def score(self, prompts: Sequence[Any], completions: Sequence[Any],
              **columns: Any) -> list[float | None]:
        return [d.reward for d in self.score_detailed(prompts, completions, **columns)]

    def score_detailed(self, prompts: Sequence[Any], completions: Sequence[Any],
                       **columns: Any) -> list[RewardDetail]:
        """One :class:`RewardDetail` per completion, in order."""
        start = time.perf_counter()
        n = len(completions)
        task_ids = _column(columns, "task_id", n, required=True)
        histories = _column(columns, "history", n)
        goldens = _column(columns, "golden_ppa", n)
        items = [
            Item(index=i, task_id=str(task_ids[i]), task=self._lookup(str(task_ids[i])),
                 history=histories[i], golden_column=goldens[i])
            for i in range(n)
        ]
        unknown = sorted({it.task_id for it in items if it.task is None})
        if unknown:
            raise TaskFormatError(f"unknown task ids: {', '.join(unknown[:10])}")
        for it, completion in zip(items, completions, strict=True):
            self._extract(it, completion)
        self._validate(items)
        self._apply_verdicts(items)
        self._apply_guards(items)
        self._score_passing([it for it in items if it.live], columns)
        for it in items:
            if not it.final:
                it.finish(0.0)
        log.info("rewards_scored", reward=self.name, n=n,
                 seconds=round(time.perf_counter() - start, 3))
        return [it.detail() for it in items]

    def check_tasks(self, tasks: Iterable[Task]) -> dict[str, TaskCheck]:
        """Golden self-check and weak-testbench probe of each task, in one parallel batch.

        Cached per task digest; a check that hit an infrastructure failure is reported as
        unusable here and retried on the next call.
        """
        items = [Item(index=i, task_id=t.id, task=t) for i, t in enumerate(tasks)]
        self._validate(items)
        failed = TaskCheck(usable=False, reason="infrastructure failure during the task check")
        return {it.task_id: self._checks.get(self._check_key(it.task), failed)
                for it in items if it.task is not None}

    def task_check(self, task: Task) -> TaskCheck:
        """The (cached) golden self-check and weak-testbench probe of one task."""
        return self.check_tasks([task])[task.id]

    # ---------------------------------------------------------------- stages

    def _extract(self, it: Item, completion: Any) -> None:
        assert it.task is not None
        try:
            text = completion_text(completion)
            it.candidate = candidate_from_completion(it.task, text, index=it.index,
                                                     generator=self.name)
        except (ExtractionError, TypeError) as exc:
            it.finish(0.0, f"no Verilog in the completion: {exc}", NO_CODE)
            return
        it.code = guards.code_hash(it.candidate)

    @staticmethod
    def _check_key(task: Task) -> str:
        golden = Candidate(files=task.golden).digest() if task.golden else "-"
        return f"{task.digest()}:{golden}"

    def _validate(self, items: list[Item]) -> None:
        """One ``validate_many`` for the candidates and any task check not yet cached."""
        pairs: list[tuple[Task, Candidate]] = []
        pending: dict[str, tuple[Task, int | None, int | None]] = {}
        for it in items:
            task = it.task
            assert task is not None
            key = self._check_key(task)
            if key in self._checks or key in pending:
                continue
            golden_at = probe_at = None
            if self.check_golden and task.golden:
                golden_at = len(pairs)
                pairs.append((task, Candidate(files=task.golden, task_id=task.id)))
            probe = guards.probe_candidate(task) if self.probe_testbench else None
            if probe is not None:
                probe_at = len(pairs)
                pairs.append((task, probe))
            pending[key] = (task, golden_at, probe_at)
        first = len(pairs)
        live = [it for it in items if it.candidate is not None and not it.final]
        pairs.extend((it.task, it.candidate) for it in live if it.task is not None)
        reports = self.pipeline.validate_many(pairs, executor=self.executor) if pairs else []
        for it, report in zip(live, reports[first:], strict=True):
            it.report = report
        for key, (task, golden_at, probe_at) in pending.items():
            check = self._judge_task(
                task,
                reports[golden_at] if golden_at is not None else None,
                reports[probe_at] if probe_at is not None else None,
            )
            if check is not None:
                with self._checks_lock:
                    self._checks[key] = check

    @staticmethod
    def _judge_task(task: Task, golden: ValidationReport | None,
                    probe: ValidationReport | None) -> TaskCheck | None:
        """None when an infrastructure failure makes the check inconclusive (retried later)."""
        if golden is not None and golden.verdict is Verdict.INFRA_ERROR:
            return None
        golden_verdict = golden.verdict if golden is not None else None
        if golden is not None and not golden.passed:
            return TaskCheck(usable=False, golden_verdict=golden_verdict, reason=(
                f"task {task.id!r} is unusable: its golden design gets verdict "
                f"{golden.verdict.value!r} from its own testbench"))
        if probe is not None and probe.verdict is Verdict.INFRA_ERROR:
            return None
        # A probe that failed or never finished was rejected; one that did not compile proves
        # nothing about the testbench (None: unclassified).
        weak = None
        if probe is not None and probe.verdict in (Verdict.PASS, Verdict.FAIL, Verdict.TIMEOUT):
            weak = probe.passed
        if weak:
            log.warning("weak_testbench", task=task.id)
        return TaskCheck(usable=True, weak_testbench=weak, golden_verdict=golden_verdict,
                         probe_verdict=probe.verdict if probe is not None else None)

    def _apply_verdicts(self, items: list[Item]) -> None:
        for it in items:
            if it.final:
                continue
            assert it.task is not None and it.report is not None
            check = self._checks.get(self._check_key(it.task))
            verdict = it.report.verdict
            if verdict is Verdict.INFRA_ERROR or check is None:
                messages = [fb.message for fb in it.report.feedback][-1:] or ["task check"]
                it.finish(None, f"infrastructure failure: {messages[0]}", INFRA)
            elif not check.usable:
                it.finish(None, check.reason, TASK_UNUSABLE)
            elif verdict is Verdict.TIMEOUT:
                it.finish(self.timeout_reward, "the design timed out", TIMEOUT)
            elif not it.report.passed:
                it.finish(0.0, f"validation verdict {verdict.value!r}")

    def _policy(self, it: Item, policy: GuardPolicy, flag: str, reason: str) -> None:
        it.flag(flag)
        if policy == "zero" and not it.final:
            it.finish(0.0, reason)
        elif policy == "abstain" and not it.final:
            it.finish(None, reason)

    def _apply_guards(self, items: list[Item]) -> None:
        seen: set[tuple[str, str, str]] = set()
        for it in items:
            assert it.task is not None
            check = self._checks.get(self._check_key(it.task))
            if check is not None and check.weak_testbench:
                self._policy(it, self.on_weak_testbench, guards.WEAK_TESTBENCH,
                             "the task's testbench also passes an all-zero module")
            if it.code is None:
                continue
            if it.code in history_codes(it.history):
                self._policy(it, self.on_duplicate, guards.DUPLICATE_HISTORY,
                             "the candidate repeats a circuit in its history")
            key = (it.task_id, freeze(it.history), it.code)
            if key in seen:
                self._policy(it, self.on_duplicate, guards.DUPLICATE_IN_GROUP,
                             "the candidate repeats an earlier candidate of its group")
            seen.add(key)
            if it.live and it.candidate is not None and guards.constant_outputs(
                    it.candidate, it.candidate.top or it.task.top):
                self._policy(it, self.on_constant_output, guards.CONSTANT_OUTPUT,
                             "every output of the candidate is constant")

    def _score_passing(self, items: list[Item], columns: Mapping[str, Any]) -> None:
        """Set the reward of each passing candidate no policy has decided (default: 1.0)."""
        for it in items:
            it.finish(1.0)
