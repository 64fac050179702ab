"""Bundled BEHAVE tasks (issue 13, section 5): sync_fifo, sorter, accum_valid, rv_pipe, matvec,
uart_tx.

Each golden model is pinned by hand-computed transactions (no tools: the DSL interpreter
only); then, with Icarus, every valid architecture in the task directory passes ``check_rtl``
and every ``wrong_*.v`` fails it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from rtlforge.behave.sim.check import check_rtl
from rtlforge.behave.sim.golden import golden_instance
from rtlforge.behave.sim.stimulus import BACKPRESSURE_CYCLES, Stimulus, StimulusConfig, Transaction
from rtlforge.behave.sim.task import load_behave_task
from rtlforge.core.models import Candidate

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "behave"
TASKS = ("sync_fifo", "sorter", "accum_valid", "rv_pipe", "matvec", "uart_tx")


def _golden(task: str):
    return golden_instance(load_behave_task(EXAMPLES / task))


def _run(task: str, inputs: list[dict]) -> list[dict]:
    model = _golden(task)
    return [dict(model.process(i)) for i in inputs]


# ------------------------------------------------------------------ golden models, by hand


def test_fifo_model_passes_words_through_in_order() -> None:
    words = [0x12, 0xFF, 0x00, 0x12, 0x80]
    assert _run("sync_fifo", [{"in_data": w} for w in words]) == [
        {"out_data": 0x12}, {"out_data": 0xFF}, {"out_data": 0x00}, {"out_data": 0x12},
        {"out_data": 0x80}]


def test_sorter_model_sorts_with_duplicates() -> None:
    out = _run("sorter", [{"in_data": (3, 1, 4, 1, 5, 9, 2, 6)},
                          {"in_data": (255, 0, 255, 0, 128, 128, 1, 254)},
                          {"in_data": (7, 7, 7, 7, 7, 7, 7, 7)}])
    assert out == [{"out_data": (1, 1, 2, 3, 4, 5, 6, 9)},
                   {"out_data": (0, 0, 1, 128, 128, 254, 255, 255)},
                   {"out_data": (7, 7, 7, 7, 7, 7, 7, 7)}]


def test_accumulator_model_sums_packets_with_sign_and_wrap() -> None:
    model = _golden("accum_valid")

    def packet(samples: list[int]) -> list[dict]:
        return [dict(model.process({"in_data": s, "in_last": k == len(samples) - 1}))
                for k, s in enumerate(samples)]

    assert packet([10, -3, 5]) == [{}, {}, {"out_sum": 12}]
    assert packet([-1]) == [{"out_sum": -1}]
    assert packet([127] * 3)[-1] == {"out_sum": 381 - 512}  # wraps (9 bits) to -131
    assert packet([-128] * 3)[-1] == {"out_sum": -384 + 512}  # wraps to 128
    assert packet([127, 127, 2]) == [{}, {}, {"out_sum": 256 - 512}]  # one past the top
    assert packet([-128, -128, 127]) == [{}, {}, {"out_sum": -129}]  # back in range
    assert packet([100, 100]) == [{}, {"out_sum": 200}]  # the earlier packets left nothing
    model.process({"in_data": 50, "in_last": False})
    model.reset()  # a reset drops the open packet
    assert packet([-7]) == [{"out_sum": -7}]


def test_multiply_add_model_is_exact_at_the_extremes() -> None:
    out = _run("rv_pipe", [{"a": -128, "b": -128, "c": 32767},
                           {"a": 127, "b": -128, "c": -32768},
                           {"a": 3, "b": -4, "c": 5}])
    assert out == [{"y": 16384 + 32767}, {"y": -16256 - 32768}, {"y": -7}]


def test_matvec_model_by_hand() -> None:
    m = (1, 2, 3, 4,
         -1, 0, 1, 0,
         127, 127, 127, 127,
         -128, -128, -128, -128)
    x = (1, -1, 2, -128)
    # row 0: 1 - 2 + 6 - 512; row 1: -1 + 2; rows 2, 3: 127 and -128 times (1 - 1 + 2 - 128)
    assert _run("matvec", [{"m": m, "x": x}]) == [{"y": (-507, 1, -16002, 16128)}]
    corner = _run("matvec", [{"m": (-128,) * 16, "x": (-128,) * 4},
                             {"m": (127,) * 16, "x": (127,) * 4}])
    assert corner == [{"y": (65536 - 2**17,) * 4},  # the one sum that wraps in 17 bits
                      {"y": (4 * 127 * 127,) * 4}]


def _uart_frame(bits: list[int]) -> list[dict]:
    """The line during one frame: every bit for four cycles, busy throughout."""
    return [{"tx": bool(b), "busy": True} for b in bits for _ in range(4)]


@pytest.mark.parametrize(("byte", "bits"), [
    (0xA5, [0, 1, 0, 1, 0, 0, 1, 0, 1, 1]),  # 1010_0101 LSB first (a palindrome)
    (0x01, [0, 1, 0, 0, 0, 0, 0, 0, 0, 1]),  # LSB first, unlike its MSB-first reading
])
def test_uart_model_frames_lsb_first(byte: int, bits: list[int]) -> None:
    idle = {"tx": True, "busy": False}
    cycles = ([{"in_valid": False, "in_data": 0x3C}, {"in_valid": True, "in_data": byte}]
              + [{"in_valid": True, "in_data": 0xFF}] * 40  # ignored while busy
              + [{"in_valid": False, "in_data": 0}] * 2)
    assert _run("uart_tx", cycles) == [idle, idle, *_uart_frame(bits), idle, idle]


def test_uart_model_takes_the_next_byte_after_one_idle_cycle() -> None:
    cycles = [{"in_valid": True, "in_data": 0x00}] * 44
    out = _run("uart_tx", cycles)
    assert out[0] == {"tx": True, "busy": False}
    assert out[1:41] == _uart_frame([0, 0, 0, 0, 0, 0, 0, 0, 0, 1])
    assert out[41] == {"tx": True, "busy": False}  # the byte offered here is taken
    assert out[42:44] == [{"tx": False, "busy": True}] * 2


# ------------------------------------------------------------------ RTL, with Icarus

#: (task, design, passes): every Verilog file in the six task directories.
DESIGNS = [
    ("sync_fifo", "golden.v", True),  # four entries, latency 1
    ("sync_fifo", "skid.v", True),  # two entries (skid buffer), registered in_ready
    ("sync_fifo", "wrong_drop.v", False),
    ("sorter", "golden.v", True),  # Batcher network, 3 stages, a block per cycle
    ("sorter", "iter.v", True),  # odd-even transposition, latency 9
    ("sorter", "wrong_network.v", False),
    ("accum_valid", "golden.v", True),
    ("accum_valid", "wrong_unsigned.v", False),
    ("accum_valid", "wrong_saturate.v", False),  # differs only on packets that overflow
    ("rv_pipe", "golden.v", True),  # three elastic stages
    ("rv_pipe", "single.v", True),  # one register
    ("rv_pipe", "wrong_overwrite.v", False),
    ("matvec", "golden.v", True),  # 16 multipliers, latency 1
    ("matvec", "serial.v", True),  # one multiplier, latency 17
    ("matvec", "wrong_transpose.v", False),
    ("uart_tx", "golden.v", True),
    ("uart_tx", "wrong_msb.v", False),
]
STIMULUS = StimulusConfig(sequences=5)


def test_every_bundled_design_is_checked() -> None:
    on_disk = {(t, p.name) for t in TASKS for p in (EXAMPLES / t).glob("*.v")}
    assert on_disk == {(t, d) for t, d, _ in DESIGNS}
    assert all(any(t == task and not ok for t, _, ok in DESIGNS) for task in TASKS)


@pytest.fixture(scope="module")
def runner() -> Iterator:
    from rtlforge.sandbox.runner import SandboxRunner

    with SandboxRunner() as r:
        yield r


@pytest.mark.tools
@pytest.mark.requires_tools("iverilog", "vvp")
@pytest.mark.parametrize(("task", "design", "passes"), DESIGNS,
                         ids=[f"{t}/{d}" for t, d, _ in DESIGNS])
def test_bundled_design_verdict(runner, task: str, design: str, passes: bool) -> None:
    result = check_rtl(load_behave_task(EXAMPLES / task),
                       Candidate.from_file(EXAMPLES / task / design), runner=runner,
                       stimulus=STIMULUS)
    if passes:
        assert result.verdict == "pass", result.message
        assert result.coverage.completed == result.coverage.outputs > 0
    else:
        assert result.verdict == "fail", result.message
        assert result.mismatches > 0 and result.first_failure is not None
        assert result.first_failure.kind in ("value", "missing")


@pytest.mark.tools
@pytest.mark.requires_tools("iverilog", "vvp")
@pytest.mark.parametrize("design", ["golden.v", "serial.v"])
def test_matvec_wrapping_corner_on_rtl(runner, design: str) -> None:
    """The one sum that wraps in 17 bits (every factor -128) is never drawn at random: drive it
    directly, beside the hand-computed product, into both architectures."""
    hand = (1, 2, 3, 4, -1, 0, 1, 0, 127, 127, 127, 127, -128, -128, -128, -128)
    txns = [Transaction(inputs={"m": (-128,) * 16, "x": x}, reset=n == 0)
            for n, x in enumerate([(-128,) * 4, (1, 1, 1, 1), (-128,) * 4])]
    txns.append(Transaction(inputs={"m": hand, "x": (1, -1, 2, -128)}, reset=True))
    stimulus = Stimulus(transactions=tuple(txns),
                        backpressure={"out": (True, False) * (BACKPRESSURE_CYCLES // 2)})
    result = check_rtl(load_behave_task(EXAMPLES / "matvec"),
                       Candidate.from_file(EXAMPLES / "matvec" / design), runner=runner,
                       stimulus=stimulus)
    assert result.verdict == "pass", result.message
    assert result.coverage.completed == 4
