"""Which tasks an RL update trains on: the BEHAVE paper's pool schedule.

Per update the paper oversamples up to 12 groups (one group = G rollouts of one task) and keeps
the first 8 complete groups whose rewards are not all equal: a group where every rollout scored
the same gives GRPO a zero advantage and teaches nothing. A task whose group was all-1 (solved)
cools down for 10 updates, one whose group was all-0 (hopeless for now) for 2. Groups are drawn
unseen tasks first, then the least recently observed.

Decisions where the text leaves room (docs/acquire.md):

- "cool down for N updates": the task sits out the next N updates. Observed at update u, it is
  eligible again at u + N + 1.
- "complete": every rollout of the group has a reward (a ``None`` is an abstaining reward:
  infrastructure, not the policy). An incomplete group is never kept and starts no cool-down,
  but it was observed (its task moves to the back), so a task whose checks keep failing cannot
  hold the front of the queue.
- "observed": its rewards came back. :meth:`TaskSchedule.run_update` draws groups one at a time
  and stops at the 8th kept group, so the rest of the 12 candidates are not observed; a caller
  that rolls out all candidates at once and hands them to :meth:`TaskSchedule.record` observes
  them all, kept or not.
- all-1 / all-0: every reward equal to ``success_reward`` (1.0) / ``failure_reward`` (0.0),
  within 1e-9. Any other constant group (all 0.5) is not kept and starts no cool-down.
- Ties (several unseen, or observed at the same update) go to the task that joined the pool
  first.

The schedule's whole state is one pydantic model (:class:`ScheduleState`), saved atomically, so
a killed run resumes with the same cool-downs and order.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from rtlforge.core.errors import ConfigError

__all__ = ["GroupOutcome", "GroupResult", "ScheduleConfig", "ScheduleState", "TaskRecord",
           "TaskSchedule", "UpdateRecord", "classify"]

Outcome = Literal["mixed", "all_pass", "all_fail", "constant", "incomplete"]
_EPS = 1e-9


class ScheduleConfig(BaseModel):
    """The paper's numbers are the defaults."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    groups_kept: int = Field(8, ge=1, description="complete, non-constant groups per update")
    oversample: int = Field(12, ge=1, description="most groups drawn per update")
    cooldown_all_pass: int = Field(10, ge=0, description="updates an all-1 task sits out")
    cooldown_all_fail: int = Field(2, ge=0, description="updates an all-0 task sits out")
    success_reward: float = 1.0
    failure_reward: float = 0.0

    @model_validator(mode="after")
    def _oversample_covers_kept(self) -> ScheduleConfig:
        if self.oversample < self.groups_kept:
            raise ValueError(f"oversample ({self.oversample}) must be at least groups_kept "
                             f"({self.groups_kept})")
        return self


class TaskRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")

    task_id: str
    joined: int = Field(ge=0, description="admission order (ties go to the earlier)")
    last_observed: int | None = None  # the update its rewards last came back in
    eligible_from: int = 0
    observations: int = 0
    last_outcome: Outcome | None = None


class ScheduleState(BaseModel):
    """Everything the schedule needs after a kill."""

    model_config = ConfigDict(extra="forbid")

    config: ScheduleConfig = ScheduleConfig()
    update: int = Field(0, ge=0, description="the next update's index")
    tasks: dict[str, TaskRecord] = Field(default_factory=dict)


class GroupOutcome(BaseModel):
    """One group's rewards (``None``: the reward abstained)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    task_id: str
    rewards: tuple[float | None, ...]


class GroupResult(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    task_id: str
    outcome: Outcome
    kept: bool
    eligible_from: int


class UpdateRecord(BaseModel):
    """What one update drew, kept and cooled down (for logs and tests)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    update: int
    candidates: tuple[str, ...]
    groups: tuple[GroupResult, ...]

    @property
    def kept(self) -> tuple[str, ...]:
        return tuple(g.task_id for g in self.groups if g.kept)


def classify(rewards: Sequence[float | None], config: ScheduleConfig) -> Outcome:
    """A group's outcome under the module's definitions."""
    if not rewards or any(r is None or not math.isfinite(r) for r in rewards):
        return "incomplete"
    values = [float(r) for r in rewards if r is not None]
    if max(values) - min(values) > _EPS:
        return "mixed"
    if abs(values[0] - config.success_reward) <= _EPS:
        return "all_pass"
    if abs(values[0] - config.failure_reward) <= _EPS:
        return "all_fail"
    return "constant"


class TaskSchedule:
    """The pool schedule over a growing set of task ids (see the module docstring)."""

    def __init__(self, state: ScheduleState | None = None) -> None:
        self.state = state or ScheduleState()

    @property
    def config(self) -> ScheduleConfig:
        return self.state.config

    def add_tasks(self, task_ids: Iterable[str]) -> list[str]:
        """Add tasks (unseen, eligible now); ids already present are left as they are.
        Returns the ids that were new."""
        added = []
        for task_id in task_ids:
            if task_id not in self.state.tasks:
                self.state.tasks[task_id] = TaskRecord(task_id=task_id,
                                                       joined=len(self.state.tasks),
                                                       eligible_from=self.state.update)
                added.append(task_id)
        return added

    def candidates(self) -> list[str]:
        """The next update's draw order: eligible tasks, unseen first (by admission), then
        least recently observed; at most ``oversample`` of them."""
        now = self.state.update
        eligible = [r for r in self.state.tasks.values() if r.eligible_from <= now]
        eligible.sort(key=lambda r: (r.last_observed is not None,
                                     -1 if r.last_observed is None else r.last_observed,
                                     r.joined))
        return [r.task_id for r in eligible[:self.config.oversample]]

    def _observe(self, group: GroupOutcome, kept_so_far: int) -> GroupResult:
        record = self.state.tasks.get(group.task_id)
        if record is None:
            raise ConfigError(f"task {group.task_id!r} is not in the pool")
        now = self.state.update
        outcome = classify(group.rewards, self.config)
        kept = outcome == "mixed" and kept_so_far < self.config.groups_kept
        record.last_observed = now
        record.observations += 1
        record.last_outcome = outcome
        if outcome == "all_pass":
            record.eligible_from = now + self.config.cooldown_all_pass + 1
        elif outcome == "all_fail":
            record.eligible_from = now + self.config.cooldown_all_fail + 1
        return GroupResult(task_id=group.task_id, outcome=outcome, kept=kept,
                           eligible_from=record.eligible_from)

    def record(self, groups: Sequence[GroupOutcome]) -> UpdateRecord:
        """Close the current update with these groups (in draw order; each must be one of
        :meth:`candidates`): keep the first ``groups_kept`` complete non-constant ones, start
        cool-downs, and move on to the next update."""
        candidates = self.candidates()
        allowed = set(candidates)
        seen: set[str] = set()
        for group in groups:
            if group.task_id not in allowed or group.task_id in seen:
                raise ConfigError(f"group for {group.task_id!r} was not drawn for update "
                                  f"{self.state.update} (or appears twice)")
            seen.add(group.task_id)
        results: list[GroupResult] = []
        for group in groups:
            results.append(self._observe(group, sum(r.kept for r in results)))
        done = UpdateRecord(update=self.state.update, candidates=tuple(candidates),
                            groups=tuple(results))
        self.state.update += 1
        return done

    def run_update(self, rollout: Callable[[str], Sequence[float | None]]) -> UpdateRecord:
        """Draw groups one at a time (``rollout(task_id)`` returns its rewards) until
        ``groups_kept`` were kept or the candidates ran out; then close the update."""
        groups: list[GroupOutcome] = []
        kept = 0
        for task_id in self.candidates():
            if kept >= self.config.groups_kept:
                break
            group = GroupOutcome(task_id=task_id, rewards=tuple(rollout(task_id)))
            groups.append(group)
            kept += classify(group.rewards, self.config) == "mixed"
        return self.record(groups)

    # ------------------------------------------------------------------------ persistence

    def save(self, path: str | Path) -> None:
        """Write the state atomically (a kill leaves the old file or the new one)."""
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(target.name + ".tmp")
        tmp.write_text(self.state.model_dump_json(indent=1), encoding="utf-8")
        os.replace(tmp, target)

    @classmethod
    def load(cls, path: str | Path) -> TaskSchedule:
        """The state saved at ``path``; a fresh schedule when there is none. A file that does
        not parse is a ConfigError (resuming from a guess would retrain the wrong tasks)."""
        source = Path(path)
        if not source.exists():
            return cls()
        try:
            return cls(ScheduleState.model_validate_json(source.read_text(encoding="utf-8")))
        except (OSError, UnicodeDecodeError, ValidationError) as exc:
            raise ConfigError(f"schedule state {source} does not load: {exc}") from exc
