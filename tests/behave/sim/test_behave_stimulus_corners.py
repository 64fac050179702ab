"""The edge sweep's cross-endpoint corners: every endpoint at its minimum / maximum together,
without drawing from the random generator (the random part of every stimulus is unchanged)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rtlforge.behave.sim import stimulus as stimulus_module
from rtlforge.behave.sim.stimulus import (
    CORNER_REPEATS,
    StimulusConfig,
    extreme,
    generate_stimulus,
)
from rtlforge.behave.sim.task import load_behave_task
from rtlforge.behave.types import ArrayType, ScalarType

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "behave"


def test_extremes_of_types() -> None:
    assert extreme(ScalarType(kind="sint", width=8), high=False) == -128
    assert extreme(ScalarType(kind="sint", width=8), high=True) == 127
    assert extreme(ScalarType(kind="uint", width=4), high=True) == 15
    assert extreme(ScalarType(kind="bool"), high=False) is False
    assert extreme(ArrayType(element=ScalarType(kind="uint", width=3), length=2),
                   high=True) == (7, 7)


def test_matvec_gets_all_minimum_matrix_times_all_minimum_vector() -> None:
    task = load_behave_task(EXAMPLES / "matvec")
    stim = generate_stimulus(task, StimulusConfig(sequences=1, transactions=5))
    low = {"m": (-128,) * 16, "x": (-128,) * 4}
    high = {"m": (127,) * 16, "x": (127,) * 4}
    for corner in (low, high, {"m": low["m"], "x": high["x"]},
                   {"m": high["m"], "x": low["x"]}):
        at = [n for n, t in enumerate(stim.transactions) if t.inputs == corner]
        assert len(at) == CORNER_REPEATS, corner
        first = stim.transactions[at[0]]
        assert first.reset and first.sequence == 0 and first.gap == 0
        assert at == list(range(at[0], at[0] + CORNER_REPEATS))


@pytest.mark.parametrize("example", ["matvec", "rv_accum", "counter_cfg", "add8"])
def test_corners_leave_the_random_part_unchanged(example: str,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    task = load_behave_task(EXAMPLES / example)
    config = StimulusConfig(seed=5, sequences=3, transactions=12)
    with_corners = generate_stimulus(task, config)
    monkeypatch.setattr(stimulus_module, "_corners", lambda static, data, sequence: [])
    without = generate_stimulus(task, config)
    corners = 4 if task.static_inputs else 2
    assert len(with_corners.transactions) == len(without.transactions) + corners * CORNER_REPEATS
    sweep = sum(1 for t in without.transactions if t.sequence == 0)
    # everything but the corners (appended to the sweep) is identical, backpressure included
    kept = (with_corners.transactions[:sweep]
            + with_corners.transactions[sweep + corners * CORNER_REPEATS:])
    assert kept == without.transactions
    assert with_corners.backpressure == without.backpressure
