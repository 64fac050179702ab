"""The interpreter on the documented example models (oracle: each example's spec, worked out by
hand), the width functions on boundary values, runtime range failures and coverage."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from rtlforge.behave.base import Failure
from rtlforge.behave.model import BehaviorModel, load_model

DOCS = Path(__file__).resolve().parents[3] / "docs" / "behave-models.md"


def doc_model(name: str) -> BehaviorModel:
    blocks = re.findall(r"```python\n(# model: (\w+)\n.*?)```", DOCS.read_text(), flags=re.S)
    sources = {n: source for source, n in blocks}
    return load_model(sources[name], name=name)


def run(model: BehaviorModel, names: str, rows: list[tuple]) -> list:
    inst = model.instance()
    keys = names.split()
    return [inst.process(dict(zip(keys, row, strict=True))) for row in rows]


def test_accumulator_sums_valid_inputs_and_emits_every_fourth() -> None:
    out = run(doc_model("accumulator"), "valid data",
              [(True, 10), (False, 5), (True, 20), (True, 30), (True, 40), (True, 1)])
    assert out == [
        {"total": 10, "count": 1, "overflow": False},
        {"total": 10, "count": 1, "overflow": False},  # not valid: nothing changes
        {"total": 30, "count": 2, "overflow": False},
        {"total": 60, "count": 3, "overflow": False},
        {"total": 100, "count": 0, "overflow": False},  # 4th valid input: emit, restart
        {"total": 1, "count": 1, "overflow": False},
    ]


def test_accumulator_wraps_at_16_bits_and_flags_the_overflow() -> None:
    inst = doc_model("accumulator").instance()
    inst.load_state({"total": 65500, "count": 1})
    # 65500 + 100 = 65600 = 65536 + 64
    assert inst.process({"valid": True, "data": 100}) == {"total": 64, "count": 2,
                                                         "overflow": True}
    assert inst.state() == {"total": 64, "count": 2}


def test_saturating_counter_sticks_at_both_limits() -> None:
    out = run(doc_model("saturating_counter"), "clear up down step", [
        (False, True, False, 15), (False, True, False, 15),  # 15, 30
        *[(False, True, False, 15)] * 7,  # 45 .. 120, then 135 -> 127
        (False, True, True, 15),  # up and down together: no change
        (False, False, True, 15),  # 112
        (True, True, False, 15),  # clear wins: 0
        (False, False, True, 0),  # step 0: 0
    ])
    values = [o["value"] for o in out]
    assert values == [15, 30, 45, 60, 75, 90, 105, 120, 127, 127, 112, 0, 0]
    assert [o["at_limit"] for o in out] == [False] * 8 + [True, True, False, False, False]
    inst = doc_model("saturating_counter").instance()
    inst.load_state({"value": -120})
    assert inst.process({"clear": False, "up": False, "down": True, "step": 15}) == {
        "value": -128, "at_limit": True}  # -135 saturates at -128


def test_sequence_detector_finds_overlapping_1011() -> None:
    model = doc_model("sequence_detector")
    out = run(model, "din", [(b,) for b in (True, False, True, True, False, True, True)])
    assert [o["match"] for o in out] == [False, False, False, True, False, False, True]
    # states IDLE=0 GOT1=1 GOT10=2 GOT101=3
    assert [o["state"] for o in out] == [1, 2, 3, 1, 2, 3, 1]
    assert [o["matches"] for o in out] == [0, 0, 0, 1, 1, 1, 2]
    out = run(model, "din", [(b,) for b in (True, True, False, True, True, False, False)])
    assert [o["match"] for o in out] == [False, False, False, False, True, False, False]
    assert [o["state"] for o in out] == [1, 1, 2, 3, 1, 2, 0]


def test_sequence_detector_state_record_is_flattened() -> None:
    inst = doc_model("sequence_detector").instance()
    inst.process({"din": False})
    assert inst.state() == {"state": 0, "stats.matches": 0, "stats.bits_seen": 1}


def test_fifo_order_capacity_and_declared_failures() -> None:
    out = run(doc_model("fifo4"), "push pop wdata", [
        (True, False, 1), (True, False, 2), (False, True, 0), (True, True, 3),
        (True, False, 4), (True, False, 5), (True, False, 6),  # full: 3 4 5 6
        (True, False, 7),  # push into a full FIFO
        (True, True, 8),  # push and pop when full is fine: 4 5 6 8
        (False, True, 0), (False, True, 0), (False, True, 0), (False, True, 0),
        (False, True, 0),  # pop an empty FIFO
    ])
    assert out[:7] == [
        {"rdata": 0, "rvalid": False, "count": 1}, {"rdata": 0, "rvalid": False, "count": 2},
        {"rdata": 1, "rvalid": True, "count": 1}, {"rdata": 2, "rvalid": True, "count": 1},
        {"rdata": 0, "rvalid": False, "count": 2}, {"rdata": 0, "rvalid": False, "count": 3},
        {"rdata": 0, "rvalid": False, "count": 4}]
    assert out[7] == Failure(reason="overflow")
    assert out[8] == {"rdata": 3, "rvalid": True, "count": 4}
    assert [o["rdata"] for o in out[9:13]] == [4, 5, 6, 8]
    assert out[13] == Failure(reason="underflow", kind="declared")


def test_sorter_sorts_and_counts_blocks() -> None:
    model = doc_model("sorter4")
    inst = model.instance()
    assert inst.process({"data": (9, 3, 7, 1)}) == {"sorted": (1, 3, 7, 9), "smallest": 1}
    assert inst.process({"data": (5, 5, 0, 255)}) == {"sorted": (0, 5, 5, 255),
                                                      "smallest": 0}
    assert inst.state() == {"blocks": 2}
    assert model.outputs["sorted"].length == 4  # type: ignore[union-attr]


WIDTHS = """\
class W(Record):
    wrap8: UInt[8]
    swrap8: SInt[8]
    sat8: UInt[8]
    ssat8: SInt[8]
    sext4: SInt[4]
    zext4: UInt[4]
    hi_nibble: UInt[4]
    msb: Bool

class Widths(Model):
    n: UInt[1]

    def reset(self):
        self.n = 0

    def process(self, x: SInt[12]) -> W:
        return W(wrap8=wrap(x, 8), swrap8=swrap(x, 8), sat8=saturate(x, 8),
                 ssat8=ssaturate(x, 8), sext4=sext(x, 4), zext4=zext(x, 4),
                 hi_nibble=bits(x, 7, 4), msb=bit(x, 11))
"""

# x -> (wrap8, swrap8, sat8, ssat8, sext4, zext4, bits 7..4, bit 11), by hand
WIDTH_TABLE = {
    -1: (255, -1, 0, -1, -1, 15, 15, True),
    255: (255, -1, 255, 127, -1, 15, 15, False),
    256: (0, 0, 255, 127, 0, 0, 0, False),
    128: (128, -128, 128, 127, 0, 0, 8, False),
    127: (127, 127, 127, 127, -1, 15, 7, False),
    -128: (128, -128, 0, -128, 0, 0, 8, True),
    -129: (127, 127, 0, -128, -1, 15, 7, True),
    2047: (255, -1, 255, 127, -1, 15, 15, False),
    -2048: (0, 0, 0, -128, 0, 0, 0, True),
    8: (8, 8, 8, 8, -8, 8, 0, False),
    7: (7, 7, 7, 7, 7, 7, 0, False),
}


@pytest.mark.parametrize("x", sorted(WIDTH_TABLE))
def test_width_functions_on_boundary_values(x: int) -> None:
    out = load_model(WIDTHS).instance().process({"x": x})
    names = ("wrap8", "swrap8", "sat8", "ssat8", "sext4", "zext4", "hi_nibble", "msb")
    assert tuple(out[n] for n in names) == WIDTH_TABLE[x]  # type: ignore[index]


RANGE = """\
class Out(Record):
    y: UInt[8]

class M(Model):
    c: UInt[2]
    mem: Array[UInt[8], 4]

    def reset(self):
        self.c = 0
        self.mem = (10, 20, 30, 40)

    def process(self, x: UInt[8], d: UInt[8], i: UInt[3]) -> Out:
        self.c = self.c + 1
        q = x // d
        return Out(y=self.mem[i] + q)
"""


def test_unproven_widths_are_runtime_range_failures_with_the_line() -> None:
    inst = load_model(RANGE).instance()
    ok = {"x": 10, "d": 3, "i": 1}
    assert [inst.process(ok) for _ in range(3)] == [{"y": 23}] * 3
    failure = inst.process(ok)  # c would become 4: does not fit UInt[2]
    assert isinstance(failure, Failure) and failure.kind == "range"
    assert failure.reason.startswith("line 13: 4 does not fit `self.c` [0, 3]")
    assert inst.state()["c"] == 3  # the failed assignment did not happen


def test_division_by_zero_index_and_output_range_are_runtime_failures() -> None:
    inst = load_model(RANGE).instance()
    div = inst.process({"x": 10, "d": 0, "i": 1})
    assert isinstance(div, Failure) and div.kind == "range"
    assert div.reason == "line 14: division by zero"
    inst.reset()
    index = inst.process({"x": 10, "d": 1, "i": 5})
    assert isinstance(index, Failure) and "index out of range [0, 3]: 5" in index.reason
    inst.reset()
    output = inst.process({"x": 250, "d": 1, "i": 3})  # 40 + 250 = 290 > 255
    assert isinstance(output, Failure) and output.kind == "range"
    assert "290 does not fit output `y`" in output.reason


def test_inputs_are_validated_against_their_types() -> None:
    inst = load_model(RANGE).instance()
    for bad in ({"x": 256, "d": 1, "i": 0}, {"x": True, "d": 1, "i": 0}, {"x": 1, "d": 1},
                {"x": 1, "d": 1, "j": 0}):
        with pytest.raises(ValueError):
            inst.process(bad)


def test_coverage_records_the_branch_outcomes_taken() -> None:
    model = doc_model("accumulator")
    assert [g.name for g in model.goals()] == ["process:L24:T", "process:L24:F",
                                               "process:L29:T", "process:L29:F"]
    inst = model.instance()
    inst.process({"valid": False, "data": 0})
    assert inst.hit_goals() == {(0, True)}
    inst.process({"valid": True, "data": 0})
    assert inst.hit_goals() == {(0, True), (0, False), (1, False)}
    inst.clear_coverage()
    assert inst.hit_goals() == set()


def test_instances_are_independent_and_reset_restores_the_initial_state() -> None:
    model = doc_model("accumulator")
    a, b = model.instance(), model.instance()
    a.process({"valid": True, "data": 7})
    assert b.process({"valid": True, "data": 1})["total"] == 1  # type: ignore[index]
    a.reset()
    assert a.state() == {"total": 0, "count": 0}


def test_model_describes_its_ports() -> None:
    model = doc_model("fifo4")
    assert {n: (p.kind, getattr(p, "width", None)) for n, p in model.inputs.items()} == {
        "push": ("bool", 1), "pop": ("bool", 1), "wdata": ("uint", 8)}
    assert list(model.outputs) == ["rdata", "rvalid", "count"]
    assert model.state_fields["mem"].length == 4  # type: ignore[union-attr]
