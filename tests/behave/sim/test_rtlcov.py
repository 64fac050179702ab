"""RTL coverage through Verilator: counts checked against a hand count on a tiny design."""

from __future__ import annotations

from pathlib import Path

import pytest

from rtlforge.behave.sim.rtlcov import parse_coverage, rtl_coverage, summarise
from rtlforge.behave.sim.stimulus import Stimulus, Transaction
from rtlforge.behave.sim.task import load_behave_task
from rtlforge.core.models import Candidate, SourceFile
from rtlforge.sandbox.runner import SandboxRunner

TOML = """
id = "tiny"
top = "tiny"
golden = "golden.py"
clock = "clk"
reset = { signal = "rst", active = "high", cycles = 1 }

[[interfaces]]
name = "in"
direction = "input"
protocol = "per_cycle"
endpoints = [{ name = "a", type = "uint2" }]

[[interfaces]]
name = "out"
direction = "output"
protocol = "per_cycle"
endpoints = [{ name = "q", type = "uint2" }]
"""

GOLDEN = """
from rtlforge.behave.model.dsl import *


class Out(Record):
    q: UInt[2]


class Tiny(Model):
    q: UInt[2]

    def reset(self):
        self.q = 0

    def process(self, a: UInt[2]) -> Out:
        visible = self.q
        if a == 3:
            self.q = 1
        else:
            self.q = a
        return Out(q=visible)
"""

TINY = """module tiny(input clk, input rst, input [1:0] a, output reg [1:0] q);
  always @(posedge clk)
    if (rst) q <= 2'd0;
    else if (a == 2'd3) q <= 2'd1;
    else q <= a;
endmodule
"""


def test_parse_keeps_design_points_and_sums_instances() -> None:
    key = "\x01f\x02{f}\x01l\x02{l}\x01n\x02{n}\x01page\x02{p}\x01o\x02{o}\x01h\x02{h}"
    text = "# SystemC::Coverage-3\n" + "\n".join([
        f"C '{key.format(f='d.v', l=4, n=7, p='v_branch/m', o='if', h='TOP.u0')}' 3",
        f"C '{key.format(f='d.v', l=4, n=7, p='v_branch/m', o='if', h='TOP.u1')}' 2",
        f"C '{key.format(f='d.v', l=4, n=8, p='v_branch/m', o='else', h='TOP.u0')}' 0",
        f"C '{key.format(f='d.v', l=1, n=9, p='v_toggle/m', o='a[1]', h='TOP.u0')}' 0",
        f"C '{key.format(f='tb.v', l=9, n=1, p='v_line/tb', o='block', h='TOP')}' 5",
    ])
    points = parse_coverage(text, {"d.v"})
    kinds = summarise(points)
    assert (kinds["line"].covered, kinds["line"].total) == (1, 2)  # the tb's point dropped
    assert kinds["line"].uncovered == ("d.v:4 else",)
    assert next(p.count for p in points if p.what == "if") == 5  # two instances summed
    assert (kinds["toggle"].covered, kinds["toggle"].total) == (0, 1)


@pytest.mark.tools
@pytest.mark.requires_tools("verilator", "make", "g++")
def test_verilator_coverage_matches_a_hand_count(tmp_path: Path) -> None:
    (tmp_path / "behave.toml").write_text(TOML)
    (tmp_path / "golden.py").write_text(GOLDEN)
    task = load_behave_task(tmp_path)
    # a only takes 0 and 1: a[1], q[1] never move and the a == 3 arm is never taken
    values = [0, 1, 0, 1, 1, 0]
    stim = Stimulus(transactions=tuple(Transaction(inputs={"a": v}, reset=n == 0)
                                       for n, v in enumerate(values)))
    design = Candidate(files=(SourceFile(name="tiny.v", content=TINY),))
    with SandboxRunner() as runner:
        cov = rtl_coverage(task, design, stim, runner)
    assert cov.status == "ok", cov.message
    assert cov.completed
    k = cov.kinds
    # hand count of blocks: the always body (line 2), the then-arm of `if (rst)` (line 3), the
    # then- and else-arms of `if (a == 3)` (line 4; `else if` is that nested if): all entered
    # but the a == 3 arm. Bits clk, rst, a[0], a[1], q[0], q[1]: a[1] and q[1] never toggle.
    assert (k["line"].covered, k["line"].total) == (3, 4)
    assert k["line"].uncovered == ("tiny.v:4 if",)
    assert (k["toggle"].covered, k["toggle"].total) == (4, 6)
    assert sorted(u.split()[1] for u in k["toggle"].uncovered) == ["a[1]", "q[1]"]
