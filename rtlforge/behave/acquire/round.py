"""One acquisition round: rollouts in, admitted tasks and a record of every decision out.

1. The Analyst reads a summary of the completed rollouts (per task: count, mean reward, a few
   feedback texts), the library's source cards, and the experience notes of earlier rounds; it
   names capability gaps, picks sources with an objective each, and leaves a note.
2. For each pick, up to ``max_rounds`` construction-and-review rounds:
   the Builder writes the task declaration, the spec S and B1 from the sources and objective;
   S, the declaration and B1 are checked (task format, the DSL checker and the interface fit,
   B1 run on the stimulus, S must not quote B1 or the sources); the Implementer writes B2
   from S and the public interface document only (:class:`~.roles.ImplementerContext`);
   BEHAVE-Sim compares B2 with B1 (B1 as the golden); the Reviewer sees everything and decides.
   A candidate is admitted only when B2 agrees with B1 *and* the Reviewer accepts with
   ``spec_matches_sources``; a Reviewer ``reject`` ends it; anything else goes back to the
   Builder with the reason (repairs always go to the Builder: the Implementer stays blind, and
   a disagreement means S did not pin the behaviour down).
3. Admitted (S, B1) pairs are written to the pool (B1 as ``golden.py``) and join the RL
   schedule; each admission, rejection, library exclusion and unresolved candidate is a
   :class:`AcquisitionRecord` with its reason.

Whose fault: a malformed or wrong answer is the candidate's (a rejection or a repair); a
generator that fails or a role plugin that raises is infrastructure: the candidate is
``unresolved``, never rejected.
"""

from __future__ import annotations

import json
import tomllib
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rtlforge.behave.acquire.roles import (
    DEFAULT_ROLES,
    AcquisitionRole,
    AnalystAnswer,
    AnalystContext,
    AnswerRejected,
    BuilderAnswer,
    BuilderContext,
    ImplementerContext,
    Pick,
    ReviewerAnswer,
    ReviewerContext,
    SourceCard,
    SourceText,
    Stage,
    TaskFeedback,
    parse_analyst,
    parse_builder,
    parse_implementer,
    parse_reviewer,
)
from rtlforge.behave.acquire.sources import Exclusion, LibraryLoad, Source, normalised_hash
from rtlforge.behave.acquire.taskpool import Provenance, TaskPool
from rtlforge.core.errors import ConfigError, RtlforgeError
from rtlforge.core.interfaces import Generator
from rtlforge.core.untrusted import load_toml

__all__ = ["AcquisitionRecord", "AttemptRecord", "RolloutRecord", "RoundConfig",
           "RoundResult", "interface_document", "read_rollout_log", "run_round"]

RecordKind = Literal["admission", "rejection", "exclusion", "unresolved"]
_FIXED_KEYS = ("id", "spec", "spec_file", "golden", "rtllm")
#: Consecutive lines of B1 or a source that S may not contain (it would hand them to B2).
LEAK_LINES = 3


class RoundConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    max_rounds: int = Field(3, ge=1, le=10, description="construction-and-review rounds")
    max_picks: int = Field(2, ge=1, le=20, description="candidates per acquisition round")
    seed: int = Field(0, description="BEHAVE-Sim stimulus seed for B2 vs B1")
    sequences: int = Field(20, ge=1, le=200)
    transactions: int = Field(50, ge=1, le=1000)
    roles: dict[Stage, str] = Field(default_factory=lambda: dict(DEFAULT_ROLES))
    feedback_per_task: int = Field(3, ge=0, le=20)
    tasks_shown: int = Field(30, ge=1, le=500)
    experience_shown: int = Field(10, ge=0, le=100)


class RolloutRecord(BaseModel):
    """One completed training rollout (a line of the rollout log).

    Unknown keys are ignored so a trainer may log more than acquisition reads."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    task_id: str = Field(min_length=1)
    reward: float | None
    feedback: str = ""
    update: int | None = None


class AttemptRecord(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    attempt: int
    outcome: Literal["builder_invalid", "implementer_invalid", "reviewer_invalid",
                     "disagree", "repair_requested", "rejected", "accepted"]
    reason: str
    message: str = ""
    check_verdict: str | None = None
    mismatches: int | None = None
    reviewer: ReviewerAnswer | None = None


class AcquisitionRecord(BaseModel):
    """One decision of a round, with its reason (a line of ``records.jsonl``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    round: int
    kind: RecordKind
    reason: str
    message: str
    candidate: str | None = None
    sources: tuple[str, ...] = ()
    objective: str = ""
    task_id: str | None = None
    attempts: tuple[AttemptRecord, ...] = ()


class RoundResult(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    round: int
    gaps: tuple[str, ...] = ()
    experience: str = ""
    records: tuple[AcquisitionRecord, ...] = ()

    def of(self, kind: RecordKind) -> list[AcquisitionRecord]:
        return [r for r in self.records if r.kind == kind]


# ------------------------------------------------------------------------------ rollouts


def read_rollout_log(path: str | Path) -> list[RolloutRecord]:
    """The rollout log's records (JSONL); a line that is not a record is a ConfigError naming
    the line (the log is the caller's input: a guess would mislead the Analyst)."""
    source = Path(path)
    try:
        lines = source.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"rollout log {source}: {exc}") from exc
    records = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            records.append(RolloutRecord.model_validate_json(line))
        except ValidationError as exc:
            first = exc.errors()[0]
            raise ConfigError(f"rollout log {source} line {number}: "
                              f"{'.'.join(str(p) for p in first['loc']) or 'line'}: "
                              f"{first['msg']}") from exc
    return records


def _summarise(rollouts: Sequence[RolloutRecord], config: RoundConfig
               ) -> tuple[TaskFeedback, ...]:
    by_task: dict[str, list[RolloutRecord]] = defaultdict(list)
    for record in rollouts:
        by_task[record.task_id].append(record)
    rows = []
    for task_id, group in by_task.items():
        scored = [r.reward for r in group if r.reward is not None]
        texts = list(dict.fromkeys(r.feedback.strip()[:400] for r in group
                                   if r.feedback.strip()))
        rows.append(TaskFeedback(task_id=task_id, rollouts=len(group), scored=len(scored),
                                 mean_reward=sum(scored) / len(scored) if scored else None,
                                 feedback=tuple(texts[:config.feedback_per_task])))
    # weakest first: that is where the gaps are
    rows.sort(key=lambda r: (r.mean_reward if r.mean_reward is not None else -1.0, r.task_id))
    return tuple(rows[:config.tasks_shown])


# ------------------------------------------------------------------------------- helpers


def _type_text(value_type: Any) -> str:
    element = getattr(value_type, "element", None)
    if element is not None:
        return f"{_type_text(element)}[{value_type.length}]"
    kind = getattr(value_type, "kind", "?")
    return "bool" if kind == "bool" else f"{kind}{getattr(value_type, 'width', '?')}"


def interface_document(task: Any) -> str:
    """The public interface of a task in words: what the Implementer may know besides S."""
    lines = [f"Module: {task.top}"]
    if task.clock:
        lines.append(f"Clock: {task.clock}")
    if task.reset is not None:
        lines.append(f"Reset: {task.reset.signal} (active {task.reset.active}, "
                     f"{task.reset.kind})")
    for iface in task.interfaces:
        lines.append(f"{iface.direction} interface {iface.name} ({iface.protocol.value}):")
        for endpoint in iface.endpoints:
            lines.append(f"  {endpoint.name}: {_type_text(endpoint.type)}")
    lines.append("A behaviour model's process() takes the input endpoints as parameters and "
                 "returns a record with the output endpoints as fields.")
    return "\n".join(lines)


def _norm_lines(text: str) -> list[str]:
    return [" ".join(line.split()) for line in text.splitlines() if len(line.strip()) >= 8]


def _leak(spec: str, secret: str) -> str | None:
    """A run of LEAK_LINES non-trivial lines of ``secret`` that also appear in ``spec``."""
    have = set(_norm_lines(spec))
    lines = _norm_lines(secret)
    for i in range(len(lines) - LEAK_LINES + 1):
        run = lines[i:i + LEAK_LINES]
        if all(line in have for line in run):
            return run[0]
    return None


def _source_text(source: Source) -> SourceText:
    hints = tuple(f"{h.direction} {h.name}: {h.type}" + (f" ({h.note})" if h.note else "")
                  for h in source.meta.interface)
    return SourceText(id=source.id, language=source.meta.language, title=source.meta.title,
                      description=source.meta.description, code=source.code,
                      interface_hints=hints)


class _Unresolved(Exception):
    """Infrastructure stopped a candidate (generator, role plugin, checker): not its fault."""


class _Built(BaseModel):
    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    answer: BuilderAnswer
    task: Any  # BehaveTask
    model: Any  # BehaviorModel
    behave_toml: str


# --------------------------------------------------------------------------------- round


class _Round:
    def __init__(self, *, host: Any, generator: Any, pool: TaskPool, library: LibraryLoad,
                 config: RoundConfig, number: int) -> None:
        self.host = host
        self.default_generator = generator
        self.pool = pool
        self.library = library
        self.config = config
        self.number = number
        self.roles: dict[Stage, Any] = {}
        self._generators: dict[str, Generator] = {}
        self._owned: list[Generator] = []

    # ------------------------------------------------------------------ roles and calls

    def load_roles(self) -> None:
        for stage, name in self.config.roles.items():
            try:
                role = self.host.create("agent_role", name)
            except RtlforgeError as exc:
                raise ConfigError(f"acquisition role {stage!r}: {exc}") from exc
            if not isinstance(role, AcquisitionRole) or role.acquisition_stage != stage:
                raise ConfigError(f"agent_role {name!r} does not play the acquisition stage "
                                  f"{stage!r} (it needs acquisition_stage = {stage!r}, "
                                  "acquisition_request and acquisition_sampling)")
            self.roles[stage] = role

    def _generator_for(self, role: Any) -> Any:
        name = getattr(role.settings, "generator", None)
        if name is None:
            return self.default_generator
        options = dict(getattr(role.settings, "generator_options", {}) or {})
        key = json.dumps([name, options], sort_keys=True, default=str)
        if key not in self._generators:
            made = self.host.create("generator", name, **options)
            self._generators[key] = made
            self._owned.append(made)
        return self._generators[key]

    def call(self, stage: Stage, context: BaseModel, key: str) -> str:
        role = self.roles[stage]
        try:
            request = role.acquisition_request(context)
            request = request.model_copy(update={"metadata": {
                **request.metadata, "task_id": key, "stage": stage}})
            answers = self._generator_for(role).generate([request], role.acquisition_sampling())
        except Exception as exc:  # a role plugin or a generator failing is infrastructure
            raise _Unresolved(f"{stage} ({self.config.roles[stage]}): {exc}") from exc
        if not answers or not answers[0]:
            raise _Unresolved(f"{stage}: the generator returned no answer")
        return str(answers[0][0].text)

    def close(self) -> None:
        for generator in self._owned:
            generator.close()

    # ------------------------------------------------------------------------- analyst

    def analyse(self, rollouts: Sequence[RolloutRecord]) -> AnalystAnswer:
        used: dict[str, list[str]] = defaultdict(list)
        for prov in self.pool.provenance():
            for source in prov.sources:
                used[source].append(prov.task_id)
        cards = tuple(SourceCard(id=s.id, title=s.meta.title, description=s.meta.description,
                                 language=s.meta.language, tags=s.meta.tags,
                                 used_by=tuple(used.get(s.id, ())))
                      for s in self.library.sources)
        context = AnalystContext(round=self.number, tasks=_summarise(rollouts, self.config),
                                 library=cards,
                                 experience=tuple(self.pool.experience(
                                     self.config.experience_shown)),
                                 max_picks=self.config.max_picks)
        return parse_analyst(self.call("analyst", context, "analyst"))

    # ------------------------------------------------------------------------- builder

    def check_build(self, answer: BuilderAnswer, task_id: str,
                    sources: Sequence[Source]) -> _Built:
        from rtlforge.behave.sim.check import check_model
        from rtlforge.behave.sim.golden import TaskModelError, load_task_model
        from rtlforge.behave.sim.task import BehaveTaskError, parse_behave_task

        try:
            raw = load_toml(answer.task_toml)
        except (tomllib.TOMLDecodeError, RecursionError) as exc:
            raise AnswerRejected("builder", "bad_task", f"task declaration: {exc}") from None
        fixed = sorted(set(raw) & set(_FIXED_KEYS))
        if fixed:
            raise AnswerRejected("builder", "bad_task", f"the task declaration may not set "
                                 f"{fixed} (the pool sets them)")
        text = (f'id = "{task_id}"\nspec_file = "spec.md"\ngolden = "golden.py"\n'
                + answer.task_toml.strip() + "\n")
        try:
            task = parse_behave_task(text, file="behave.toml")
        except BehaveTaskError as exc:
            raise AnswerRejected("builder", "bad_task", str(exc)) from None
        task = task.model_copy(update={"spec": answer.spec})
        try:
            model = load_task_model(task, answer.model, name=task_id)
        except TaskModelError as exc:
            raise AnswerRejected("builder", "bad_model", f"B1: {exc}") from None
        for secret, what in ((answer.model, "B1"),
                             *((s.code, f"source {s.id}") for s in sources)):
            line = _leak(answer.spec, secret)
            if line is not None:
                raise AnswerRejected("builder", "spec_leak", f"the spec quotes {what} "
                                     f"({line!r} and the lines after it); the implementer "
                                     "must not see it")
        alone = check_model(task, model, golden=model.instance(), seed=self.config.seed,
                            stimulus=self._stimulus(task))
        if alone.verdict != "pass":
            raise AnswerRejected("builder", "bad_model",
                                 f"B1 does not run on the task's stimulus ({alone.verdict}): "
                                 f"{alone.message or 'see its first failure'}")
        return _Built(answer=answer, task=task, model=model, behave_toml=text)

    def _stimulus(self, task: Any) -> Any:
        from rtlforge.behave.sim.stimulus import StimulusConfig

        return StimulusConfig(seed=self.config.seed, sequences=self.config.sequences,
                              transactions=self.config.transactions)

    # ------------------------------------------------------------------------ candidate

    def candidate(self, index: int, pick: Pick, sources: Sequence[Source]
                  ) -> AcquisitionRecord:
        from rtlforge.behave.sim.check import check_model
        from rtlforge.behave.sim.golden import TaskModelError, load_task_model

        key = pick.source
        task_id = f"acq{self.number:03d}_{index:02d}_{pick.source}"
        texts = tuple(_source_text(s) for s in sources)
        ids = tuple(s.id for s in sources)
        attempts: list[AttemptRecord] = []
        repair, previous = "", None
        max_rounds = self.config.max_rounds

        def record(kind: RecordKind, reason: str, message: str,
                   admitted: str | None = None) -> AcquisitionRecord:
            return AcquisitionRecord(round=self.number, kind=kind, reason=reason,
                                     message=message, candidate=task_id, sources=ids,
                                     objective=pick.objective, task_id=admitted,
                                     attempts=tuple(attempts))

        try:
            for attempt in range(1, max_rounds + 1):
                context = BuilderContext(
                    sources=texts, objective=pick.objective, gap=pick.gap, attempt=attempt,
                    max_attempts=max_rounds, repair=repair,
                    previous_task=previous.answer.task_toml if previous else "",
                    previous_spec=previous.answer.spec if previous else "",
                    previous_model=previous.answer.model if previous else "")
                try:
                    built = self.check_build(parse_builder(self.call("builder", context, key)),
                                             task_id, sources)
                except AnswerRejected as exc:
                    attempts.append(AttemptRecord(attempt=attempt, outcome="builder_invalid",
                                                  reason=exc.reason, message=exc.message))
                    repair = f"Your answer was refused ({exc.reason}): {exc.message}"
                    continue
                previous = built
                interface = interface_document(built.task)
                implementer = ImplementerContext(spec=built.answer.spec, interface=interface)
                try:
                    b2_text = parse_implementer(self.call("implementer", implementer, key)).model
                    b2 = load_task_model(built.task, b2_text, name=f"{task_id}_b2")
                except (AnswerRejected, TaskModelError) as exc:
                    reason = exc.reason if isinstance(exc, AnswerRejected) else "bad_model"
                    message = exc.message if isinstance(exc, AnswerRejected) else str(exc)
                    attempts.append(AttemptRecord(attempt=attempt, outcome="implementer_invalid",
                                                  reason=reason, message=message))
                    repair = ("An independent implementer could not write a valid model from "
                              f"your spec ({message}); make the spec and interface clearer.")
                    continue
                result = check_model(built.task, b2, golden=built.model.instance(),
                                     seed=self.config.seed, stimulus=self._stimulus(built.task))
                if result.verdict == "infra_error":
                    raise _Unresolved(f"BEHAVE-Sim could not compare B2 with B1: "
                                      f"{result.message}")
                check = _render_check(result)
                passed = result.verdict == "pass"
                review_ctx = ReviewerContext(
                    sources=texts, objective=pick.objective, spec=built.answer.spec,
                    interface=interface, builder_model=built.answer.model,
                    implementer_model=b2_text, check=check, check_passed=passed,
                    attempt=attempt, max_attempts=max_rounds)
                try:
                    review = parse_reviewer(self.call("reviewer", review_ctx, key))
                except AnswerRejected as exc:
                    attempts.append(AttemptRecord(attempt=attempt, outcome="reviewer_invalid",
                                                  reason=exc.reason, message=exc.message,
                                                  check_verdict=result.verdict,
                                                  mismatches=result.mismatches))
                    repair = "" if passed else f"B2 disagreed with B1:\n{check}"
                    continue
                base = {"attempt": attempt, "check_verdict": result.verdict,
                        "mismatches": result.mismatches, "reviewer": review}
                if review.decision == "reject":
                    attempts.append(AttemptRecord(outcome="rejected", reason="reviewer_rejected",
                                                  message=review.notes, **base))
                    return record("rejection", "reviewer_rejected",
                                  f"the reviewer rejected the candidate: {review.notes}")
                if passed and review.decision == "accept" and review.spec_matches_sources:
                    attempts.append(AttemptRecord(outcome="accepted", reason="accepted",
                                                  message=review.notes, **base))
                    return self.admit(built, pick, ids, attempts, result, record)
                if not passed:
                    attempts.append(AttemptRecord(
                        outcome="disagree", reason="b2_disagrees",
                        message=f"B2 disagrees with B1 ({result.mismatches} mismatches); "
                                f"reviewer: {review.notes}", **base))
                    repair = (f"An independent model written from your spec disagrees with "
                              f"your B1:\n{check}\nReviewer: {review.notes}")
                else:
                    why = ("the spec does not match the sources" if not
                           review.spec_matches_sources else "the reviewer asked for a repair")
                    attempts.append(AttemptRecord(outcome="repair_requested",
                                                  reason="repair_requested",
                                                  message=f"{why}: {review.notes}", **base))
                    repair = f"Reviewer ({why}): {review.notes}"
            last = attempts[-1]
            return record("rejection", "max_rounds",
                          f"not accepted after {max_rounds} construction-and-review rounds; "
                          f"last: {last.outcome} ({last.reason}) {last.message}".strip())
        except _Unresolved as exc:
            return record("unresolved", "infrastructure", str(exc))

    def admit(self, built: _Built, pick: Pick, ids: tuple[str, ...],
              attempts: list[AttemptRecord], result: Any, record: Any) -> AcquisitionRecord:
        from rtlforge.behave.sim.golden import golden_model
        from rtlforge.behave.sim.task import load_behave_task

        task_id = built.task.id
        golden_hash = normalised_hash(built.answer.model, "python")
        for prov in self.pool.provenance():
            if prov.golden_hash == golden_hash:
                return record("rejection", "duplicate_task",
                              f"B1 is the same model as pool task {prov.task_id}")
        provenance = Provenance(task_id=task_id, round=self.number, sources=ids,
                                objective=pick.objective, gap=pick.gap, attempts=len(attempts),
                                check={"verdict": result.verdict,
                                       "mismatches": result.mismatches,
                                       "transactions": result.coverage.transactions,
                                       "goals_hit": result.coverage.goals_hit,
                                       "goals_total": result.coverage.goals_total},
                                golden_hash=golden_hash)
        directory = self.pool.admit(task_id, {"behave.toml": built.behave_toml,
                                              "spec.md": built.answer.spec,
                                              "golden.py": built.answer.model}, provenance)
        golden_model(load_behave_task(directory))  # the admitted task loads as any task does
        return record("admission", "accepted",
                      f"B2 agreed with B1 on {result.coverage.transactions} transactions and "
                      "the reviewer accepted", admitted=task_id)


def _render_check(result: Any) -> str:
    lines = [f"verdict: {result.verdict}, mismatches: {result.mismatches}, "
             f"transactions: {result.coverage.transactions}"]
    if result.message:
        lines.append(result.message)
    if result.first_failure is not None:
        lines.append("first failing transaction (expected = B1, observed = B2):")
        lines.append(result.first_failure.describe())
    return "\n".join(lines)


def _exclusion_record(number: int, exclusion: Exclusion) -> AcquisitionRecord:
    return AcquisitionRecord(round=number, kind="exclusion", reason=exclusion.reason,
                             message=exclusion.message,
                             sources=(exclusion.source_id,) if exclusion.source_id else ())


def run_round(*, host: Any, generator: Any, pool: TaskPool, library: LibraryLoad,
              rollouts: Sequence[RolloutRecord], config: RoundConfig | None = None
              ) -> RoundResult:
    """Run the next acquisition round of ``pool`` and record it (records.jsonl and report.html
    in the round folder, every record appended to the pool's acquisition.jsonl).

    Raises ConfigError for a role that is not an acquisition role (before any call)."""
    config = config or RoundConfig()
    number = pool.state().rounds_completed + 1
    pool.discard_round(number)  # what a killed run of this round left behind
    state = _Round(host=host, generator=generator, pool=pool, library=library, config=config,
                   number=number)
    state.load_roles()
    records = [_exclusion_record(number, e) for e in library.exclusions]
    gaps: tuple[str, ...] = ()
    note = ""
    try:
        try:
            analysis = state.analyse(rollouts)
        except AnswerRejected as exc:
            records.append(AcquisitionRecord(round=number, kind="rejection",
                                             reason=f"analyst_{exc.reason}",
                                             message=exc.message))
            analysis = AnalystAnswer()
        except _Unresolved as exc:
            records.append(AcquisitionRecord(round=number, kind="unresolved",
                                             reason="infrastructure", message=str(exc)))
            analysis = AnalystAnswer()
        gaps = tuple(g.name for g in analysis.gaps)
        note = analysis.experience
        seen: set[str] = set()
        index = 0
        for pick in analysis.picks:
            wanted = (pick.source, *pick.also)
            unknown = [s for s in wanted if library.get(s) is None]
            if unknown:
                excluded = {e.source_id for e in library.exclusions}
                why = ("is excluded from the library" if set(unknown) <= excluded
                       else "is not in the library")
                records.append(AcquisitionRecord(
                    round=number, kind="rejection", reason="unknown_source",
                    message=f"the analyst picked {unknown}, which {why}",
                    sources=tuple(wanted), objective=pick.objective))
                continue
            if pick.source in seen or index >= config.max_picks:
                records.append(AcquisitionRecord(
                    round=number, kind="rejection", reason="over_limit",
                    message=f"more than {config.max_picks} picks, or {pick.source!r} twice",
                    sources=tuple(wanted), objective=pick.objective))
                continue
            seen.add(pick.source)
            index += 1
            sources = [s for s in (library.get(w) for w in dict.fromkeys(wanted))
                       if s is not None]
            records.append(state.candidate(index, pick, sources))
    finally:
        state.close()
    result = RoundResult(round=number, gaps=gaps, experience=note, records=tuple(records))
    _journal(pool, result)
    return result


def _journal(pool: TaskPool, result: RoundResult) -> None:
    from rtlforge.behave.acquire.report import write_report  # it imports this module

    folder = pool.round_dir(result.round)
    write_report(result, folder)  # records.jsonl and report.html
    (folder / "round.json").write_text(result.model_dump_json(indent=1), encoding="utf-8")
    pool.append("acquisition.jsonl", result.records)
    outcome = _outcome_note(result)
    notes: list[Mapping[str, object]] = []
    if result.experience.strip():
        notes.append({"round": result.round, "source": "analyst", "note": result.experience})
    notes.append({"round": result.round, "source": "round", "note": outcome})
    pool.append("experience.jsonl", notes)
    pool.complete_round(result.round)


def _outcome_note(result: RoundResult) -> str:
    """What happened, in one line the next Analyst reads (so it learns what failed)."""
    parts = []
    for r in result.records:
        if r.kind == "admission":
            parts.append(f"admitted {r.task_id} from {','.join(r.sources)}")
        elif r.kind in ("rejection", "unresolved") and r.candidate is not None:
            parts.append(f"{r.kind} of {','.join(r.sources)}: {r.reason}")
    return "; ".join(parts) or "no candidate was built"
