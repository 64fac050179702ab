"""`[reset] inputs`: input endpoints held at given values while reset is active (e.g. an
enable that a synchronous reset acts only under, as in RTLLM's LIFObuffer)."""

from __future__ import annotations

import pytest

from rtlforge.behave.model import load_model
from rtlforge.behave.sim.check import check_rtl
from rtlforge.behave.sim.stimulus import StimulusConfig, generate_stimulus
from rtlforge.behave.sim.task import BehaveTaskError, parse_behave_task, reset_input_bits
from rtlforge.behave.sim.testbench import plan_testbench
from rtlforge.core.models import Candidate
from rtlforge.sandbox.runner import SandboxRunner

TASK = '''
id = "reg_en"
top = "reg_en"
golden = "golden.py"
clock = "clk"

[reset]
signal = "rst"
{held}

[[interfaces]]
name = "in"
direction = "input"
protocol = "per_cycle"
endpoints = [{{ name = "en", type = "bool" }}, {{ name = "d", type = "uint4" }},
             {{ name = "v", type = "uint4[2]" }}]

[[interfaces]]
name = "out"
direction = "output"
protocol = "per_cycle"
endpoints = [{{ name = "q", type = "uint4" }}]
'''

# q loads d on an enabled edge; reset (synchronous) clears it, but only on an enabled edge
GOLDEN = '''
from rtlforge.behave.model.dsl import *


class Out(Record):
    q: UInt[4]


class RegEn(Model):
    q: UInt[4]

    def reset(self):
        self.q = 0

    def process(self, en: Bool, d: UInt[4], v: Array[UInt[4], 2]) -> Out:
        shown = self.q
        if en:
            self.q = d
        return Out(q=shown)
'''

DESIGN = """
module reg_en(input clk, input rst, input en, input [3:0] d, input [7:0] v,
              output reg [3:0] q);
  always @(posedge clk)
    if (en) begin
      if (rst) q <= 4'd0;
      else q <= d;
    end
endmodule
"""


def _task(held: str):
    return parse_behave_task(TASK.format(held=held))


def test_values_are_typed_per_endpoint() -> None:
    task = _task("inputs = { en = 1, d = 9 }")
    assert [(e.name, bits) for e, bits in reset_input_bits(task)] == [("en", 1), ("d", 9)]
    assert [(e.name, bits) for e, bits in reset_input_bits(_task("inputs = { en = true }"))] \
        == [("en", 1)]
    assert reset_input_bits(_task("")) == ()


@pytest.mark.parametrize(("held", "field"), [
    ("inputs = { q = 1 }", "reset.inputs.q"),      # an output
    ("inputs = { nope = 1 }", "reset.inputs.nope"),
    ("inputs = { d = 16 }", "reset.inputs.d"),     # does not fit uint4
    ("inputs = { d = true }", "reset.inputs.d"),
    ("inputs = { en = 2 }", "reset.inputs.en"),
    ("inputs = { v = 1 }", "reset.inputs.v"),      # arrays are not held
])
def test_bad_values_are_task_errors(held: str, field: str) -> None:
    with pytest.raises(BehaveTaskError) as info:
        _task(held)
    assert info.value.field == field


def test_the_testbench_drives_them_while_reset_is_active() -> None:
    task = _task("inputs = { en = 1, d = 9 }")
    text = plan_testbench(task, generate_stimulus(task, StimulusConfig(sequences=1))).text
    body = text[text.index("rst = 1'b1; bt_in_reset = 1;"):text.index("repeat (2) bt_step;")]
    assert "en = 1'h1;" in body and "d = 4'h9;" in body
    assert "en = " not in plan_testbench(_task(""), generate_stimulus(
        _task(""), StimulusConfig(sequences=1))).text.split("bt_in_reset = 1;")[1].split(
        "bt_step")[0]


@pytest.mark.tools
@pytest.mark.requires_tools("iverilog", "vvp")
def test_an_enable_gated_reset_needs_the_enable_held() -> None:
    """Without `en` held, the first reset happens with en = 0 (the testbench's initial value),
    so q stays X and the first cycle mismatches; holding en = 1 makes the reset act."""
    with SandboxRunner() as runner:
        results = {}
        for held in ("", "inputs = { en = 1 }"):
            results[held] = check_rtl(_task(held), Candidate.from_source(DESIGN, top="reg_en"),
                                      runner=runner, golden=load_model(GOLDEN).instance(),
                                      stimulus=StimulusConfig(sequences=3, transactions=20))
    failed = results[""]
    assert failed.verdict == "fail" and failed.first_failure is not None
    assert failed.first_failure.transaction == 0 and failed.first_failure.expected == {"q": 0}
    assert results["inputs = { en = 1 }"].verdict == "pass", results["inputs = { en = 1 }"].message
