"""The Yosys equivalence check on hand-made pairs whose answer is known by construction."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from rtlforge.behave.equiv import Equivalence, check_equivalence
from rtlforge.core.models import SourceFile
from rtlforge.sandbox.runner import SandboxRunner

pytestmark = pytest.mark.tools

AND = "module g(input [3:0] a, b, output [3:0] y);\n  assign y = a & b;\nendmodule\n"

#: A mod-10 counter with a synchronous reset; the output is the register.
COUNTER = """module cnt(input clk, input rst, output [3:0] q);
  reg [3:0] count;
  always @(posedge clk)
    if (rst) count <= 0;
    else if (count == 9) count <= 0;
    else count <= count + 1;
  assign q = count;
endmodule
"""


@pytest.fixture(scope="module")
def runner() -> Iterator[SandboxRunner]:
    with SandboxRunner() as r:
        yield r


def _check(runner: SandboxRunner, gold: str, gate: str, top: str, **kw: int | bool):  # type: ignore[no-untyped-def]
    return check_equivalence([SourceFile(name="d.v", content=gold)],
                             [SourceFile(name="d.v", content=gate)], top, runner=runner, **kw)


def test_commuted_and_is_equivalent(runner: SandboxRunner) -> None:
    res = _check(runner, AND, AND.replace("a & b", "b & a"), "g")
    assert (res.verdict, res.method, res.sequential) == (Equivalence.EQUIVALENT, "sat", False)


def test_and_versus_or_is_not(runner: SandboxRunner) -> None:
    res = _check(runner, AND, AND.replace("a & b", "a | b"), "g")
    assert (res.verdict, res.method) == (Equivalence.NON_EQUIVALENT, "sat")


def test_counter_with_a_renamed_register_is_equivalent(runner: SandboxRunner) -> None:
    res = _check(runner, COUNTER, COUNTER.replace("count", "tally"), "cnt")
    assert res.verdict is Equivalence.EQUIVALENT
    assert res.sequential is True


@pytest.mark.parametrize(("simulate", "method"), [(False, "tempinduct"), (True, "simulation")])
def test_off_by_one_wrap_is_not_and_the_trace_reaches_the_wrap(
        runner: SandboxRunner, simulate: bool, method: str) -> None:
    res = _check(runner, COUNTER, COUNTER.replace("count == 9", "count == 10"), "cnt",
                 simulate=simulate)
    assert (res.verdict, res.method) == (Equivalence.NON_EQUIVALENT, method)
    # from 0 the counters agree through 9; they first differ after 10 counting steps
    assert res.steps is not None and res.steps >= 11


def test_no_answer_within_the_bound_is_unknown(runner: SandboxRunner) -> None:
    # the difference needs 11 steps; 4 can neither find it nor prove equality
    res = _check(runner, COUNTER, COUNTER.replace("count == 9", "count == 10"), "cnt", depth=4,
                 simulate=False)
    assert res.verdict is Equivalence.UNKNOWN
    assert "4 steps" in res.reason


def test_a_design_yosys_cannot_read_is_unknown(runner: SandboxRunner) -> None:
    res = _check(runner, AND, AND.replace("assign y = a & b;", "assign y = a &;"), "g")
    assert res.verdict is Equivalence.UNKNOWN
    assert "reading the designs" in res.reason


ASYNC = """module acnt(input clk, input rst_n, input en, output reg [3:0] q);
  always @(posedge clk or negedge rst_n)
    if (!rst_n) q <= 4'd0;
    else if (en) q <= q + 4'd1;
endmodule
"""


def test_a_mutant_yosys_cannot_read_can_still_be_refuted_by_simulation(
        runner: SandboxRunner) -> None:
    # With the reset condition inverted Yosys 0.23 stops ("Async reset yields non-constant
    # value"); Icarus runs it, and the counter is then held at 0 while rst_n is high and
    # counts while it is low: the random run shows a difference as soon as en is 1.
    gate = ASYNC.replace("if (!rst_n)", "if (rst_n)")
    assert _check(runner, ASYNC, gate, "acnt", simulate=False).verdict is Equivalence.UNKNOWN
    res = _check(runner, ASYNC, gate, "acnt")
    assert (res.verdict, res.method) == (Equivalence.NON_EQUIVALENT, "simulation")
