"""Further clocks (`[[clocks]]`), further resets (`[reset] extra`) and the delay window of
per_cycle outputs (`delay = [lo, hi]`): the format, the testbench's cycle schedule worked out
by hand, and designs in two clock domains judged by models derived from that schedule."""

from __future__ import annotations

import pytest

from rtlforge.behave.model import load_model
from rtlforge.behave.sim.check import check_rtl
from rtlforge.behave.sim.stimulus import StimulusConfig, generate_stimulus
from rtlforge.behave.sim.task import BehaveTask, BehaveTaskError, parse_behave_task
from rtlforge.behave.sim.testbench import (
    clock_start_values,
    cycle_schedule,
    drive_offset,
    plan_testbench,
)
from rtlforge.core.models import Candidate
from rtlforge.sandbox.runner import SandboxRunner

TASK = '''
id = "two_dom"
top = "two_dom"
golden = "golden.py"
clock = "clk_b"
{clocks}

[reset]
signal = "rb"
active = "high"
kind = "async"
{extra}

[[interfaces]]
name = "in"
direction = "input"
protocol = "per_cycle"
endpoints = [{{ name = "en", type = "bool" }}]

[[interfaces]]
name = "out"
direction = "output"
protocol = "per_cycle"
{delay}
endpoints = [{{ name = "na", type = "uint8" }}, {{ name = "nb", type = "uint8" }}]
'''


def _task(clocks: str = '[[clocks]]\nport = "clk_a"\nratio = 2',
          extra: str = 'extra = [{ signal = "ra", active = "low" }]', delay: str = ""
          ) -> BehaveTask:
    return parse_behave_task(TASK.format(clocks=clocks, extra=extra, delay=delay))


# ------------------------------------------------------------------------------ the format


def test_clocks_resets_and_delay_load() -> None:
    task = _task(delay="delay = [1, 3]")
    assert [(c.port, c.ratio) for c in task.clocks] == [("clk_a", 2)]
    assert task.reset is not None
    assert [(r.signal, r.active) for r in task.reset.extra] == [("ra", "low")]
    assert task.outputs[0].delay == (1, 3)


@pytest.mark.parametrize(("clocks", "field", "words"), [
    ('[[clocks]]\nport = "clk_a"\nratio = 0', "clocks[0].ratio", "between 1 and 16"),
    ('[[clocks]]\nport = "clk_a"\nratio = 17', "clocks[0].ratio", "between 1 and 16"),
    ('[[clocks]]\nport = "clk_a"\nratio = 1000000000000', "clocks[0].ratio", "between 1"),
    ('[[clocks]]\nport = "clk_a"\nratio = 1.5', "clocks[0].ratio", "integer"),
    ('[[clocks]]\nport = "clk_b"\nratio = 2', "clocks[0].port", "already used"),
    ('[[clocks]]\nport = "en"\nratio = 2', "interfaces[0].endpoints[0].port", "already used"),
    ('[[clocks]]\nport = "bt_clk"\nratio = 2', "clocks[0].port", "generated testbench"),
    ('[[clocks]]\nport = "clk_a"', "clocks[0].ratio", "Field required"),
    ('[[clocks]]\nport = "clk_a"\nratio = 2\nalign = "up"', "clocks[0].align", "'rise'"),
    ("\n".join(f'[[clocks]]\nport = "c{k}"\nratio = 2' for k in range(5)), "clocks",
     "at most 4"),
])
def test_bad_clocks_are_typed_errors(clocks: str, field: str, words: str) -> None:
    with pytest.raises(BehaveTaskError) as info:
        _task(clocks=clocks)
    assert info.value.field == field
    assert words in str(info.value)


@pytest.mark.parametrize(("extra", "field", "words"), [
    ('extra = [{ signal = "rb" }]', "reset.extra[0].signal", "already used"),
    ('extra = [{ signal = "ra", active = "sideways" }]', "reset.extra[0].active", "'high'"),
    ("extra = [" + ", ".join(f'{{ signal = "r{k}" }}' for k in range(5)) + "]",
     "reset.extra", "at most 4"),
])
def test_bad_extra_resets_are_typed_errors(extra: str, field: str, words: str) -> None:
    with pytest.raises(BehaveTaskError) as info:
        _task(extra=extra)
    assert info.value.field == field
    assert words in str(info.value)


@pytest.mark.parametrize(("delay", "words"), [
    ("delay = [3, 2]", "0 <= lo <= hi <= 32"),
    ("delay = [0, 33]", "0 <= lo <= hi <= 32"),
    ("delay = [-1, 2]", "0 <= lo <= hi"),
])
def test_bad_delay_windows_are_typed_errors(delay: str, words: str) -> None:
    with pytest.raises(BehaveTaskError, match=words.replace("[", r"\[")) as info:
        _task(delay=delay)
    assert info.value.field == "interfaces[1].delay"


def test_a_delay_window_belongs_to_per_cycle_outputs_only() -> None:
    text = TASK.format(clocks="", extra="", delay="").replace(
        'protocol = "per_cycle"\nendpoints = [{ name = "en"',
        'protocol = "per_cycle"\ndelay = [0, 1]\nendpoints = [{ name = "en"')
    with pytest.raises(BehaveTaskError, match="only a per_cycle output") as info:
        parse_behave_task(text)
    assert info.value.field == "interfaces[0].delay"


def test_further_clocks_need_a_clocked_task() -> None:
    text = '''
id = "c"
top = "c"
golden = "g.py"

[[clocks]]
port = "clk_a"
ratio = 2

[[interfaces]]
name = "in"
direction = "input"
protocol = "combinational"
endpoints = [{ name = "a", type = "uint2" }]

[[interfaces]]
name = "out"
direction = "output"
protocol = "combinational"
endpoints = [{ name = "y", type = "uint2" }]
'''
    with pytest.raises(BehaveTaskError, match="transaction clock") as info:
        parse_behave_task(text)
    assert info.value.field == "clocks"


# ------------------------------------------------------------------------------ the schedule


def _events(task: BehaveTask) -> list[tuple[int, str, str, int]]:
    return [(e.delay, e.action, e.port, e.value) for e in cycle_schedule(task)]


def test_without_further_clocks_the_cycle_is_the_usual_one() -> None:
    task = _task(clocks="", extra="")
    # wait 4, sample, wait 1, clock high, wait 5, clock low, count, readies: 10 units
    assert _events(task) == [(4, "sample", "", 0), (1, "clock", "", 1), (5, "clock", "", 0),
                             (0, "cycle", "", 0), (0, "readies", "", 0)]
    assert drive_offset(task) == 0
    assert clock_start_values(task) == ()


def test_a_clock_at_twice_the_rate_has_aligned_rising_edges() -> None:
    # period 20; drive at 1; clk_a edges every 5: falls at 5, rises at 10 (with clk_b), falls
    # at 15, rises at 20 (clk_b's falling edge); sample at 9; readies at the next drive, 21
    assert _events(_task()) == [
        (4, "edge", "clk_a", 0), (4, "sample", "", 0), (1, "clock", "", 1),
        (0, "edge", "clk_a", 1), (5, "edge", "clk_a", 0), (5, "clock", "", 0),
        (0, "cycle", "", 0), (0, "edge", "clk_a", 1), (1, "readies", "", 0)]
    assert drive_offset(_task()) == 1
    assert clock_start_values(_task()) == (("clk_a", 1),)  # just rose, at clk_b's fall


def test_a_clock_aligned_on_its_falling_edge_rises_half_its_period_earlier() -> None:
    # as RTLLM's synchronizer testbench: clk_a rises at 5 and 15, falls at 10 (with clk_b's
    # rise) and at 20 (with clk_b's fall), so it is low at time 0
    task = _task(clocks='[[clocks]]\nport = "clk_a"\nratio = 2\nalign = "fall"')
    assert _events(task) == [
        (4, "edge", "clk_a", 1), (4, "sample", "", 0), (1, "clock", "", 1),
        (0, "edge", "clk_a", 0), (5, "edge", "clk_a", 1), (5, "clock", "", 0),
        (0, "cycle", "", 0), (0, "edge", "clk_a", 0), (1, "readies", "", 0)]
    assert clock_start_values(task) == (("clk_a", 0),)


def test_clocks_at_ratios_two_and_three_share_a_stretched_cycle() -> None:
    task = _task(clocks='[[clocks]]\nport = "clk_a"\nratio = 2\n\n'
                        '[[clocks]]\nport = "clk_c"\nratio = 3')
    events = cycle_schedule(task)
    assert sum(e.delay for e in events) == 60  # lcm(2, 3) x 10 units, drive to drive
    t, rises = 1, {"clk_a": [], "clk_c": [], "main": []}
    for e in events:
        t += e.delay
        if e.action == "edge" and e.value:
            rises[e.port].append(t)
        elif e.action == "clock" and e.value:
            rises["main"].append(t)
    # main rises at 30; clk_a every 30 (at 30, 60); clk_c every 20 (10, 30, 50)
    assert rises == {"main": [30], "clk_a": [30, 60], "clk_c": [10, 30, 50]}
    assert dict(clock_start_values(task)) == {"clk_a": 1, "clk_c": 0}


def test_the_testbench_drives_every_clock_and_reset_port() -> None:
    task = _task()
    plan = plan_testbench(task, generate_stimulus(task, StimulusConfig(sequences=1,
                                                                       transactions=4)))
    text = plan.text
    assert "reg clk_a = 1'b1;" in text and ".clk_a(clk_a)" in text
    assert "reg ra = 1'b1;" in text and ".ra(ra)" in text  # active low: idle high
    assert "rb = 1'b1; ra = 1'b0; bt_in_reset = 1;" in text
    assert "rb <= 1'b0; ra <= 1'b1; bt_in_reset = 0;" in text
    assert "#1;  // to the drive point" in text


# ------------------------------------------------------------------------------ simulation

DESIGN = """
module two_dom(input clk_b, input clk_a, input rb, input ra, input en,
               output reg [7:0] na, output reg [7:0] nb);
  always @(posedge clk_a or negedge ra)  // counts clk_a edges with en high
    if (!ra) na <= 8'd0; else if (en) na <= na + 8'd1;
  always @(posedge clk_b or posedge rb)  // counts clk_b edges with en high
    if (rb) nb <= 8'd0; else if (en) nb <= nb + 8'd1;
endmodule
"""

# what the schedule gives: en is driven after clk_b's falling edge and every clk_a rising
# edge of the cycle sees it: na grows by the ratio, nb by 1. clk_a rises every 2 x 5 units
# ending with clk_b's rise at 5 x ratio, so (ratio - 1) // 2 of them come before the sample
# (1 unit before clk_b's rise): the sample of a cycle already shows those.
GOLDEN = '''
from rtlforge.behave.model.dsl import *


class Out(Record):
    na: UInt[8]
    nb: UInt[8]


class TwoDom(Model):
    na: UInt[8]
    nb: UInt[8]

    def reset(self):
        self.na = 0
        self.nb = 0

    def process(self, en: Bool) -> Out:
        na = self.na
        nb = self.nb
        if en:
            na = wrap(self.na + {early}, 8)
            self.na = wrap(self.na + {step}, 8)
            self.nb = wrap(self.nb + 1, 8)
        return Out(na=na, nb=nb)
'''

SMALL = StimulusConfig(sequences=6, transactions=40)


@pytest.fixture(scope="module")
def runner():
    with SandboxRunner() as r:
        yield r


def _check(task: BehaveTask, source: str, step: int, runner: SandboxRunner, *,
           early: int = 0, **kw):
    golden = load_model(GOLDEN.replace("{step}", str(step)).replace("{early}", str(early)))
    golden = golden.instance()
    return check_rtl(task, Candidate.from_source(source), runner=runner,
                     stimulus=kw.pop("stimulus", SMALL), golden=golden, **kw)


@pytest.mark.tools
@pytest.mark.parametrize(("ratio", "align", "early"), [
    (1, "rise", 0), (2, "rise", 0), (3, "rise", 1), (4, "rise", 1),
    # align = "fall": clk_a rises half its period before each clk_b rise, r // 2 of its
    # rising edges come before the sample (ratio 2: at 5, before the sample at 9)
    (1, "fall", 0), (2, "fall", 1), (3, "fall", 1), (4, "fall", 2)])
def test_the_fast_clock_makes_ratio_edges_per_cycle(ratio: int, align: str, early: int,
                                                   runner) -> None:
    task = _task(clocks=f'[[clocks]]\nport = "clk_a"\nratio = {ratio}\nalign = "{align}"')
    assert _check(task, DESIGN, ratio, runner, early=early).verdict == "pass"
    wrong = _check(task, DESIGN, ratio + 1, runner, early=early)
    assert wrong.verdict == "fail" and wrong.first_failure is not None


@pytest.mark.tools
def test_a_further_reset_left_out_leaves_its_domain_unreset(runner) -> None:
    task = _task(extra="")  # ra is not a declared reset: never asserted
    # the design still compiles (ra is left unconnected in the testbench): na is never reset
    result = _check(task, DESIGN, 2, runner)
    assert result.verdict == "fail"
    assert _check(_task(), DESIGN, 2, runner).verdict == "pass"


DELAYED = """
module two_dom(input clk_b, input clk_a, input rb, input ra, input en,
               output reg [7:0] na, output reg [7:0] nb);
  reg [7:0] a0, b0, a1, b1;  // the counts pass {k} more clk_b register(s) on the way out
  always @(posedge clk_a or negedge ra)
    if (!ra) a0 <= 8'd0; else if (en) a0 <= a0 + 8'd1;
  always @(posedge clk_b or posedge rb)
    if (rb) b0 <= 8'd0; else if (en) b0 <= b0 + 8'd1;
  always @(posedge clk_b or posedge rb)
    if (rb) begin a1 <= 0; b1 <= 0; na <= 0; nb <= 0; end
    else begin a1 <= a0; b1 <= b0; na <= K2 ? a1 : a0; nb <= K2 ? b1 : b0; end
endmodule
"""


def _delayed(k: int) -> str:
    return DELAYED.replace("K2", "1'b1" if k == 2 else "1'b0").replace("{k}", str(k))


@pytest.mark.tools
def test_a_delay_window_accepts_any_one_delay_in_it(runner) -> None:
    plain = _check(_task(delay="delay = [0, 2]"), DESIGN, 2, runner)
    assert plain.verdict == "pass" and plain.metrics["delay.out"] == 0
    for k in (1, 2):  # the output registered k more times: the stream k cycles late
        late = _check(_task(delay="delay = [0, 2]"), _delayed(k), 2, runner)
        assert late.verdict == "pass", late.message
        assert late.metrics["delay.out"] == k
        outside = _check(_task(delay=f"delay = [0, {k - 1}]"), _delayed(k), 2, runner)
        assert outside.verdict == "fail"
        assert "delay" in outside.message and "best fit" in outside.message
    assert _check(_task(), _delayed(1), 2, runner).verdict == "fail"  # no window: exact


@pytest.mark.tools
def test_the_delay_is_one_for_the_whole_run(runner) -> None:
    # after every reset but the first, the output stream is one cycle later than before
    drift = DESIGN.replace("module two_dom(", "module two_dom_inner(") + """
module two_dom(input clk_b, input clk_a, input rb, input ra, input en,
               output [7:0] na, output [7:0] nb);
  wire [7:0] a, b;
  reg [7:0] ra1, rb1;
  reg late = 1'b0;
  two_dom_inner u (.clk_b(clk_b), .clk_a(clk_a), .rb(rb), .ra(ra), .en(en), .na(a), .nb(b));
  always @(posedge rb) late <= 1'b1;  // set by the first reset, for the second on
  reg seen = 1'b0;
  always @(posedge rb) seen <= late;
  always @(posedge clk_b) begin ra1 <= a; rb1 <= b; end
  assign na = seen ? ra1 : a;
  assign nb = seen ? rb1 : b;
endmodule
"""
    two_runs = StimulusConfig(sequences=2, transactions=30, edge_sweep=False,
                              continuous_fraction=0, reset_probability=0)
    task = _task(delay="delay = [0, 1]")
    stim = generate_stimulus(task, two_runs)
    assert [n for n, t in enumerate(stim.transactions) if t.reset] == [0, 30]
    # each segment alone fits one delay (0, then 1): one delay for the run fits neither
    result = _check(task, drift, 2, runner, stimulus=stim)
    assert result.verdict == "fail"
    assert _check(task, DESIGN, 2, runner, stimulus=stim).verdict == "pass"
