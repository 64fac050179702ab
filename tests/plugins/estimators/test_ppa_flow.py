"""PPA flow: the persistent pyosys worker, several clocks, clock hints, latches, and the reason
given for every design that cannot be measured.

The designs are written here; each expectation comes from the Verilog itself (which ports are
clocks, which outputs are wired straight to inputs, which construct no library can map).
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

import rtlforge.plugins.estimators.ppa.yosys as ppa_yosys
from rtlforge.core.errors import ToolMissingError
from rtlforge.core.models import Candidate, Task
from rtlforge.eda.liberty import GENERIC_LIBERTY, latch_cells, latch_techmap, prepare_liberty
from rtlforge.evaluation.golden import GoldenPPA, task_ppa_options
from rtlforge.plugins.estimators.ppa import (
    PPAError,
    PPATimeoutError,
    YosysAbcPPA,
    YosysStaPPA,
    pyosys_location,
)
from rtlforge.plugins.estimators.ppa.synthesis import _split_concat_assigns
from rtlforge.sandbox.runner import SandboxRunner

HAVE_PYOSYS = pyosys_location() is not None
needs_pyosys = pytest.mark.skipif(not HAVE_PYOSYS, reason="pyosys not installed (the extra)")
BACKENDS = ["binary", pytest.param("pyosys", marks=needs_pyosys)]

ADDER = """module add4(input [3:0] a, input [3:0] b, output [4:0] s);
  assign s = a + b;
endmodule
"""
COUNTER = """module cnt(input clk, input rst, output reg [3:0] q);
  always @(posedge clk) if (rst) q <= 0; else q <= q + 1;
endmodule
"""
# Two clock domains, neither port named like the usual single clock.
TWO_CLOCKS = """module twodom(input wclk, input rclk, input [3:0] d, output reg [3:0] q);
  reg [3:0] w;
  always @(posedge wclk) w <= d + 4'd1;
  always @(posedge rclk) q <= w ^ {q[2:0], q[3]};
endmodule
"""
# A clock whose name says nothing: only a hint can name it.
TICK = """module ticker(input tick, input [3:0] d, output reg [3:0] q);
  always @(posedge tick) q <= q + d;
endmodule
"""
# A latch between a clocked register and the output (the shape of RTLLM's fsm golden).
LATCH = """module lat(input clk, input en, input [3:0] d, output [3:0] q);
  reg [3:0] r, l;
  always @(posedge clk) r <= d;
  always @(*) if (en) l = r;
  assign q = l;
endmodule
"""
NO_HARDWARE = """module gen(output reg clk);
  initial clk = 0;
  always #5 clk = ~clk;
endmodule
"""
ASYNC_LOAD = """module aload(input clk, input load, input [3:0] v, input [3:0] d,
             output reg [3:0] q);
  always @(posedge clk or posedge load) if (load) q <= v; else q <= d;
endmodule
"""
MIXED_EVENTS = """module mixed(input clk, input rst, output reg [3:0] q);
  always @(posedge clk or rst) if (rst) q <= 0; else q <= q + 1;
endmodule
"""
# Outputs wired to inputs and constants only, through one inverter: yosys writes these as
# concatenations with constants on the right, which OpenSTA 2019 silently dropped.
WIRING = """module wiring(input [1:0] a, output [7:0] y);
  assign y = {1'b1, a, 2'b00, ~a[1], a};
endmodule
"""


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RTLFORGE_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "cache"))


@pytest.fixture(scope="module")
def runner() -> SandboxRunner:
    return SandboxRunner()


def src(text: str) -> Candidate:
    return Candidate.from_source(text)


def triple(est: YosysStaPPA, text: str, top: str, runner: SandboxRunner,
           **kw: object) -> tuple[float, float, float, int]:
    res = est.estimate(src(text), top, runner, **kw)  # type: ignore[arg-type]
    return res.area_um2, res.delay_ns, res.power_mw, res.cells


# ------------------------------------------------------------------------- no tools


def test_bit_blast_of_concatenation_assigns() -> None:
    netlist = """module m(a, y);
  input [1:0] a;
  wire [1:0] a;
  output [5:0] y;
  wire [5:0] y;
  wire n;
  assign { y[5], y[3:0] } = { 1'h1, a, 2'h2 };
  assign y[4] = n;
endmodule
"""
    out = _split_concat_assigns(netlist)
    assigns = [line.strip() for line in out.splitlines() if "assign" in line]
    # 1'h1 -> 1; a -> a[1], a[0]; 2'h2 -> 1, 0, bit by bit onto y[5], y[3], y[2], y[1], y[0].
    assert assigns == ["assign y[5] = 1'b1;", "assign y[3] = a[1];", "assign y[2] = a[0];",
                       "assign y[1] = 1'b1;", "assign y[0] = 1'b0;", "assign y[4] = n;"]


def test_equal_length_concats_keep_the_element_split() -> None:
    netlist = "  assign { a, b } = { c, d };\n"
    assert _split_concat_assigns(netlist) == "  assign a = c;\n  assign b = d;\n"


def test_task_clock_hint_fills_only_an_unset_clock() -> None:
    task = Task(id="t", spec="", top="ticker", metadata={"ppa_clock": "tick"})
    assert task_ppa_options(task, {}) == {"clock": "tick"}
    assert task_ppa_options(task, {"clock": "other"}) == {"clock": "other"}
    assert task_ppa_options(Task(id="u", spec="", top="x"), {"period_ns": 2.0}) == \
        {"period_ns": 2.0}


def test_backend_choice_is_validated(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match="yosys must be one of"):
        YosysStaPPA(yosys="fast")
    monkeypatch.setattr(ppa_yosys, "pyosys_location", lambda: None)
    assert YosysStaPPA().backend == "binary"  # auto falls back to the binary
    with pytest.raises(ToolMissingError, match="pyosys"):
        _ = YosysStaPPA(yosys="pyosys").backend


def test_generic_library_has_a_plain_latch(tmp_path: Path) -> None:
    lib = prepare_liberty(GENERIC_LIBERTY, cache_dir=tmp_path)
    (cell,) = latch_cells(lib)
    assert (cell.name, cell.enable, cell.active_high, cell.data, cell.q) == \
        ("DLATCH", "G", True, "D", "Q")
    text = latch_techmap(lib).read_text()  # type: ignore[union-attr]
    assert "module \\$_DLATCH_P_" in text and "module \\$_DLATCH_N_" in text
    assert "DLATCH _TECHMAP_REPLACE_ (.G(E), .D(D), .Q(Q));" in text


# ------------------------------------------------------------------------- tool-backed


@pytest.mark.tools
@pytest.mark.parametrize("backend", BACKENDS)
def test_results_are_deterministic_whatever_ran_before(backend: str,
                                                       runner: SandboxRunner) -> None:
    with YosysStaPPA(yosys=backend) as est, YosysStaPPA(yosys=backend) as fresh:
        first = triple(est, COUNTER, "cnt", runner)
        for text, top in ((ADDER, "add4"), (TWO_CLOCKS, "twodom"), (LATCH, "lat")):
            est.estimate(src(text), top, runner)
        assert triple(est, COUNTER, "cnt", runner) == first
        assert triple(fresh, COUNTER, "cnt", runner) == first


@pytest.mark.tools
@needs_pyosys
def test_pyosys_result_names_the_tool_version_and_matches_oneshot_sta(
        runner: SandboxRunner) -> None:
    with YosysStaPPA(yosys="pyosys") as warm:
        res = warm.estimate(src(COUNTER), "cnt", runner)
        assert warm.cache_key()["yosys"].startswith("pyosys ")
    yosys = next(t for t in res.tools if t.name == "yosys")
    assert yosys.version and yosys.version.startswith("Yosys 0.") and "pyosys" in str(yosys.path)
    cold = YosysStaPPA(yosys="pyosys", persistent=False)
    assert triple(cold, COUNTER, "cnt", runner) == \
        (res.area_um2, res.delay_ns, res.power_mw, res.cells)
    cold.close()


@pytest.mark.tools
@needs_pyosys
def test_pyosys_worker_restarts_after_being_killed(runner: SandboxRunner) -> None:
    with YosysStaPPA(yosys="pyosys") as est:
        first = triple(est, ADDER, "add4", runner)
        worker = est._local.yosys
        old_pid = worker.proc.pid
        os.killpg(old_pid, signal.SIGKILL)
        worker.proc.wait(timeout=10)
        assert triple(est, ADDER, "add4", runner) == first  # restarted, same numbers
        assert worker.proc.pid != old_pid


@pytest.mark.tools
@needs_pyosys
def test_pyosys_job_timeout_ends_the_job_not_the_worker(runner: SandboxRunner) -> None:
    big = "module big(input [63:0] a, input [63:0] b, output [127:0] p);\n" \
          "  assign p = a * b;\nendmodule\n"
    with YosysStaPPA(yosys="pyosys", timeout=0.05) as est:
        with pytest.raises(PPATimeoutError):
            est.estimate(src(big), "big", runner)
        worker = est._local.yosys
        pid = worker.proc.pid
        est.timeout = worker.timeout = 300.0
        assert triple(est, ADDER, "add4", runner)[0] > 0
        assert worker.proc.pid == pid  # the same worker served the next design
        assert os.listdir(worker.workdir) == []  # no design left for the next one to read


def test_signed_declarations_lose_signed_for_sta() -> None:
    netlist = "  input signed [7:0] a;\n  wire signed [7:0] a;\n  output lt;\n"
    assert _split_concat_assigns(netlist) == "  input [7:0] a;\n  wire [7:0] a;\n  output lt;\n"


SIGNED_CMP = """module scmp(input wire signed [7:0] a, input wire signed [7:0] b, output lt);
  assign lt = a < b;
endmodule
"""


@pytest.mark.tools
@pytest.mark.parametrize("backend", BACKENDS)
def test_signed_ports_are_timed(backend: str, runner: SandboxRunner) -> None:
    # yosys 0.70 writes ``input signed [7:0] a;``, which OpenSTA 2019 read as no declaration
    # at all: the comparator then had no timing path.
    with YosysStaPPA(yosys=backend) as est:
        area, delay, power, cells = triple(est, SIGNED_CMP, "scmp", runner)
    assert area > 0 and delay > 0 and power > 0 and cells > 0


@pytest.mark.tools
@pytest.mark.parametrize("backend", BACKENDS)
def test_two_clock_domains_are_found_and_timed(backend: str, runner: SandboxRunner) -> None:
    with YosysStaPPA(yosys=backend) as est:
        res = est.estimate(src(TWO_CLOCKS), "twodom", runner)
    assert sorted(res.details["clock"].split(",")) == ["rclk", "wclk"]
    assert not res.details["virtual_clock"]
    assert res.delay_ns > 0 and res.power_mw > 0


@pytest.mark.tools
@pytest.mark.parametrize("backend", BACKENDS)
def test_clock_hint_from_the_task(backend: str, runner: SandboxRunner) -> None:
    est = YosysStaPPA(yosys=backend)
    with pytest.raises(PPAError, match="--clock"):
        est.estimate(src(TICK), "ticker", runner)
    golden = Candidate.from_source(TICK).files
    hinted = Task(id="ticker", spec="", top="ticker", golden=golden,
                  metadata={"ppa_clock": "tick"})
    plain = Task(id="ticker2", spec="", top="ticker", golden=golden)
    goldens = GoldenPPA(est, runner)
    measured = goldens.measure(hinted)
    assert measured.ppa is not None and measured.ppa.details["clock"] == "tick"
    assert goldens.measure(plain).error and "--clock" in goldens.measure(plain).error
    est.close()


@pytest.mark.tools
@pytest.mark.parametrize("backend", BACKENDS)
def test_latch_design_on_the_generic_library(backend: str, runner: SandboxRunner) -> None:
    with YosysStaPPA(yosys=backend) as est:
        res = est.estimate(src(LATCH), "lat", runner)
    assert res.details["cell_counts"].get("DLATCH") == 4
    assert res.area_um2 >= 4 * 3.5 and res.delay_ns > 0


@pytest.mark.tools
def test_latch_on_a_library_without_latches_says_so(runner: SandboxRunner,
                                                    tmp_path: Path) -> None:
    text = GENERIC_LIBERTY.read_text()
    start = text.index("  cell (DLATCH)")
    end = text.index("  cell (TIEHI)")
    lib = tmp_path / "nolatch.lib"
    lib.write_text(text[:start] + text[end:])
    with pytest.raises(PPAError, match="a latch") as err:
        YosysStaPPA(liberty=lib, yosys="binary").estimate(src(LATCH), "lat", runner)
    assert "$_DLATCH_P_" in str(err.value)


@pytest.mark.tools
@pytest.mark.parametrize("backend", BACKENDS)
def test_wiring_through_constants_has_a_timing_path(backend: str,
                                                    runner: SandboxRunner) -> None:
    with YosysStaPPA(yosys=backend) as est:
        res = est.estimate(src(WIRING), "wiring", runner)
    assert res.cells == 1 and res.details["cell_counts"] == {"INV": 1}
    assert res.delay_ns > 0


@pytest.mark.tools
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(("text", "top", "reason"), [
    (NO_HARDWARE, "gen", "synthesises to no cells at all"),
    (ASYNC_LOAD, "aload", "asynchronous-load flip-flop"),
    (MIXED_EVENTS, "mixed", "mixes edges and levels"),
])
def test_unmeasurable_designs_say_why(backend: str, text: str, top: str, reason: str,
                                      runner: SandboxRunner) -> None:
    for cls in (YosysStaPPA, YosysAbcPPA):
        with cls(yosys=backend) as est, pytest.raises(PPAError, match=reason) as err:
            est.estimate(src(text), top, runner)
        assert err.value.stage == "synth"
