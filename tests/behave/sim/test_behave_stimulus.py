"""Stimulus: edge cases per type, seeding, schedule variation, configuration held per reset."""

from __future__ import annotations

from pathlib import Path

from rtlforge.behave.sim.stimulus import StimulusConfig, edge_cases, generate_stimulus
from rtlforge.behave.sim.task import load_behave_task
from rtlforge.behave.types import ArrayType, ScalarType

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "behave"


def test_edge_cases_of_types() -> None:
    u8 = edge_cases(ScalarType(kind="uint", width=8))
    assert {0, 1, 255, 254, 128, 127, 0x55, 0xAA} <= set(u8)
    assert {1 << i for i in range(8)} <= set(u8)  # walking ones
    s4 = edge_cases(ScalarType(kind="sint", width=4))
    assert {0, 1, -1, -8, 7, -7} <= set(s4)
    assert edge_cases(ScalarType(kind="bool")) == [False, True]
    arr = edge_cases(ArrayType(element=ScalarType(kind="uint", width=2), length=3))
    assert (0, 0, 0) in arr and (3, 3, 3) in arr and (3, 0, 0) in arr


def test_seeded_and_sized() -> None:
    task = load_behave_task(EXAMPLES / "rv_accum")
    config = StimulusConfig(seed=3, sequences=4, transactions=10, edge_sweep=False)
    a, b = generate_stimulus(task, config), generate_stimulus(task, config)
    assert a == b and len(a.transactions) == 40
    assert a != generate_stimulus(task, config.model_copy(update={"seed": 4}))
    assert a.transactions[0].reset
    assert any(t.gap > 0 for t in a.transactions)  # idle gaps
    assert len(a.backpressure["out"]) == 256 and not all(a.backpressure["out"])


def test_default_is_the_issue_baseline() -> None:
    config = StimulusConfig()
    assert (config.sequences, config.transactions) == (50, 100)


def test_configuration_changes_only_with_a_reset() -> None:
    task = load_behave_task(EXAMPLES / "counter_cfg")
    stim = generate_stimulus(task, StimulusConfig(sequences=6, transactions=12))
    previous = None
    for txn in stim.transactions:
        if not txn.reset:
            assert txn.inputs["limit"] == previous
        previous = txn.inputs["limit"]
        assert txn.gap == 0  # per-cycle: every cycle is a transaction


def test_combinational_task_never_resets_after_the_first() -> None:
    task = load_behave_task(EXAMPLES / "add8")
    stim = generate_stimulus(task, StimulusConfig(sequences=3, transactions=5))
    assert [t.reset for t in stim.transactions].count(True) == 1
