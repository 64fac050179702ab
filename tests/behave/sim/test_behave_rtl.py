"""BEHAVE-Sim on RTL through the sandbox (Icarus): one compile + one vvp per check."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from rtlforge.behave.sim.check import check_rtl
from rtlforge.behave.sim.stimulus import StimulusConfig
from rtlforge.behave.sim.task import load_behave_task
from rtlforge.core.models import Candidate
from rtlforge.sandbox.runner import SandboxRunner

pytestmark = [pytest.mark.tools, pytest.mark.requires_tools("iverilog", "vvp")]

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "behave"
SMALL = StimulusConfig(sequences=4, transactions=24)


@pytest.fixture(scope="module")
def runner() -> Iterator[SandboxRunner]:
    with SandboxRunner() as r:
        yield r


def _check(runner: SandboxRunner, task: str, design: str, **kw):
    t = load_behave_task(EXAMPLES / task)
    return check_rtl(t, Candidate.from_file(EXAMPLES / task / design), runner=runner,
                     stimulus=SMALL, **kw)


@pytest.mark.parametrize(("task", "design"), [
    ("add8", "golden.v"), ("counter_cfg", "golden.v"),
    ("rv_accum", "golden.v"), ("rv_accum", "slow.v"), ("rv_accum", "pipe3.v"),
    # latency 1, 3 (busy) and 3 (pipelined): all allowed
])
def test_valid_designs_pass(runner: SandboxRunner, task: str, design: str) -> None:
    result = _check(runner, task, design)
    assert result.verdict == "pass", result.message
    assert result.mismatches == 0 and not result.violations
    assert result.coverage.completed == result.coverage.outputs > 0


def test_wrong_adder_shows_first_failure(runner: SandboxRunner) -> None:
    result = _check(runner, "add8", "wrong_nocarry.v")
    assert result.verdict == "fail" and result.mismatches > 0
    first = result.first_failure
    assert first is not None and first.kind == "value"
    a, b = first.inputs["a"], first.inputs["b"]
    assert a + b > 255 and first.expected == {"sum": a + b}
    assert first.observed == {"sum": (a + b) % 256}
    assert first.cycle is not None and "expected" in first.describe()


def test_late_wrap_counter_fails(runner: SandboxRunner) -> None:
    result = _check(runner, "counter_cfg", "wrong_limit.v")
    assert result.verdict == "fail"
    first = result.first_failure
    # it wraps when count == limit + 1 in 4 bits: past the limit for limit < 15 (limit + 1
    # shows where 0 is due); for limit 15 that is count 0, so it sticks at 0 where 1 is due
    # (the edge sweep's all-maximum corner reaches that first)
    limit = first.inputs["limit"]
    if limit < 15:
        assert first.expected["count"] == 0 and first.observed["count"] == limit + 1
    else:
        assert first.expected["count"] == 1 and first.observed["count"] == 0


def test_valid_dropped_before_ready_is_caught(runner: SandboxRunner) -> None:
    result = _check(runner, "rv_accum", "wrong_drop.v")
    assert result.verdict == "fail"
    assert any(v.kind == "valid_dropped" and v.interface == "out" for v in result.violations)


def test_latency_bound_is_enforced(runner: SandboxRunner) -> None:
    task = load_behave_task(EXAMPLES / "rv_accum")
    tight = task.model_copy(update={"latency": task.latency.model_copy(update={"max": 2})})
    result = check_rtl(tight, Candidate.from_file(EXAMPLES / "rv_accum" / "slow.v"),
                       runner=runner, stimulus=SMALL)
    assert result.verdict == "fail" and result.first_failure.kind == "latency"
    assert "latency 3" in result.first_failure.message


def test_never_ready_ends_by_watchdog(runner: SandboxRunner) -> None:
    result = _check(runner, "rv_accum", "wrong_stuck.v", stall_limit=40)
    assert result.verdict == "fail"
    assert [v.kind for v in result.violations] == ["watchdog"]
    assert result.coverage.completed == 0


def test_design_may_not_open_files(runner: SandboxRunner) -> None:
    evil = Candidate.from_source(
        'module add8(input [7:0] a, input [7:0] b, output [8:0] sum);\n'
        '  integer f; initial f = $fopen("behave_log.txt", "w");\n'
        '  assign sum = a + b;\nendmodule\n')
    result = check_rtl(load_behave_task(EXAMPLES / "add8"), evil, runner=runner,
                       stimulus=SMALL)
    assert result.verdict == "fail" and "security" in result.message


def test_pipelined_variant_has_latency_three(runner: SandboxRunner) -> None:
    task = load_behave_task(EXAMPLES / "rv_accum")
    two = task.model_copy(update={"latency": task.latency.model_copy(update={"max": 2})})
    result = check_rtl(two, Candidate.from_file(EXAMPLES / "rv_accum" / "pipe3.v"),
                       runner=runner, stimulus=SMALL)
    assert result.verdict == "fail" and "latency 3" in result.first_failure.message
