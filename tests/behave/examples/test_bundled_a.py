"""Bundled tasks mxfp4_quant, udiv, crc and fir: goldens pinned by hand-computed and standard
vectors (run through the DSL interpreter), then every architecture against its golden in Icarus.

The expected values below come from the specs' rules worked by hand (MXFP4 from the OCP MX v1.0
conversion rules, division examples, the FIR's impulse and step responses) or from standards
(the CRC catalogue's check value; Python's zlib computes the same CRC-32), never from the models.
"""

from __future__ import annotations

import random
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from rtlforge.behave.model import BehaviorModel, Instance
from rtlforge.behave.sim.check import check_rtl
from rtlforge.behave.sim.golden import golden_model
from rtlforge.behave.sim.stimulus import StimulusConfig
from rtlforge.behave.sim.task import load_behave_task
from rtlforge.behave.types import to_bits
from rtlforge.core.models import Candidate
from rtlforge.sandbox.runner import SandboxRunner

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "behave"


Golden = Callable[[str], Instance]


@pytest.fixture(scope="module")
def golden() -> Golden:
    """A fresh (reset) instance of a task's golden; each model is checked and lowered once."""
    models: dict[str, BehaviorModel] = {}

    def fresh(task: str) -> Instance:
        if task not in models:
            models[task] = golden_model(load_behave_task(EXAMPLES / task))
        return models[task].instance()

    return fresh


# --- mxfp4_quant: BF16 bit patterns in, E8M0 scale and E2M1 codes out -------------------------

def _block(*words: int) -> tuple[int, ...]:
    return tuple(words) + (0,) * (32 - len(words))


def _quantise(golden: Golden, *words: int) -> tuple[int, tuple[int, ...]]:
    out = golden("mxfp4_quant").process({"x": _block(*words)})
    return out["scale"], out["codes"]


def test_mxfp4_normal_block(golden: Golden) -> None:
    # 1, 0.5, -1.5, 3, -4, 6: amax 6, floor(log2 6) = 2, scale 2 - 2 + 127 = 127 (X = 1)
    scale, codes = _quantise(golden, 0x3F80, 0x3F00, 0xBFC0, 0x4040, 0xC080, 0x40C0)
    assert scale == 127
    assert codes == _block(0x2, 0x1, 0xB, 0x5, 0xE, 0x7)


def test_mxfp4_shared_scale_divides(golden: Golden) -> None:
    # 100, 40, -24, 1: floor(log2 100) = 6, scale 131 (X = 16): 6.25 -> 6, 2.5 -> 2 (tie),
    # -1.5, 0.0625 -> 0
    scale, codes = _quantise(golden, 0x42C8, 0x4220, 0xC1C0, 0x3F80)
    assert scale == 131
    assert codes == _block(0x7, 0x4, 0xB, 0x0)


def test_mxfp4_ties_round_to_even(golden: Golden) -> None:
    # X = 1 (amax 5): 0.25 -> 0, 0.75 -> 1, 1.25 -> 1, 1.75 -> 2, 2.5 -> 2, 3.5 -> 4, 5 -> 4,
    # -2.5 -> -2; 2.75 is no tie -> 3
    scale, codes = _quantise(golden, 0x3E80, 0x3F40, 0x3FA0, 0x3FE0, 0x4020, 0x4060, 0x40A0, 0xC020,
                             0x4030)
    assert scale == 127
    assert codes == _block(0x0, 0x2, 0x2, 0x4, 0x4, 0x6, 0x6, 0xC, 0x5)


def test_mxfp4_saturates_at_six(golden: Golden) -> None:
    # 7, 7.5, -7.96875, 4 with X = 1: the first three round above 6 and saturate
    scale, codes = _quantise(golden, 0x40E0, 0x40F0, 0xC0FF, 0x4080)
    assert scale == 127
    assert codes == _block(0x7, 0x7, 0xF, 0x6)
    # the largest BF16 (E = 254): scale 252, (2 - 2^-7) * 4 saturates
    assert _quantise(golden, *[0x7F7F] * 32) == (252, (0x7,) * 32)


def test_mxfp4_zero_blocks(golden: Golden) -> None:
    assert _quantise(golden, ) == (0, (0,) * 32)
    assert _quantise(golden, *[0x8000] * 32) == (0, (0x8,) * 32)  # -0 keeps its sign bit


@pytest.mark.parametrize("special", [0x7FC0, 0xFFC1, 0x7F80, 0xFF80])  # NaN, -NaN, +inf, -inf
def test_mxfp4_nan_or_inf_marks_the_block(golden: Golden, special: int) -> None:
    assert _quantise(golden, 0x3F80, 0x42C8, special, 0xC1C0) == (255, (0,) * 32)


def test_mxfp4_subnormals_at_exact_value(golden: Golden) -> None:
    # amax below 2^-126: scale clamps to 0, X = 2^-127. 0x0040 = 2^-127 -> 1; 0x0020 -> 0.5;
    # 0x0010 -> 0.25 (tie, 0); 0x0030 -> 0.75 (tie, 1); 0x007F = 127 * 2^-133 -> 1.98 -> 2;
    # 0x8040 -> -1; 0x0001 = 2^-133 -> 0
    scale, codes = _quantise(golden, 0x0040, 0x0020, 0x0010, 0x0030, 0x007F, 0x8040, 0x0001)
    assert scale == 0
    assert codes == _block(0x2, 0x1, 0x0, 0x2, 0x4, 0xA, 0x0)
    # 0x00C0 = 1.5 * 2^-126: floor(log2) - 2 = -128 clamps to scale 0, so it reads 3
    assert _quantise(golden, 0x00C0, 0x0040) == (0, _block(0x5, 0x2))
    # next to a normal amax (1.0: scale 125, X = 1/4) a subnormal vanishes
    assert _quantise(golden, 0x3F80, 0x0040) == (125, _block(0x6, 0x0))


def test_mxfp4_codes_pack_element_zero_low(golden: Golden) -> None:
    task = load_behave_task(EXAMPLES / "mxfp4_quant")
    codes_type = next(e.type for i in task.outputs for e in i.endpoints if e.name == "codes")
    _, codes = _quantise(golden, 0x3F80, 0x3F00, 0xBFC0, 0x4040, 0xC080, 0x40C0)
    # bytes 0..2 as the spec packs them: (elem1 << 4) | elem0, ...
    assert to_bits(codes_type, codes) == 0x7E5B12


# --- udiv ------------------------------------------------------------------------------------

@pytest.mark.parametrize(("dividend", "divisor", "quotient", "remainder"), [
    (100, 7, 14, 2), (65535, 1, 65535, 0), (65535, 65535, 1, 0), (7, 9, 0, 7),
    (40000, 256, 156, 64), (1234, 0, 65535, 1234), (0, 0, 65535, 0),
])
def test_udiv_examples(golden: Golden, dividend: int, divisor: int, quotient: int,
                       remainder: int) -> None:
    out = golden("udiv").process({"dividend": dividend, "divisor": divisor})
    assert out == {"quotient": quotient, "remainder": remainder}


def test_udiv_agrees_with_divmod(golden: Golden) -> None:
    udiv, rng = golden("udiv"), random.Random(1)
    for _ in range(300):
        a, b = rng.getrandbits(16), rng.getrandbits(rng.choice((4, 8, 16))) or 1
        q, r = divmod(a, b)
        assert udiv.process({"dividend": a, "divisor": b}) == {"quotient": q, "remainder": r}


# --- crc: CRC-32/ISO-HDLC per packet -----------------------------------------------------------

def _crc_packets(golden: Instance, packets: list[bytes]) -> list[int]:
    crcs = []
    for packet in packets:
        for i, byte in enumerate(packet):
            out = golden.process({"in_data": byte, "in_last": i == len(packet) - 1})
            if i < len(packet) - 1:
                assert out == {}  # nothing comes out before the last byte
            else:
                crcs.append(out["out_crc"])
    return crcs


def test_crc_catalogue_check_value(golden: Golden) -> None:
    # the catalogue's check value of CRC-32/ISO-HDLC, twice: each packet starts from init
    assert _crc_packets(golden("crc"), [b"123456789", b"123456789"]) == [0xCBF43926] * 2


def test_crc_agrees_with_zlib(golden: Golden) -> None:
    rng = random.Random(2)
    packets = [b"\x00", b"\xff"] + [rng.randbytes(rng.randint(1, 40)) for _ in range(30)]
    assert _crc_packets(golden("crc"), packets) == [zlib.crc32(p) for p in packets]


# --- fir: h = (7, -19, 42, 127, -128, 55, -6, 1) ----------------------------------------------

def _filter(golden: Golden, samples: list[int]) -> list[int]:
    fir = golden("fir")
    return [fir.process({"x": s})["y"] for s in samples]


def test_fir_impulse_response_is_the_coefficients(golden: Golden) -> None:
    assert _filter(golden, [1] + [0] * 9) == [7, -19, 42, 127, -128, 55, -6, 1, 0, 0]


def test_fir_step_response_is_the_partial_sums(golden: Golden) -> None:
    assert _filter(golden, [1] * 10) == [7, -12, 30, 157, 29, 84, 78, 79, 79, 79]


def test_fir_extremes_fit_seventeen_bits(golden: Golden) -> None:
    # x[n-k] = 127 where h[k] > 0 and -128 where h[k] < 0, fed oldest first
    worst_high = [127, -128, 127, 127, -128, 127, -128, 127][::-1]
    assert _filter(golden, worst_high)[-1] == 127 * (7 + 42 + 127 + 55 + 1) + 128 * (19 + 128 + 6)
    assert _filter(golden, [-x - 1 for x in worst_high])[-1] == -128 * 232 - 127 * 153


# --- the RTL: every architecture passes, every wrong design fails ------------------------------

STIMULUS = StimulusConfig(sequences=5, transactions=60)
#: An MXFP4 block costs ~100x a byte in the golden model and the stimulus generator; the edge
#: sweep (32 blocks) already holds rounding ties, NaN and infinity.
STIMULUS_BY_TASK = {"mxfp4_quant": StimulusConfig(sequences=2, transactions=40)}


@pytest.fixture(scope="module")
def runner() -> Iterator[SandboxRunner]:
    with SandboxRunner() as r:
        yield r


def _check(runner: SandboxRunner, task: str, design: str):
    return check_rtl(load_behave_task(EXAMPLES / task),
                     Candidate.from_file(EXAMPLES / task / design), runner=runner,
                     stimulus=STIMULUS_BY_TASK.get(task, STIMULUS))


@pytest.mark.tools
@pytest.mark.requires_tools("iverilog", "vvp")
@pytest.mark.parametrize(("task", "design"), [
    ("mxfp4_quant", "golden.v"), ("mxfp4_quant", "serial.v"),  # latency 1 and 65
    ("udiv", "golden.v"), ("udiv", "iterative.v"),  # 1 and 17
    ("crc", "golden.v"), ("crc", "bitserial.v"),  # 1 and 9 cycles after the last byte
    ("fir", "golden.v"), ("fir", "transposed.v"),  # 1 and 2
])
def test_architectures_pass(runner: SandboxRunner, task: str, design: str) -> None:
    result = _check(runner, task, design)
    assert result.verdict == "pass", result.message
    assert result.mismatches == 0 and not result.violations
    assert result.coverage.completed == result.coverage.outputs > 0


@pytest.mark.tools
@pytest.mark.requires_tools("iverilog", "vvp")
def test_mxfp4_rounding_half_away_fails(runner: SandboxRunner) -> None:
    result = _check(runner, "mxfp4_quant", "wrong_round_away.v")
    assert result.verdict == "fail"
    first = result.first_failure
    assert first is not None and first.kind == "value"
    assert first.expected["scale"] == first.observed["scale"]
    # every differing element is one magnitude step further from zero, same sign
    diffs = [(e, o) for e, o in zip(first.expected["codes"], first.observed["codes"],
                                    strict=True) if e != o]
    assert diffs and all(o == e + 1 and (e & 8) == (o & 8) for e, o in diffs)


@pytest.mark.tools
@pytest.mark.requires_tools("iverilog", "vvp")
def test_udiv_wrong_division_by_zero_fails(runner: SandboxRunner) -> None:
    result = _check(runner, "udiv", "wrong_divzero.v")
    assert result.verdict == "fail"
    first = result.first_failure
    assert first.inputs["divisor"] == 0 and first.observed == {"quotient": 0, "remainder": 0}


@pytest.mark.tools
@pytest.mark.requires_tools("iverilog", "vvp")
def test_crc_missing_xorout_fails(runner: SandboxRunner) -> None:
    result = _check(runner, "crc", "wrong_xorout.v")
    assert result.verdict == "fail"
    first = result.first_failure
    assert first.observed["out_crc"] == first.expected["out_crc"] ^ 0xFFFFFFFF


@pytest.mark.tools
@pytest.mark.requires_tools("iverilog", "vvp")
def test_fir_flipped_coefficient_fails(runner: SandboxRunner) -> None:
    result = _check(runner, "fir", "wrong_coef.v")
    assert result.verdict == "fail"
    first = result.first_failure
    # only h[1] differs (+19 for -19): the error is 38 * x[n-1], never 0 where it shows
    error = first.observed["y"] - first.expected["y"]
    assert first.kind == "value" and error != 0 and error % 38 == 0
