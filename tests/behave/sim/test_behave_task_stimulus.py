"""A task's own stimulus settings (`[stimulus]` in behave.toml): explicit settings win, then
the task's, then StimulusConfig's defaults."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from rtlforge.behave.sim.check import _run_model
from rtlforge.behave.sim.golden import golden_instance
from rtlforge.behave.sim.stimulus import StimulusConfig, effective_config, generate_stimulus
from rtlforge.behave.sim.task import BehaveTaskError, parse_behave_task

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "behave"
ADD8 = (EXAMPLES / "add8" / "behave.toml").read_text()


def _with(settings: str) -> str:
    return ADD8 + "\n[stimulus]\n" + settings + "\n"


def test_task_settings_replace_the_defaults_only() -> None:
    task = parse_behave_task(_with("transactions = 7\nsequences = 2\nreset_probability = 0.5"))
    assert effective_config(task).model_dump() == StimulusConfig(
        transactions=7, sequences=2, reset_probability=0.5).model_dump()
    # a caller's explicit value wins; the seed is kept
    mixed = effective_config(task, StimulusConfig(seed=4, sequences=1))
    assert (mixed.seed, mixed.sequences, mixed.transactions) == (4, 1, 7)
    stim = generate_stimulus(task, StimulusConfig(seed=4, sequences=1, edge_sweep=False))
    assert len(stim.transactions) == 7


def test_without_settings_nothing_changes() -> None:
    task = parse_behave_task(ADD8)
    config = StimulusConfig(seed=3)
    assert effective_config(task, config) is config
    assert generate_stimulus(task, config) == generate_stimulus(task, config)


@pytest.mark.parametrize(("settings", "field"), [
    ("transactions = 0", "stimulus.transactions"),
    ("reset_probability = 1.5", "stimulus.reset_probability"),
    ("warp = 3", "stimulus.warp"),
    ("sequences = 10000\ntransactions = 1000", "stimulus"),  # 10^7 > the cap
])
def test_bad_settings_are_task_errors(settings: str, field: str) -> None:
    with pytest.raises(BehaveTaskError) as info:
        parse_behave_task(_with(settings))
    assert info.value.field == field


def test_calendar_reaches_the_hour_and_day_wraps() -> None:
    """RTLLM calendar: hours move every 3600 cycles, the day wraps after 86400; the task's
    stimulus must run that long without a reset (counted on the golden's outputs)."""
    directory = EXAMPLES / "rtllm" / "calendar"
    task = parse_behave_task((directory / "behave.toml").read_text(), directory=directory)
    stim = generate_stimulus(task, StimulusConfig())
    outs = _run_model(task, stim, golden_instance(task))
    times = [(o["Hours"], o["Mins"], o["Secs"]) for o in outs]
    hour_steps = sum(1 for a, b in itertools.pairwise(times)
                     if a[1:] == (59, 59) and b == ((a[0] + 1) % 24, 0, 0))
    assert hour_steps >= 24  # every hour change, 23:59:59 -> 00:00:00 among them
    assert any(a == (23, 59, 59) and b == (0, 0, 0) for a, b in itertools.pairwise(times))
