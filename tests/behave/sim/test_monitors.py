"""Monitor exercise counts: how often the stimulus armed each protocol monitor."""

from __future__ import annotations

from pathlib import Path

import pytest

from rtlforge.behave.sim.check import check_rtl
from rtlforge.behave.sim.monitors import monitor_exercise
from rtlforge.behave.sim.run import parse_log
from rtlforge.behave.sim.stimulus import StimulusConfig
from rtlforge.behave.sim.task import load_behave_task
from rtlforge.core.models import Candidate

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "behave"


def test_counts_from_a_hand_written_log() -> None:
    task = load_behave_task(EXAMPLES / "rv_accum")  # reset: 2 cycles; output `out` ready/valid
    log = parse_log("2 R\n2 A 0 0\n3 A 1 0\n5 O out 00a 3 0\n7 O out 001 7 2\n10 E\n")
    (m,) = monitor_exercise(task, log)
    # transfer 1 offered in cycle 3, taken in 5: stalled in samples 3 and 4, so the stability
    # and valid-held checks ran in samples 4 and 5 (2), data looked at in 3, 4, 5; transfer 2
    # taken at once (1 look). 10 cycles minus 2 reset cycles = 8 samples of the valid pin.
    assert (m.interface, m.transfers, m.stalls) == ("out", 2, 1)
    assert (m.valid_dropped, m.unstable, m.x_data, m.x_valid) == (2, 2, 4, 8)


def test_sampled_interfaces_have_no_handshake_monitors() -> None:
    task = load_behave_task(EXAMPLES / "add8")
    assert monitor_exercise(task, parse_log("1 E\n")) == ()


@pytest.mark.tools
@pytest.mark.requires_tools("iverilog", "vvp")
def test_backpressure_arms_the_stall_monitors() -> None:
    task = load_behave_task(EXAMPLES / "rv_accum")
    design = Candidate.from_file(EXAMPLES / "rv_accum" / "golden.v")
    stalled = check_rtl(task, design, stimulus=StimulusConfig(sequences=4, transactions=40))
    ready = check_rtl(task, design, stimulus=StimulusConfig(sequences=4, transactions=40,
                                                            backpressure=False))
    assert stalled.verdict == ready.verdict == "pass"
    (m,) = stalled.coverage.monitors
    assert m.stalls > 0 and m.unstable == m.valid_dropped > 0
    assert m.transfers == stalled.coverage.outputs and m.x_data == m.unstable + m.transfers
    (r,) = ready.coverage.monitors
    assert (r.stalls, r.unstable, r.valid_dropped) == (0, 0, 0) and r.transfers > 0
