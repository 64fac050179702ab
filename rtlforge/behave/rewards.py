"""BEHAVE rewards: an RL policy's RTL or behaviour model, scored by BEHAVE-Sim against B*.

Three rewards, registered by :mod:`rtlforge.behave.plugin` (so ``trl_reward("behave-rtl",
tasks=DIR)`` and the GRPO trainer's ``reward: behave-rtl`` find them by name):

- ``behave-rtl``: 1.0 when the completion's Verilog passes the task's golden model B* under
  BEHAVE-Sim, 0.0 when it fails, does not compile or holds no Verilog.
- ``behave-model``: the same for an agent's behaviour-DSL model B̂ (``check_model``); a model
  that does not check or does not fit the interface scores 0.0, with the checker's line.
- ``behave-coverage``: ``(pass + verified) / 2``, where ``pass`` is 1.0 or 0.0 as above and
  ``verified`` is the share of the golden's branch goals (both outcomes of every branch) that
  the golden hit on the transactions before the artifact's first failing one: every transaction
  when it passes; none when the failure names no transaction (a monitor violation, an output no
  input called for) or the artifact does not compile. A golden without branches counts
  ``verified = pass``. So any pass scores at least 0.5 and any failure at most 0.5, and a
  failure late in the stimulus, after the golden's branches were exercised, scores more than
  one at the first transaction: partial credit that still ranks every pass above every failure.

Unresolved is ``None`` by default, never 0: an ``infra_error`` (sandbox, tool, a golden that does
not load) or a wall-clock ``timeout`` says nothing about the artifact, and a zero would teach the
policy it was wrong. A design that stops making progress is a watchdog ``fail`` (the design's
fault). The BEHAVE paper (Appendix D.2) counts unresolved evaluations as zero instead:
``unresolved="zero"`` (the ``paper`` preset's) scores a ``timeout`` (the evaluation's budget ran
out) 0.0, flagged ``timeout``; an ``infra_error`` or an unusable task abstains under both, since
our standard is that an infrastructure failure is never scored as a wrong artifact.

How long a check may take is a preset (``preset``): ``fast`` (the default) simulates the seeded
random stimulus and the edge sweep with ``timeout_s`` 120 s per tool run and no goal-guided
search; ``paper`` is the paper's scoring budget, 1,200 s per artifact of which up to 600 s go
to goal-guided search (:data:`~rtlforge.behave.sim.guided.PAPER_SCORING`), and
``unresolved="zero"``. ``search_budget_s``, ``artifact_budget_s``, ``timeout_s`` and
``unresolved`` set one value of the preset each. With goal-guided search, ``behave-coverage``
still counts goals on the random stimulus: the directed sequences decide pass or fail, and a
failure in them counts every goal the random stimulus reached.

The task reaches the reward per sample: a ``behave_task`` column (a task directory or a loaded
:class:`BehaveTask`), or a ``task_id`` column naming a task directory under the ``tasks`` option
(what the TRL and verl adapters and the GRPO trainer pass). Each task, its golden model, the
seeded stimulus and the golden's goal prefix are prepared once per reward instance, not per
completion; identical artifacts in one batch are checked once, and RTL checks run on ``workers``
threads (each is a sandboxed Icarus run). Given an ``executor`` (e.g. the ``ray`` plugin), the
checks of a batch go through it instead: a worker rebuilds the reward from a
:class:`BehaveCheckWork` (its name and options) once per process, prepares each task there, and
a check whose worker kept dying comes back ``infra_error`` (the sample abstains).
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from rtlforge.behave.sim.check import BehaveResult, check_model, check_rtl
from rtlforge.behave.sim.golden import (
    GoldenUnavailable,
    TaskModelError,
    golden_model,
    load_task_model,
)
from rtlforge.behave.sim.guided import (
    PAPER_SCORING,
    GuidedConfig,
    guided_check_model,
    guided_check_rtl,
)
from rtlforge.behave.sim.stimulus import Stimulus, StimulusConfig, generate_stimulus
from rtlforge.behave.sim.task import TASK_FILE, BehaveTask, BehaveTaskError, load_behave_task
from rtlforge.core.errors import ExtractionError
from rtlforge.core.executor import Executor, Work, WorkerServices, WorkSpec
from rtlforge.core.extract import extract_verilog
from rtlforge.core.hookspecs import Register
from rtlforge.core.interfaces import Reward
from rtlforge.core.models import Candidate, Verdict
from rtlforge.core.plugins import HostSpec
from rtlforge.rewards.base import INFRA, NO_CODE, TASK_UNUSABLE, TIMEOUT, unresolved
from rtlforge.rewards.columns import completion_text

if TYPE_CHECKING:
    from rtlforge.behave.model import BehaviorModel

__all__ = ["SCORING_PRESETS", "BehaveCheckWork", "BehaveCoverageReward", "BehaveModelReward",
           "BehaveRTLReward", "BehaveRewardDetail", "ScoringPreset", "extract_model_source",
           "register_rewards", "reward_means"]

#: A behaviour model that does not check or does not fit the task's interface.
MODEL_INVALID = "model_invalid"
_TASK_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")
_ANSWER = re.compile(r"<answer>(.*?)(?:</answer>|\Z)", re.S | re.I)
_THINK_END = re.compile(r"</think>", re.I)
#: Possessive, and no backtick in the info string (CommonMark): on a line that never ends,
#: a backtracking pattern rescanned it once per character (quadratic in a completion).
_FENCE = re.compile(r"```[ \t]*+([A-Za-z0-9_+-]*+)[^\n`]*+\n(.*?)(?:```|\Z)", re.S)
_MODEL_CLASS = re.compile(r"^class\s+\w+\s*\(\s*Model\s*\)\s*:", re.M)
_PY_LANGS = {"", "python", "py", "python3"}


Unresolved = Literal["abstain", "zero"]


class ScoringPreset(BaseModel):
    """How a BEHAVE reward checks an artifact and scores an unresolved check.

    ``timeout_s``: wall-clock seconds per tool run; ``search_budget_s``: goal-guided search
    (0: none); ``artifact_budget_s``: the whole check of one artifact (None: no cap beyond
    ``timeout_s`` per run); ``unresolved``: what a ``timeout`` scores (``abstain``: None,
    ``zero``: 0.0)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    timeout_s: float = Field(gt=0)
    search_budget_s: float = Field(ge=0)
    artifact_budget_s: float | None = Field(gt=0)
    unresolved: Unresolved


#: ``fast``: ours (a check in seconds; unresolved abstains). ``paper``: BEHAVE Appendix D.2 as
#: issue 25 quotes it: 1,200 s per artifact, up to 600 s of goal-guided search, unresolved
#: evaluations count as zero (a tool run may use the whole artifact budget).
SCORING_PRESETS: dict[str, ScoringPreset] = {
    "fast": ScoringPreset(timeout_s=120.0, search_budget_s=0.0, artifact_budget_s=None,
                          unresolved="abstain"),
    "paper": ScoringPreset(timeout_s=PAPER_SCORING.artifact_budget_s or 1200.0,
                           search_budget_s=PAPER_SCORING.budget_s,
                           artifact_budget_s=PAPER_SCORING.artifact_budget_s,
                           unresolved="zero"),
}


class BehaveRewardDetail(BaseModel):
    """Why a completion got its reward; ``reward`` is what :meth:`score` returns."""

    model_config = ConfigDict(frozen=True)

    task_id: str | None
    reward: float | None
    verdict: Verdict | None = None  # the BEHAVE-Sim verdict; None: never checked
    flags: tuple[str, ...] = ()
    reason: str | None = None
    mismatches: int | None = None
    goals_verified: int | None = None  # behave-coverage: golden goals reached before a failure
    goals_total: int | None = None


def extract_model_source(text: str) -> str:
    """The behaviour-DSL model in LLM text: a ``class X(Model):`` in a Python (or untagged)
    fence, else in the text itself; ``<answer>`` bodies and the text after ``</think>`` first,
    as Verilog extraction does. Raises :class:`ExtractionError` when there is none."""
    if not isinstance(text, str):
        raise ExtractionError(f"completion must be text, not {type(text).__name__}")
    answers = [m.group(1) for m in _ANSWER.finditer(text)]
    ends = list(_THINK_END.finditer(text))
    scopes = answers or ([text[ends[-1].end():]] if ends else [])
    for scope in (*scopes, text):
        fenced = [body for lang, body in _FENCE.findall(scope)
                  if lang.lower() in _PY_LANGS and _MODEL_CLASS.search(body)]
        if fenced:
            return fenced[-1]  # the last model written is the answer
        if "```" not in scope and _MODEL_CLASS.search(scope):
            return scope
    raise ExtractionError("no behaviour model (a `class Name(Model):` block) in the completion")


@dataclass(frozen=True)
class _Prepared:
    """Once-per-task facts: the task, its checked golden, the stimulus and the goal prefix."""

    task: BehaveTask
    golden: BehaviorModel | None
    unusable: str | None  # why the task cannot score (its golden does not load)
    stimulus: Stimulus | None
    goals_before: tuple[int, ...] = ()  # [k]: distinct golden goals hit by transactions < k
    goals_total: int = 0


def _goal_prefix(task: BehaveTask, golden: BehaviorModel, stimulus: Stimulus,
                 ) -> tuple[tuple[int, ...], int]:
    """Distinct golden branch goals hit by the first k transactions, for every k.

    Resets follow the checker's (:func:`~rtlforge.behave.sim.check.check_model`): before every
    transaction marked ``reset`` but the first; coverage survives resets."""
    from rtlforge.behave.sim.stimulus import input_values

    instance = golden.instance()
    instance.clear_coverage()
    counts = [0]
    for n, txn in enumerate(stimulus.transactions):
        if txn.reset and n > 0:
            instance.reset()
        instance.process(input_values(task, txn))
        counts.append(len(instance.hit_goals()))
    return tuple(counts), 2 * len(golden.ir.branches)


def _task_key(value: Any) -> tuple[str, str]:
    if isinstance(value, BehaveTask):
        digest = hashlib.sha256(value.model_dump_json().encode()).hexdigest()
        return "task", f"{value.directory}:{digest}"
    return "dir", str(Path(value).resolve())


class _BehaveReward(Reward):
    """Shared machinery: task resolution and caching, extraction, parallel checks, verdicts.

    Unset stimulus options take the task's ``[stimulus]``, then the issue's baseline 50 x 100,
    so the reward agrees with ``rtlforge behave check``.

    Args:
        tasks: a directory of task directories, or one task directory, that the ``task_id``
            column names.
        seed: the stimulus seed.
        sequences: random stimulus sequences per check (unset: the task's, then 50).
        transactions: transactions per sequence (unset: the task's, then 100).
        timeout_s: wall-clock seconds per tool run (unset: the preset's, 120 / 1,200).
        workers: RTL checks run in parallel.
        preset: the scoring budget and unresolved policy (:data:`SCORING_PRESETS`): ``fast``
            (ours, the default) or ``paper`` (the BEHAVE paper's).
        unresolved: what a ``timeout`` scores: ``abstain`` (None) or ``zero`` (0.0, the
            paper's); unset: the preset's. An ``infra_error`` abstains under both.
        search_budget_s: seconds of goal-guided search per artifact (0: none); unset: the
            preset's (0 / 600).
        artifact_budget_s: wall-clock seconds for the whole check of one artifact; unset: the
            preset's (none / 1,200).
        runner: the sandbox runner checks run in; by default one is made on first use and kept
            until :meth:`close`.
        executor: checks go through it instead of the ``workers`` threads; a remote one
            rebuilds this reward from its options, with its own sandbox runner, on each worker.
    """

    name: ClassVar[str]
    artifact: ClassVar[Literal["rtl", "model"]] = "rtl"

    def __init__(self, tasks: str | Path | None = None, *, seed: int = 0,
                 sequences: int | None = None, transactions: int | None = None,
                 timeout_s: float | None = None, workers: int = 4, runner: Any = None,
                 executor: Executor | None = None, preset: Literal["fast", "paper"] = "fast",
                 unresolved: Unresolved | None = None, search_budget_s: float | None = None,
                 artifact_budget_s: float | None = None) -> None:
        if workers < 1:
            raise ValueError(f"workers must be at least 1, not {workers}")
        if preset not in SCORING_PRESETS:
            raise ValueError(f"preset must be one of {sorted(SCORING_PRESETS)}, not {preset!r}")
        chosen = SCORING_PRESETS[preset]
        given = {"timeout_s": timeout_s, "search_budget_s": search_budget_s,
                 "artifact_budget_s": artifact_budget_s, "unresolved": unresolved}
        # validated as a ScoringPreset: a misspelt policy or a negative budget is a ValueError
        self.scoring = ScoringPreset.model_validate(
            {**chosen.model_dump(), **{k: v for k, v in given.items() if v is not None}})
        # what a worker needs to build the same reward (the runner and executor stay here)
        self.options: dict[str, Any] = {
            "tasks": str(tasks) if tasks is not None else None, "seed": seed,
            "sequences": sequences, "transactions": transactions, "preset": preset,
            **self.scoring.model_dump()}
        self.executor = executor
        self.tasks = Path(tasks) if tasks is not None else None
        given = {"sequences": sequences, "transactions": transactions}
        # only what the caller gave counts as explicit: the rest comes from each task's
        # [stimulus], then the defaults (generate_stimulus reads model_fields_set)
        self.stimulus_config = StimulusConfig(
            seed=seed, **{k: v for k, v in given.items() if v is not None})
        self.timeout_s = self.scoring.timeout_s
        self.workers = workers
        self._runner = runner
        self._own_runner = runner is None
        self._prepared: dict[tuple[str, str], _Prepared] = {}
        # the same preparations by the loaded task's key: what a check item carries
        self._by_loaded: dict[tuple[str, str], _Prepared] = {}
        self._lock = threading.Lock()

    # ---------------------------------------------------------------- resources

    def runner(self) -> Any:
        with self._lock:
            if self._runner is None:
                from rtlforge.sandbox.runner import SandboxRunner

                self._runner = SandboxRunner()
            return self._runner

    def close(self) -> None:
        """Stop the runner this reward made (one passed in belongs to the caller)."""
        with self._lock:
            if self._own_runner and self._runner is not None:
                self._runner.close()
                self._runner = None

    # ---------------------------------------------------------------- tasks

    def _task_dir(self, task_id: str) -> Path:
        if self.tasks is None:
            raise ValueError(f"{self.name}: a task_id column needs the `tasks` option (a "
                             "directory of BEHAVE task directories), or pass a behave_task "
                             "column")
        if not _TASK_NAME.match(task_id):
            raise BehaveTaskError(f"task id {task_id!r} is not a plain directory name")
        if (self.tasks / TASK_FILE).is_file() and task_id in (self.tasks.name,
                                                              self.tasks.resolve().name):
            return self.tasks
        return self.tasks / task_id

    def prepare(self, task: BehaveTask | str | Path) -> _Prepared:
        """The task (loaded when given as a directory), golden and stimulus, cached here.

        A task that does not load raises :class:`BehaveTaskError` (the caller's configuration);
        a golden that does not load makes the task unusable (its samples abstain)."""
        key = _task_key(task)
        with self._lock:
            hit = self._prepared.get(key) or self._by_loaded.get(key)
        if hit is not None:
            return hit
        loaded = task if isinstance(task, BehaveTask) else load_behave_task(task)
        try:
            golden = golden_model(loaded)
        except GoldenUnavailable as exc:
            prepared = _Prepared(task=loaded, golden=None, stimulus=None,
                                 unusable=f"the task's golden model does not load: {exc}")
        else:
            stimulus = generate_stimulus(loaded, self.stimulus_config)
            try:
                before, total = _goal_prefix(loaded, golden, stimulus)
            except Exception as exc:  # noqa: BLE001 - the golden is the task's: never the artifact's
                prepared = _Prepared(task=loaded, golden=None, stimulus=None,
                                     unusable=f"the task's golden model failed: {exc!r}")
            else:
                prepared = _Prepared(task=loaded, golden=golden, unusable=None,
                                     stimulus=stimulus, goals_before=before, goals_total=total)
        with self._lock:
            prepared = self._prepared.setdefault(key, prepared)
            self._by_loaded.setdefault(_task_key(loaded), prepared)
            return prepared

    def _resolve(self, n: int, columns: Mapping[str, Any]) -> list[_Prepared]:
        given = columns.get("behave_task")
        if given is None:
            ids = columns.get("task_id")
            if ids is None:
                raise ValueError(f"{self.name} needs a per-sample behave_task column (a task "
                                 "directory or BehaveTask) or a task_id column with `tasks`")
            given = [self._task_dir(str(t)) for t in _per_sample(ids, n, "task_id")]
        else:
            given = _per_sample(given, n, "behave_task")
        return [self.prepare(t) for t in given]

    # ---------------------------------------------------------------- scoring

    def score(self, prompts: Sequence[Any], completions: Sequence[Any],
              **columns: Any) -> list[float | None]:
        return [d.reward for d in self.score_detailed(prompts, completions, **columns)]

    def score_detailed(self, prompts: Sequence[Any], completions: Sequence[Any],
                       **columns: Any) -> list[BehaveRewardDetail]:
        """One :class:`BehaveRewardDetail` per completion, in order."""
        prepared = self._resolve(len(completions), columns)
        jobs: dict[tuple[tuple[str, str], str], tuple[BehaveTask, str]] = {}
        plan: list[tuple[_Prepared, Any]] = []
        for prep, completion in zip(prepared, completions, strict=True):
            if prep.unusable is not None:
                plan.append((prep, None))
                continue
            try:
                source = self._extract(completion_text(completion))
            except (ExtractionError, TypeError) as exc:
                plan.append((prep, exc))
                continue
            key = (_task_key(prep.task), source)
            jobs.setdefault(key, (prep.task, source))
            plan.append((prep, key))
        results = self._run(jobs)
        return [self._detail(prep, item, results) for prep, item in plan]

    def check_item(self, item: tuple[BehaveTask, str]) -> BehaveResult:
        """One artifact's check against its task (prepared once per reward instance)."""
        task, source = item
        return self._check(self.prepare(task), source)

    def _run(self, jobs: Mapping[Any, tuple[BehaveTask, str]]) -> dict[Any, BehaveResult]:
        if self.executor is not None and jobs:
            work: Work[tuple[BehaveTask, str], BehaveResult] = Work(
                fn=self.check_item, lost=self._lost,
                spec=BehaveCheckWork(reward=self.name, options=self.options))
            return dict(zip(jobs, self.executor.run(work, list(jobs.values())), strict=True))
        if self.artifact == "model" or self.workers == 1 or len(jobs) < 2:
            # models run in-process: threads gain nothing
            return {key: self.check_item(job) for key, job in jobs.items()}
        with ThreadPoolExecutor(max_workers=min(self.workers, len(jobs)),
                                thread_name_prefix="rtlforge-behave") as pool:
            futures = {key: pool.submit(self.check_item, job) for key, job in jobs.items()}
            return {key: future.result() for key, future in futures.items()}

    def _lost(self, item: tuple[BehaveTask, str], reason: str) -> BehaveResult:
        return BehaveResult(verdict="infra_error", artifact=self.artifact, message=reason)

    def _extract(self, text: str) -> str:
        return extract_verilog(text) if self.artifact == "rtl" else extract_model_source(text)

    def _guided(self) -> GuidedConfig | None:
        """The goal-guided search and artifact budget, or None for a plain check."""
        scoring = self.scoring
        if scoring.search_budget_s <= 0 and scoring.artifact_budget_s is None:
            return None
        return GuidedConfig(budget_s=scoring.search_budget_s,
                            artifact_budget_s=scoring.artifact_budget_s)

    def _check(self, prep: _Prepared, source: str) -> BehaveResult:
        assert prep.golden is not None and prep.stimulus is not None
        guided = self._guided()
        if self.artifact == "rtl":
            candidate = Candidate.from_source(source)
            if guided is not None:
                return guided_check_rtl(prep.task, candidate, golden=prep.golden,
                                        stimulus=prep.stimulus, config=guided,
                                        runner=self.runner(), timeout_s=self.timeout_s).result
            return check_rtl(prep.task, candidate, runner=self.runner(),
                             stimulus=prep.stimulus, golden=prep.golden.instance(),
                             timeout_s=self.timeout_s)
        try:
            model = load_task_model(prep.task, source, name="completion")
        except TaskModelError as exc:  # the artifact's fault: an error verdict, as the CLI's
            return BehaveResult(verdict="error", artifact="model", metrics={MODEL_INVALID: 1},
                                message=f"the model does not check: {exc}")
        if guided is not None:
            return guided_check_model(prep.task, model, golden=prep.golden,
                                      stimulus=prep.stimulus, config=guided).result
        return check_model(prep.task, model, stimulus=prep.stimulus,
                           golden=prep.golden.instance())

    def _detail(self, prep: _Prepared, item: Any,
                results: Mapping[Any, BehaveResult]) -> BehaveRewardDetail:
        task_id = prep.task.id
        if item is None:
            return BehaveRewardDetail(task_id=task_id, reward=None, flags=(TASK_UNUSABLE,),
                                      reason=prep.unusable)
        if isinstance(item, Exception):
            what = "Verilog" if self.artifact == "rtl" else "behaviour model"
            return BehaveRewardDetail(task_id=task_id, reward=0.0, flags=(NO_CODE,),
                                      reason=f"no {what} in the completion: {item}")
        result = results[item]
        base = {"task_id": task_id, "verdict": result.verdict, "mismatches": result.mismatches}
        if unresolved(result.verdict):
            if result.verdict is Verdict.INFRA_ERROR:  # abstains under every policy
                return BehaveRewardDetail(**base, reward=None, flags=(INFRA,),
                                          reason=f"infrastructure failure: {result.message}")
            if self.scoring.unresolved == "zero":  # the paper's: an unresolved check is a 0
                return BehaveRewardDetail(
                    **base, reward=0.0, flags=(TIMEOUT,),
                    reason=f"unresolved, counted as 0 (unresolved='zero'): {result.message}")
            return BehaveRewardDetail(
                **base, reward=None, flags=(TIMEOUT,),
                reason=f"a tool ran past its time limit: {result.message}")
        flags = (MODEL_INVALID,) if result.metrics.get(MODEL_INVALID) else ()
        reward, extra = self._reward(prep, result)
        return BehaveRewardDetail(**base, **extra, reward=reward, flags=flags,
                                  reason=_reason(result))

    def _reward(self, prep: _Prepared, result: BehaveResult) -> tuple[float, dict[str, Any]]:
        """The number for a resolved verdict (pass, fail, error), and detail fields."""
        return (1.0 if result.verdict == "pass" else 0.0), {}


def reward_means(details: Sequence[BehaveRewardDetail]) -> dict[str, float | int | None]:
    """Both ways of averaging a batch's rewards, for reporting: ``mean_abstain`` leaves every
    unresolved check out (ours), ``mean_zero`` counts a ``timeout`` as 0 (the paper's); both
    leave out infrastructure failures and unusable tasks. Which one the rewards themselves
    used is the reward's ``unresolved`` option; these are computed from the details either
    way."""
    resolved = [d.reward for d in details if d.reward is not None and TIMEOUT not in d.flags]
    timeouts = sum(TIMEOUT in d.flags for d in details)
    with_zero = resolved + [0.0] * timeouts
    return {"mean_abstain": sum(resolved) / len(resolved) if resolved else None,
            "mean_zero": sum(with_zero) / len(with_zero) if with_zero else None,
            "timeouts": timeouts,
            "abstained": sum(d.reward is None and TIMEOUT not in d.flags for d in details)}


def _reason(result: BehaveResult) -> str | None:
    """One line on why an artifact did not pass (None when it did)."""
    if result.verdict == "pass":
        return None
    if result.first_failure is not None:
        return result.first_failure.describe().splitlines()[0]
    return result.message.splitlines()[0] if result.message else result.verdict


def _per_sample(values: Any, n: int, name: str) -> list[Any]:
    if isinstance(values, str | Path | BehaveTask):
        raise ValueError(f"column {name!r} must hold one value per completion, not one value")
    values = list(values)
    if len(values) != n:
        raise ValueError(f"column {name!r} has {len(values)} values for {n} completions")
    return values


class BehaveRTLReward(_BehaveReward):
    """1.0 when the completion's RTL passes B* under BEHAVE-Sim, else 0.0; None: unresolved."""

    name: ClassVar[str] = "behave-rtl"
    artifact: ClassVar[Literal["rtl", "model"]] = "rtl"


class BehaveModelReward(_BehaveReward):
    """1.0 when the completion's behaviour model B̂ passes against B*, else 0.0 (a model that
    does not check is 0.0 with the checker's reason); None: unresolved."""

    name: ClassVar[str] = "behave-model"
    artifact: ClassVar[Literal["rtl", "model"]] = "model"


class BehaveCoverageReward(_BehaveReward):
    """``(pass + share of B*'s branch goals reached before the first failing transaction) / 2``;
    ``artifact`` says which kind the completion holds (``rtl`` or ``model``)."""

    name: ClassVar[str] = "behave-coverage"

    def __init__(self, tasks: str | Path | None = None, *,
                 artifact: Literal["rtl", "model"] = "rtl", **options: Any) -> None:
        """Args:
            artifact: what the completion holds: ``rtl`` (a design) or ``model`` (a
                behaviour model).
            **options: the options every behave reward takes.
        """
        super().__init__(tasks, **options)
        if artifact not in ("rtl", "model"):
            raise ValueError(f"artifact must be 'rtl' or 'model', not {artifact!r}")
        self.artifact = artifact  # type: ignore[misc]  # per instance: which extractor and check
        self.options["artifact"] = artifact

    def _reward(self, prep: _Prepared, result: BehaveResult) -> tuple[float, dict[str, Any]]:
        n = len(prep.goals_before) - 1
        if result.verdict == "pass":
            verified = prep.goals_before[n]
        elif result.first_failure is not None and result.first_failure.transaction is not None:
            verified = prep.goals_before[min(result.first_failure.transaction, n)]
        else:
            verified = 0
        total = prep.goals_total
        share = verified / total if total else float(result.verdict == "pass")
        value = (float(result.verdict == "pass") + share) / 2
        return value, {"goals_verified": verified, "goals_total": total}


class BehaveCheckWork(WorkSpec):
    """BEHAVE-Sim checks of ``(task, artifact source)`` items, rebuilt on a remote worker: the
    reward ``reward`` with ``options`` from the worker's plugin host (``host``)."""

    reward: str
    options: dict[str, Any]
    host: HostSpec = HostSpec()

    def build(self, services: WorkerServices) -> Callable[[tuple[BehaveTask, str]], BehaveResult]:
        reward = self.host.build().create("reward", self.reward, **self.options)
        if not isinstance(reward, _BehaveReward):
            raise TypeError(f"reward {self.reward!r} is not a BEHAVE reward")
        return reward.check_item


REWARDS: tuple[type[_BehaveReward], ...] = (BehaveRTLReward, BehaveModelReward,
                                            BehaveCoverageReward)


def register_rewards(register: Register) -> None:
    """Called by the ``register_rewards`` hook of :mod:`rtlforge.behave.plugin`."""
    for reward in REWARDS:  # the names were behave_rtl...: kept, as configs name them
        register(reward, aliases=(reward.name.replace("-", "_"),))
