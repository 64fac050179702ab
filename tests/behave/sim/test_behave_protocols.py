"""The other protocols on RTL: valid-only (latency bound, X monitor), fixed latency, start/done.

Tasks are written inline; their goldens are passed to check_rtl directly (the bundled-example
seam is not involved)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from rtlforge.behave.sim.check import check_rtl
from rtlforge.behave.sim.stimulus import StimulusConfig
from rtlforge.behave.sim.task import parse_behave_task
from rtlforge.core.models import Candidate
from rtlforge.sandbox.runner import SandboxRunner

pytestmark = [pytest.mark.tools, pytest.mark.requires_tools("iverilog", "vvp")]

SMALL = StimulusConfig(sequences=3, transactions=20)


@pytest.fixture(scope="module")
def runner() -> Iterator[SandboxRunner]:
    with SandboxRunner() as r:
        yield r


class _Fn:
    """A stateless golden: one function of the inputs per transaction."""

    def __init__(self, fn) -> None:
        self.fn = fn

    def reset(self) -> None:
        pass

    def process(self, inputs):
        return self.fn(inputs)


VALID_ONLY = parse_behave_task("""
id = "dbl"
top = "dbl"
golden = "golden.py"
clock = "clk"
reset = { signal = "rst" }
latency = { min = 1, max = 1 }
[[interfaces]]
name = "in"
direction = "input"
protocol = "valid_only"
pins = { valid = "iv" }
endpoints = [{ name = "d", type = "uint8" }]
[[interfaces]]
name = "out"
direction = "output"
protocol = "valid_only"
pins = { valid = "ov" }
endpoints = [{ name = "q", type = "uint9" }]
""")
DOUBLE = _Fn(lambda i: {"q": 2 * i["d"]})
DBL = """module dbl(input clk, input rst, input iv, input [7:0] d, output reg ov,
                    output reg [8:0] q);
  always @(posedge clk)
    if (rst) begin ov <= 0; q <= 0; end
    else begin ov <= iv; if (iv) q <= {d, 1'b0}; end
endmodule
"""


def test_valid_only(runner: SandboxRunner) -> None:
    ok = check_rtl(VALID_ONLY, Candidate.from_source(DBL), runner=runner, stimulus=SMALL,
                   golden=DOUBLE)
    assert ok.verdict == "pass", ok.message
    late = DBL.replace("ov <= iv; if (iv) q <= {d, 1'b0};",
                       "ov <= ov1; q <= q1; ov1 <= iv; if (iv) q1 <= {d, 1'b0};").replace(
        "  always", "  reg ov1 = 0; reg [8:0] q1 = 0;\n  always")
    slow = check_rtl(VALID_ONLY, Candidate.from_source(late), runner=runner, stimulus=SMALL,
                     golden=DOUBLE)
    assert slow.verdict == "fail" and slow.first_failure.kind == "latency"
    unknown = DBL.replace("if (iv) q <= {d, 1'b0};", "").replace("q <= 0;", "")
    x = check_rtl(VALID_ONLY, Candidate.from_source(unknown), runner=runner, stimulus=SMALL,
                  golden=DOUBLE)
    assert x.verdict == "fail" and any(v.kind == "x_data" for v in x.violations)


FIXED = parse_behave_task("""
id = "mul2"
top = "mul2"
golden = "golden.py"
clock = "clk"
[[interfaces]]
name = "in"
direction = "input"
protocol = "fixed_latency"
endpoints = [{ name = "a", type = "uint8" }, { name = "b", type = "sint8" }]
[[interfaces]]
name = "out"
direction = "output"
protocol = "fixed_latency"
latency = 2
endpoints = [{ name = "p", type = "sint16" }]
""")
MUL2 = """module mul2(input clk, input [7:0] a, input signed [7:0] b, output reg signed [15:0] p);
  reg signed [15:0] s1;
  always @(posedge clk) begin s1 <= $signed({1'b0, a}) * b; p <= s1; end
endmodule
"""


def test_fixed_latency(runner: SandboxRunner) -> None:
    golden = _Fn(lambda i: {"p": i["a"] * i["b"]})
    ok = check_rtl(FIXED, Candidate.from_source(MUL2), runner=runner, stimulus=SMALL,
                   golden=golden)
    assert ok.verdict == "pass", ok.message
    one = MUL2.replace("p <= s1;", "").replace("s1 <=", "p <=")
    early = check_rtl(FIXED, Candidate.from_source(one), runner=runner, stimulus=SMALL,
                      golden=golden)
    assert early.verdict == "fail" and early.first_failure.kind == "value"


START_DONE = parse_behave_task("""
id = "sd"
top = "sd"
golden = "golden.py"
clock = "clk"
reset = { signal = "rst" }
latency = { min = 1, max = 8 }
[[interfaces]]
name = "go"
direction = "input"
protocol = "start_done"
pins = { start = "start" }
endpoints = [{ name = "x", type = "uint8" }]
[[interfaces]]
name = "res"
direction = "output"
protocol = "start_done"
pins = { done = "done" }
endpoints = [{ name = "y", type = "uint9" }]
""")
SD = """module sd(input clk, input rst, input start, input [7:0] x, output reg done,
             output reg [8:0] y);
  reg [1:0] cnt; reg busy; reg [7:0] hold;
  always @(posedge clk)
    if (rst) begin busy <= 0; done <= 0; cnt <= 0; y <= 0; end
    else begin
      done <= 0;
      if (start && !busy) begin busy <= 1; hold <= x; cnt <= 0; end
      else if (busy) begin
        cnt <= cnt + 1;
        if (cnt == 2) begin busy <= 0; done <= 1; y <= hold + 9'd1; end
      end
    end
endmodule
"""


def test_start_done(runner: SandboxRunner) -> None:
    golden = _Fn(lambda i: {"y": i["x"] + 1})
    ok = check_rtl(START_DONE, Candidate.from_source(SD), runner=runner, stimulus=SMALL,
                   golden=golden)
    assert ok.verdict == "pass", ok.message
    never = SD.replace("done <= 1;", "")
    stuck = check_rtl(START_DONE, Candidate.from_source(never), runner=runner,
                      stimulus=SMALL, golden=golden, stall_limit=30)
    assert stuck.verdict == "fail" and [v.kind for v in stuck.violations] == ["watchdog"]


def test_broken_golden_is_infra(runner: SandboxRunner) -> None:
    def boom(inputs):
        raise KeyError("ours")

    result = check_rtl(START_DONE, Candidate.from_source(SD), runner=runner, stimulus=SMALL,
                       golden=_Fn(boom))
    assert result.verdict == "infra_error" and "golden" in result.message
