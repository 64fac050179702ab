"""The generated testbench: what it reads and writes, its stimulus encoding, and that the
security gate accepts it as a testbench only with its run-directory files available."""

from __future__ import annotations

from pathlib import Path

import pytest

from rtlforge.behave.sim.stimulus import StimulusConfig, generate_stimulus
from rtlforge.behave.sim.task import load_behave_task
from rtlforge.behave.sim.testbench import GAP_BITS, LOG_FILE, STIM_FILE, plan_testbench
from rtlforge.core.errors import SecurityViolation
from rtlforge.core.models import SourceFile
from rtlforge.sandbox.security import check_sources

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "behave"


def test_stimulus_words() -> None:
    task = load_behave_task(EXAMPLES / "counter_cfg")
    stim = generate_stimulus(task, StimulusConfig(sequences=1, transactions=5, edge_sweep=False))
    plan = plan_testbench(task, stim)
    words = [int(w, 16) for w in plan.files[STIM_FILE].split()]
    assert len(words) == 5
    for word, txn in zip(words, stim.transactions, strict=True):
        # layout: limit (4 bits, static first), en (1 bit), gap, reset flag
        assert word & 0xF == txn.inputs["limit"]
        assert (word >> 4) & 1 == int(txn.inputs["en"])
        assert (word >> (5 + GAP_BITS)) & 1 == int(txn.reset)
    assert plan.drain_cycles == 0  # per-cycle: nothing is in flight


def test_gate_accepts_the_testbench_with_its_files() -> None:
    task = load_behave_task(EXAMPLES / "rv_accum")
    stim = generate_stimulus(task, StimulusConfig(sequences=1, transactions=4))
    plan = plan_testbench(task, stim)
    assert f'$readmemh("{STIM_FILE}"' in plan.text and f'$fopen("{LOG_FILE}", "w")' in plan.text
    assert set(plan.files) == {STIM_FILE, "behave_bp_out.hex"}
    tb = SourceFile(name="behave_tb.v", content=plan.text)
    check_sources([tb], role="testbench", available=list(plan.files))
    with pytest.raises(SecurityViolation, match="readmemh"):
        check_sources([tb], role="testbench", available=[])
    with pytest.raises(SecurityViolation):
        check_sources([tb], role="design", available=list(plan.files))
