"""The pool schedule against schedules computed by hand from the issue's text: oversample up to
12 groups, keep the first 8 complete groups with non-constant rewards, all-1 cools down for 10
updates, all-0 for 2, unseen tasks first, then least recently observed."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from rtlforge.behave.acquire.schedule import (
    GroupOutcome,
    ScheduleConfig,
    TaskSchedule,
    classify,
)
from rtlforge.core.errors import ConfigError

TASKS = list("ABCDEFGHIJKLMN")  # 14 tasks, joined in this order
MIXED = (0.0, 1.0, 1.0, 0.0)
ALL_1 = (1.0, 1.0, 1.0, 1.0)
ALL_0 = (0.0, 0.0, 0.0, 0.0)


def _fresh() -> TaskSchedule:
    schedule = TaskSchedule()
    schedule.add_tasks(TASKS)
    return schedule


def _update0(schedule: TaskSchedule) -> None:
    answers = {"A": ALL_1, "C": ALL_0, "F": (1.0, None, 0.0, 1.0)}
    schedule.run_update(lambda task: answers.get(task, MIXED))


def test_the_papers_schedule_is_the_default() -> None:
    """BEHAVE's pool schedule (Appendix D.2, as issue 25 quotes it): up to 12 groups drawn per
    update, the first 8 complete non-constant ones kept; all-1 cools down 10 updates, all-0 2.
    These have been the defaults since the schedule was written (git log -S groups_kept)."""
    config = ScheduleConfig()
    assert (config.oversample, config.groups_kept) == (12, 8)
    assert (config.cooldown_all_pass, config.cooldown_all_fail) == (10, 2)
    assert TaskSchedule().config == config


def test_outcomes() -> None:
    config = ScheduleConfig()
    assert classify((1.0, 1.0), config) == "all_pass"
    assert classify((0.0, 0.0), config) == "all_fail"
    assert classify((0.5, 0.5), config) == "constant"
    assert classify((0.0, 0.5), config) == "mixed"
    assert classify((1.0, None), config) == "incomplete"
    assert classify((), config) == "incomplete"
    assert classify((float("nan"), 1.0), config) == "incomplete"


def test_first_update_draws_unseen_in_order_and_stops_at_the_eighth_kept_group() -> None:
    schedule = _fresh()
    assert schedule.candidates() == list("ABCDEFGHIJKL")  # 12 of 14, join order
    drawn: list[str] = []
    answers = {"A": ALL_1, "C": ALL_0, "F": (1.0, None, 0.0, 1.0)}

    def rollout(task: str) -> tuple[float | None, ...]:
        drawn.append(task)
        return answers.get(task, MIXED)

    record = schedule.run_update(rollout)
    # mixed, in draw order: B D E G H I J K -> the 8th is K; L is never drawn
    assert drawn == list("ABCDEFGHIJK")
    assert record.kept == tuple("BDEGHIJK")
    outcome = {g.task_id: g.outcome for g in record.groups}
    assert (outcome["A"], outcome["C"], outcome["F"]) == ("all_pass", "all_fail", "incomplete")
    tasks = schedule.state.tasks
    assert tasks["A"].eligible_from == 11  # observed at 0, sits out updates 1..10
    assert tasks["C"].eligible_from == 3  # sits out updates 1..2
    assert tasks["F"].eligible_from == 0  # incomplete: no cool-down
    assert tasks["L"].last_observed is None


def test_a_hand_computed_schedule_over_four_updates() -> None:
    schedule = _fresh()
    _update0(schedule)
    # update 1: unseen L M N first, then observed-at-0 in join order (A, C cooling)
    assert schedule.candidates() == list("LMNBDEFGHIJK")
    groups = [GroupOutcome(task_id=t, rewards=ALL_0 if t == "M" else MIXED)
              for t in "LMNBDEFGHIJK"]
    record = schedule.record(groups)  # all twelve rolled out at once
    assert record.kept == tuple("LNBDEFGH")  # I J K mixed but past the 8th: observed only
    assert schedule.state.tasks["M"].eligible_from == 4
    assert schedule.state.tasks["I"].last_observed == 1
    # update 2: nobody unseen; all eligible were observed at 1: join order. A, C, M cooling
    assert schedule.candidates() == list("BDEFGHIJKLN")
    record = schedule.run_update(lambda task: MIXED)
    assert record.kept == tuple("BDEFGHIJ")
    assert [g.task_id for g in record.groups] == list("BDEFGHIJ")  # K, L, N not drawn
    # update 3: C is back (observed at 0: least recent), then K L N (1), then the rest (2)
    assert schedule.candidates() == list("CKLNBDEFGHIJ")
    # a task admitted now is unseen: it goes first
    assert schedule.add_tasks(["O", "B"]) == ["O"]
    assert schedule.candidates() == list("OCKLNBDEFGHI")
    schedule.run_update(lambda task: MIXED)
    # update 4: M's cool-down (2 updates after update 1) is over
    assert "M" in schedule.candidates()
    assert schedule.state.tasks["A"].eligible_from == 11
    assert "A" not in schedule.candidates()


def test_all_pass_task_returns_after_exactly_ten_updates() -> None:
    schedule = TaskSchedule(state=None)
    schedule.add_tasks(["solved", "other"])
    schedule.run_update(lambda task: ALL_1 if task == "solved" else MIXED)
    seen_at = []
    for update in range(1, 13):
        if "solved" in schedule.candidates():
            seen_at.append(update)
        schedule.run_update(lambda task: MIXED)
    assert seen_at[0] == 11


def test_other_constant_groups_are_not_kept_and_do_not_cool_down() -> None:
    schedule = TaskSchedule()
    schedule.add_tasks(["half", "mixed"])
    record = schedule.run_update(lambda task: (0.5, 0.5) if task == "half" else MIXED)
    assert record.kept == ("mixed",)
    assert schedule.state.tasks["half"].eligible_from == 0
    assert schedule.candidates() == ["half", "mixed"]  # both observed at 0: join order


def test_fewer_eligible_than_oversample_and_fewer_kept_than_eight() -> None:
    schedule = TaskSchedule()
    schedule.add_tasks(["x", "y", "z"])
    record = schedule.run_update(lambda task: ALL_1 if task == "y" else MIXED)
    assert record.candidates == ("x", "y", "z")
    assert record.kept == ("x", "z")
    assert schedule.candidates() == ["x", "z"]


def test_state_survives_a_kill(tmp_path: Path) -> None:
    path = tmp_path / "schedule.json"
    uninterrupted = _fresh()
    _update0(uninterrupted)
    uninterrupted.save(path)
    resumed = TaskSchedule.load(path)
    assert resumed.state == uninterrupted.state
    assert resumed.candidates() == list("LMNBDEFGHIJK")
    assert TaskSchedule.load(tmp_path / "absent.json").state.update == 0
    path.write_text("{not json")
    with pytest.raises(ConfigError, match="does not load"):
        TaskSchedule.load(path)


def test_groups_must_be_drawn_candidates() -> None:
    schedule = _fresh()
    with pytest.raises(ConfigError, match="was not drawn"):
        schedule.record([GroupOutcome(task_id="M", rewards=MIXED)])  # M is 13th
    with pytest.raises(ConfigError, match="appears twice"):
        schedule.record([GroupOutcome(task_id="A", rewards=MIXED)] * 2)


def test_config_rejects_oversample_below_kept() -> None:
    with pytest.raises(ValidationError, match="oversample"):
        ScheduleConfig(groups_kept=8, oversample=4)
