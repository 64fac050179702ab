"""Don't-care outputs (`ANY`) in BEHAVE-Sim: matching, check_model (both sides) and RTL that
drives X/Z on an unspecified output."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from rtlforge.behave.base import DONT_CARE
from rtlforge.behave.model import load_model
from rtlforge.behave.sim.check import _decode_partial, check_model, check_rtl
from rtlforge.behave.sim.match import Expected, Observed, agrees, match_outputs
from rtlforge.behave.sim.stimulus import StimulusConfig
from rtlforge.behave.sim.task import parse_behave_task
from rtlforge.core.models import Candidate
from rtlforge.sandbox.runner import SandboxRunner

SMALL = StimulusConfig(sequences=3, transactions=20)

# `data` shows what the previous cycle loaded; after a cycle without `load` it is unspecified
HOLD = '''
from rtlforge.behave.model.dsl import *


class Out(Record):
    loaded: Bool
    data: UInt[8]


class Hold(Model):
    data: UInt[8]
    known: Bool

    def reset(self):
        self.data = 0
        self.known = False

    def process(self, load: Bool, d: UInt[8]) -> Out:
        shown = self.data
        known = self.known
        self.known = load
        if load:
            self.data = d
        if known:
            return Out(loaded=True, data=shown)
        return Out(loaded=False, data=ANY)
'''

TASK = '''
id = "hold"
top = "hold"
golden = "golden.py"
clock = "clk"

[reset]
signal = "rst"

[[interfaces]]
name = "in"
direction = "input"
protocol = "per_cycle"
endpoints = [{ name = "load", type = "bool" }, { name = "d", type = "uint8" }]

[[interfaces]]
name = "out"
direction = "output"
protocol = "per_cycle"
endpoints = [{ name = "loaded", type = "bool" }, { name = "data", type = "uint8" }]
'''


def _exp(**values: object) -> Expected:
    return Expected(transaction=0, values=values)


def test_agrees_skips_dont_cares_and_accepts_unknown_bits_there() -> None:
    want = _exp(loaded=False, data=DONT_CARE)
    assert agrees(want, Observed(cycle=1, values={"loaded": False, "data": 77}))
    # `data` had X bits: the whole word is unknown, the readable part still agrees
    assert agrees(want, Observed(cycle=1, values=None, partial={"loaded": False, "data": None}))
    assert not agrees(want, Observed(cycle=1, values={"loaded": True, "data": 77}))
    # X on a specified endpoint never agrees
    assert not agrees(want, Observed(cycle=1, values=None, partial={"loaded": None, "data": 3}))
    # without don't-cares the comparison is exact, as before
    assert not agrees(_exp(loaded=True, data=3),
                      Observed(cycle=1, values=None, partial={"loaded": True, "data": 3}))


def test_multiset_pairs_a_dont_care_by_its_specified_fields() -> None:
    exp = [Expected(transaction=0, values={"a": 1, "b": DONT_CARE}),
           Expected(transaction=1, values={"a": 2, "b": 5})]
    obs = [Observed(cycle=3, values={"a": 2, "b": 5}), Observed(cycle=4, values={"a": 1, "b": 9})]
    pairs = match_outputs(exp, obs, policy="multiset")
    assert [p.ok for p in pairs] == [True, True]
    assert pairs[0].observed is not None and pairs[0].observed.cycle == 4


def test_partial_decode_of_a_logged_sample() -> None:
    task = parse_behave_task(TASK)
    out = task.outputs[0]
    # word {data, loaded}: loaded = 1, data's X bits zeroed; mask bit 1 = data unknown
    assert _decode_partial(out, "001/2") == {"loaded": True, "data": None}
    assert _decode_partial(out, "0a1") is None  # a fully known sample has no partial form


class _Model:
    """A B̂ given as a plain instance: `data` is whatever `pick` says when unspecified."""

    def __init__(self, pick: object) -> None:
        self.pick = pick
        self.reset()

    def reset(self) -> None:
        self.data, self.known = 0, False

    def process(self, inputs):
        shown, known = self.data, self.known
        self.known = inputs["load"]
        if inputs["load"]:
            self.data = inputs["d"]
        return {"loaded": known, "data": shown if known else self.pick}


def test_check_model_dont_care_on_the_golden_side_matches_anything() -> None:
    task = parse_behave_task(TASK)
    golden = load_model(HOLD).instance()
    result = check_model(task, _Model(123), golden=golden, stimulus=SMALL)
    assert result.verdict == "pass", result.message
    result = check_model(task, _Model(DONT_CARE), golden=load_model(HOLD).instance(),
                         stimulus=SMALL)
    assert result.verdict == "pass", result.message


def test_check_model_dont_care_on_the_artifact_side_only_where_the_golden_has_one() -> None:
    """B̂ leaving unspecified what B* specifies is a mismatch (it does not refine B*)."""
    task = parse_behave_task(TASK)
    strict = HOLD.replace("return Out(loaded=False, data=ANY)",
                          "return Out(loaded=False, data=0)")
    result = check_model(task, load_model(HOLD).instance(), golden=load_model(strict).instance(),
                         stimulus=SMALL)
    assert result.verdict == "fail"
    first = result.first_failure
    assert first is not None and first.expected["data"] == 0 and first.observed["data"] == "ANY"
    result.model_dump_json()  # a report with a don't-care in it serialises


HOLD_V = """
module hold(input clk, input rst, input load, input [7:0] d, output reg loaded,
            output reg [7:0] data);
  always @(posedge clk)
    if (rst) begin loaded <= 1'b0; data <= 8'hxx; end
    else begin loaded <= load; data <= load ? d : 8'hxx; end
endmodule
"""


@pytest.fixture(scope="module")
def runner() -> Iterator[SandboxRunner]:
    with SandboxRunner() as r:
        yield r


@pytest.mark.tools
@pytest.mark.requires_tools("iverilog", "vvp")
@pytest.mark.parametrize(("design", "verdict"), [
    (HOLD_V, "pass"),                                               # X only where unspecified
    (HOLD_V.replace("data <= load ? d : 8'hxx", "data <= load ? d : 8'h5a"), "pass"),
    (HOLD_V.replace("loaded <= load;", "loaded <= load ? 1'b1 : 1'bx;"), "fail"),  # X specified
    (HOLD_V.replace("data <= load ? d :", "data <= load ? d ^ 8'h01 :"), "fail"),  # wrong value
])
def test_rtl_may_drive_anything_on_an_unspecified_output(runner: SandboxRunner, design: str,
                                                         verdict: str) -> None:
    task = parse_behave_task(TASK)
    result = check_rtl(task, Candidate.from_source(design, top="hold"), runner=runner,
                       golden=load_model(HOLD).instance(), stimulus=SMALL)
    assert result.verdict == verdict, result.message
    if verdict == "fail":
        first = result.first_failure
        assert first is not None and first.kind == "value"
        if "1'bx" in design:  # shown per endpoint: the unknown one as "X"
            assert first.observed["loaded"] == "X" and first.expected["loaded"] is False
        result.model_dump_json()
