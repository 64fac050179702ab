"""PPA: liberty preparation, units, the yosys-sta / yosys-abc estimators and the ``ppa`` command.

Expectations the design pairs in ``tests/fixtures/ppa`` must meet on every library:

- ``ksa32`` (Kogge-Stone) against ``rca32`` (ripple carry): lower delay, higher area;
- ``mul8_seq`` (shift-add, 8 cycles) against ``mul8_array`` (combinational array): smaller area
  and a shorter critical path (a clock period, not the 8-cycle latency).
"""

from __future__ import annotations

import itertools
import json
import math
import os
import threading
import time
import tomllib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

import rtlforge.plugins.estimators.ppa as ppa_plugin
import rtlforge.sandbox.runner as runner_mod
from rtlforge.cli.root import configure_logging
from rtlforge.core.errors import ToolMissingError
from rtlforge.core.interfaces import PPAResult
from rtlforge.core.models import Candidate
from rtlforge.core.plugins import PluginHost
from rtlforge.eda.liberty import (
    GENERIC_LIBERTY,
    SKY130_DONT_USE,
    LibertyError,
    liberty_info,
    mark_dont_use,
    prepare_liberty,
)
from rtlforge.plugins.estimators.ppa import (
    PPAError,
    PPATimeoutError,
    YosysAbcPPA,
    YosysStaPPA,
)
from rtlforge.plugins.estimators.ppa.sta import _StaProcess
from rtlforge.sandbox.runner import SandboxRunner

FIXTURES = Path(__file__).parents[2] / "fixtures" / "ppa"
PDK = Path(__file__).resolve().parents[3].parent / "shared" / "pdk"
SKY130 = PDK / "sky130_fd_sc_hd" / "sky130hd_tt.lib.gz"
NANGATE = PDK / "nangate45" / "nangate45_typ.lib.gz"
needs_pdk = pytest.mark.skipif(not PDK.is_dir(), reason=f"shared liberty data absent ({PDK})")
PAIRS = ("rca32", "ksa32", "mul8_array", "mul8_seq")


def design(name: str) -> Candidate:
    return Candidate.from_source((FIXTURES / f"{name}.v").read_text(), name=f"{name}.v")


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    # One liberty cache per session, never the user's ~/.cache.
    root = tmp_path_factory.getbasetemp() / "rtlforge-cache"
    monkeypatch.setenv("RTLFORGE_CACHE_DIR", str(root))


@pytest.fixture(scope="module")
def runner() -> SandboxRunner:
    return SandboxRunner()


# ------------------------------------------------------------------------------- liberty


def test_mark_dont_use_inserts_attribute_in_matching_cells_only() -> None:
    text = 'library (x) {\n  cell (A1) {\n    area : 1;\n  }\n  cell ("B1") {\n  }\n}\n'
    out, marked = mark_dont_use(text, ["A*"])
    assert marked == ["A1"]
    assert out.count("dont_use : true;") == 1
    assert out.index("dont_use") < out.index("area")


def test_prepare_plain_liberty_patterns_and_cache_dir(tmp_path: Path) -> None:
    cache = tmp_path / "c"
    path = prepare_liberty(GENERIC_LIBERTY, dont_use=["XOR2", "XNOR*"], cache_dir=cache)
    assert path.parent == cache and path.suffix == ".lib"
    text = path.read_text()
    assert text.count("dont_use : true;") == 2
    # Same inputs, same file; other patterns, another file.
    assert prepare_liberty(GENERIC_LIBERTY, dont_use=["XNOR*", "XOR2"], cache_dir=cache) == path
    assert prepare_liberty(GENERIC_LIBERTY, cache_dir=cache) != path
    with pytest.raises(LibertyError, match="match no cell"):
        prepare_liberty(GENERIC_LIBERTY, dont_use=["NO_SUCH_*"], cache_dir=cache)
    with pytest.raises(LibertyError, match="not found"):
        prepare_liberty(tmp_path / "missing.lib", cache_dir=cache)


def test_default_cache_dir_follows_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RTLFORGE_CACHE_DIR", str(tmp_path))
    assert prepare_liberty(GENERIC_LIBERTY).parent == tmp_path / "liberty"


def test_generic_units() -> None:
    info = liberty_info(GENERIC_LIBERTY)
    assert info.name == "rtlforge_generic"
    assert (info.units.time_ns, info.units.cap_pf, info.units.leakage_mw) == (1e-3, 1e-3, 1e-6)
    assert info.units.to_lib_time(1.0) == pytest.approx(1000.0)


@pytest.mark.shared
@needs_pdk
@pytest.mark.parametrize(("lib", "name", "cap_pf"), [
    (SKY130, "sky130_fd_sc_hd__tt_025C_1v80", 1.0),
    (NANGATE, "NangateOpenCellLibrary", 1e-3),
])
def test_real_library_units(lib: Path, name: str, cap_pf: float) -> None:
    info = liberty_info(lib)
    assert info.name == name
    assert info.units.time_ns == 1.0 and info.units.cap_pf == cap_pf
    assert info.units.leakage_mw == pytest.approx(1e-6)  # 1 nW


@pytest.mark.shared
@needs_pdk
def test_sky130_gz_unpacked_once_with_dont_use(tmp_path: Path) -> None:
    with ThreadPoolExecutor(4) as pool:  # parallel workers converge on one complete file
        paths = set(pool.map(lambda _: prepare_liberty(SKY130, dont_use=SKY130_DONT_USE,
                                                       cache_dir=tmp_path), range(4)))
    assert len(paths) == 1
    path = paths.pop()
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no temp files left behind
    mtime = path.stat().st_mtime_ns
    assert prepare_liberty(SKY130, dont_use=SKY130_DONT_USE, cache_dir=tmp_path) == path
    assert path.stat().st_mtime_ns == mtime
    text = path.read_text()
    cells = {}
    for chunk in text.split('cell ("')[1:]:
        name, _, body = chunk.partition('")')
        cells[name] = "dont_use : true;" in body[:200]
    lpflow = [c for c in cells if c.startswith("sky130_fd_sc_hd__lpflow_")]
    assert lpflow and all(cells[c] for c in lpflow)
    assert cells["sky130_fd_sc_hd__probe_p_8"] and cells["sky130_fd_sc_hd__probec_p_8"]
    assert sum(cells.values()) == 36
    assert not cells["sky130_fd_sc_hd__nand2_1"]


# ------------------------------------------------------------------------------- runner.spawn


@pytest.mark.tools
def test_runner_spawn_is_a_sandboxed_pipe_process() -> None:
    runner = SandboxRunner()
    with runner.workspace() as wd:
        proc = runner.spawn(["cat"], wd)
        assert proc.stdin is not None and proc.stdout is not None
        assert os.getpgid(proc.pid) == proc.pid  # its own process group
        proc.stdin.write(b"hello\n")
        proc.stdin.flush()
        assert proc.stdout.readline() == b"hello\n"
        SandboxRunner.kill(proc)
        assert proc.returncode is not None


def test_a_long_lived_process_outlives_the_thread_that_started_it() -> None:
    """A jail dies with the thread that launched it: spawn() must not tie it to the caller's."""
    runner = SandboxRunner()
    with runner.workspace() as wd:
        started: list[Any] = []
        thread = threading.Thread(target=lambda: started.append(runner.spawn(["cat"], wd)))
        thread.start()
        thread.join()
        time.sleep(0.3)
        proc = started[0]
        proc.stdin.write(b"still here\n")
        proc.stdin.flush()
        assert proc.stdout.readline() == b"still here\n"
        SandboxRunner.kill(proc)
    runner.close()


# ------------------------------------------------------------------------------- estimators


@pytest.mark.tools
def test_generic_library_end_to_end(runner: SandboxRunner) -> None:
    with YosysStaPPA() as est:
        res = est.estimate(design("mul8_seq"), "mul8_seq", runner, cycles=8)
    assert res.liberty == "generic"
    for value in (res.area_um2, res.delay_ns, res.power_mw):
        assert math.isfinite(value) and value > 0
    d = res.details
    assert d["units"]["delay"] == "ns" and d["units"]["liberty"]["time"] == "1ps"
    assert d["sequential"] and d["flops"] == 30 and d["clock"] == "clk"
    assert not d["virtual_clock"] and d["period_ns"] == 10.0
    assert d["cell_counts"]["DFF"] == 30
    assert d["latency_ns"] == pytest.approx(8 * res.delay_ns)
    # Library time is ps: a sub-ns flop-to-flop path must not come back as hundreds of "ns".
    assert 0.1 < res.delay_ns < 5
    assert {t.name for t in res.tools} == {"yosys", "sta"}


ODDS_AND_ENDS = """
module dut (input clk, input rst_n, input [3:0] a, input b, output reg [3:0] q,
            output [3:0] y, output z, output k);
  always @(posedge clk or negedge rst_n) if (!rst_n) q <= 4'd0; else q <= q ^ a;
  assign y = {a[2:0], a[3]};   // pure wiring: an assign of port to port
  assign z = ~b;
  assign k = 1'b1;            // a constant output
endmodule
"""


@pytest.mark.tools
def test_generic_library_covers_async_reset_wiring_and_constants(runner: SandboxRunner) -> None:
    res = YosysStaPPA(persistent=False).estimate(
        Candidate.from_source(ODDS_AND_ENDS), "dut", runner)
    assert res.details["cell_counts"]["DFFR"] == 4
    assert res.details["flops"] == 4 and res.area_um2 > 0


@pytest.mark.tools
@pytest.mark.shared
@needs_pdk
def test_delay_is_the_worst_path_group_not_the_first(runner: SandboxRunner) -> None:
    # sky130 flops have recovery checks: the async-reset group (rst_n -> RESET_B, a few ps)
    # is printed before the clock group; the delay is the flop-to-flop path.
    src = ("module c(input clk, input rst_n, input en, output reg [7:0] q);\n"
           "  always @(posedge clk or negedge rst_n) if (!rst_n) q <= 0; else if (en) q <= q + 1;\n"
           "endmodule\n")
    with YosysStaPPA(liberty=SKY130) as est:
        res = est.estimate(Candidate.from_source(src), "c", runner)
    assert res.delay_ns > 0.5  # clk->Q plus an 8-bit increment


DUT_A = "module dut(input [7:0] a, b, output [8:0] s); assign s = a + b; endmodule\n"
DUT_B = ("module dut(input clk, input [7:0] a, b, output reg [15:0] s);\n"
         "  always @(posedge clk) s <= a * b;\nendmodule\n")


@pytest.mark.tools
def test_persistent_and_oneshot_sta_agree(runner: SandboxRunner) -> None:
    # Same top name, different designs, one process: the persistent sta must not mix them up.
    cands = [Candidate.from_source(DUT_A), Candidate.from_source(DUT_B), design("rca32")]
    tops = ["dut", "dut", "rca32"]
    with YosysStaPPA(persistent=True) as warm:
        kept = [warm.estimate(c, t, runner) for c, t in zip(cands, tops, strict=True)]
        again = warm.estimate(cands[0], "dut", runner)
    cold = YosysStaPPA(persistent=False)
    fresh = [cold.estimate(c, t, runner) for c, t in zip(cands, tops, strict=True)]
    for a, b in zip(kept, fresh, strict=True):
        assert (a.area_um2, a.delay_ns, a.power_mw, a.cells) == (
            b.area_um2, b.delay_ns, b.power_mw, b.cells)
        assert a.details["sta_mode"] == "persistent" and b.details["sta_mode"] == "oneshot"
    assert again.delay_ns == kept[0].delay_ns
    assert kept[0].details["virtual_clock"] and not kept[1].details["virtual_clock"]


@pytest.mark.tools
def test_persistent_sta_one_process_per_thread(runner: SandboxRunner) -> None:
    est = YosysStaPPA()
    cand = Candidate.from_source(DUT_A)
    barrier = threading.Barrier(2)

    def work(_: int) -> float:
        barrier.wait()
        return est.estimate(cand, "dut", runner).delay_ns

    with ThreadPoolExecutor(2) as pool:
        delays = list(pool.map(work, range(2)))
    assert delays[0] == delays[1]
    assert len(est._procs) == 2
    est.close()
    assert not est._procs


@pytest.mark.tools
def test_sta_query_timeout_kills_and_restarts(tmp_path: Path) -> None:
    sta = _StaProcess(SandboxRunner(), GENERIC_LIBERTY, timeout=0.5, max_queries=10)
    try:
        with pytest.raises(PPATimeoutError):
            sta._query("after 3000")
        assert sta.proc is None  # killed
        assert "42" in sta._query("puts [expr {6 * 7}]")  # a fresh process answers
    finally:
        sta.close()


@pytest.mark.tools
@pytest.mark.parametrize("cls", [YosysStaPPA, YosysAbcPPA])
def test_garbage_design_raises_ppa_error_with_yosys_message(
        cls: type, runner: SandboxRunner) -> None:
    with pytest.raises(PPAError) as err:
        cls().estimate(design("broken"), "broken", runner)
    assert err.value.stage == "synth"
    assert "syntax error" in str(err.value)


@pytest.mark.tools
def test_nothing_to_measure_raises_instead_of_zero(runner: SandboxRunner) -> None:
    const = Candidate.from_source("module c(input a, output y); assign y = 1'b0; endmodule\n")
    with pytest.raises(PPAError):
        YosysStaPPA(persistent=False).estimate(const, "c", runner)


@pytest.mark.tools
def test_clock_detection(runner: SandboxRunner) -> None:
    src = "module t(input tick, input d, output reg q); always @(posedge tick) q <= d; endmodule\n"
    est = YosysStaPPA(persistent=False)
    with pytest.raises(PPAError, match="no recognisable clock"):
        est.estimate(Candidate.from_source(src), "t", runner)
    res = est.estimate(Candidate.from_source(src), "t", runner, clock="tick", period_ns=2.0)
    assert res.details["clock"] == "tick" and res.details["period_ns"] == 2.0
    with pytest.raises(PPAError, match="not an input"):
        est.estimate(Candidate.from_source(src), "t", runner, clock="clk")
    with pytest.raises(PPAError, match="not a plain identifier"):
        est.estimate(Candidate.from_source(src), "t; exec rm", runner)


@pytest.mark.tools
def test_missing_tool_is_an_infrastructure_error(
        runner: SandboxRunner, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(runner_mod, "_tool_cache", {})
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ToolMissingError):
        YosysStaPPA(persistent=False).estimate(Candidate.from_source(DUT_A), "dut", runner)


def test_estimators_registered_and_validate_options() -> None:
    # Through the hook, as the entry point loads it (the venv's metadata may predate it).
    host = PluginHost(load_entrypoints=False, plugins=[("ppa", ppa_plugin)])
    assert {"yosys-sta", "yosys-abc"} <= set(host.names("ppa_estimator"))
    project = tomllib.loads((Path(__file__).parents[3] / "pyproject.toml").read_text())
    entry_points = project["project"]["entry-points"]["rtlforge"]
    assert entry_points["ppa"] == "rtlforge.plugins.estimators.ppa"
    with pytest.raises(ValueError):
        YosysStaPPA(activity=0)
    with pytest.raises(ValueError):
        YosysStaPPA(period_ns=float("nan"))


@pytest.mark.tools
def test_abc_estimator_ranks_like_full_flow_generic(runner: SandboxRunner) -> None:
    _check_abc_ranking(None, runner)


# ------------------------------------------------------------------------------- real libraries


@pytest.fixture(scope="module")
def real_results(runner: SandboxRunner) -> dict[str, dict[str, object]]:
    out: dict[str, dict[str, object]] = {}
    for label, lib in (("sky130", SKY130), ("nangate45", NANGATE)):
        with YosysStaPPA(liberty=lib) as est:
            out[label] = {name: est.estimate(design(name), name, runner) for name in PAIRS}
    return out


@pytest.mark.tools
@pytest.mark.shared
@needs_pdk
@pytest.mark.parametrize("lib", ["sky130", "nangate45"])
def test_design_pairs_rank_as_expected(lib: str, real_results: dict) -> None:
    r = real_results[lib]
    assert r["ksa32"].delay_ns < r["rca32"].delay_ns, "prefix adder must be faster"
    assert r["ksa32"].area_um2 > r["rca32"].area_um2, "prefix adder must be larger"
    assert r["mul8_seq"].area_um2 < r["mul8_array"].area_um2, "sequential must be smaller"
    assert r["mul8_seq"].delay_ns < r["mul8_array"].delay_ns, "one step beats the full array"
    assert r["mul8_seq"].details["sequential"] and not r["mul8_array"].details["sequential"]


@pytest.mark.tools
@pytest.mark.shared
@needs_pdk
def test_sky130_never_maps_onto_dont_use_cells(real_results: dict) -> None:
    for res in real_results["sky130"].values():
        used = set(res.details["cell_counts"])
        assert used and all(c.startswith("sky130_fd_sc_hd__") for c in used)
        assert not [c for c in used if "lpflow" in c or "probe" in c]
        assert res.details["units"]["liberty"]["capacitance"] == "1pf"


def _check_abc_ranking(lib: Path | None, runner: SandboxRunner,
                       sta: dict[str, PPAResult] | None = None) -> None:
    if sta is None:
        with YosysStaPPA(liberty=lib) as full:
            sta = {n: full.estimate(design(n), n, runner) for n in PAIRS}
    fast = YosysAbcPPA(liberty=lib)
    abc = {n: fast.estimate(design(n), n, runner) for n in PAIRS}
    # Every two designs whose full-flow delays differ by more than 10% are ordered alike
    # (rca32 and mul8_array are within 1% of each other on nangate45: a coin toss).
    for a, b in itertools.combinations(PAIRS, 2):
        if abs(sta[a].delay_ns / sta[b].delay_ns - 1) > 0.10:
            assert (sta[a].delay_ns < sta[b].delay_ns) == (abc[a].delay_ns < abc[b].delay_ns)
    for n in PAIRS:
        assert abc[n].area_um2 == sta[n].area_um2  # same mapping
        assert abc[n].delay_ns < sta[n].delay_ns  # ABC's timer reads low
        assert abc[n].details["power_kind"] == "leakage"
        assert abc[n].power_mw == pytest.approx(
            sta[n].details["power_breakdown_mw"]["leakage"], rel=1e-3)


@pytest.mark.tools
@pytest.mark.shared
@needs_pdk
def test_abc_estimator_ranks_like_full_flow_nangate(runner: SandboxRunner,
                                                   real_results: dict) -> None:
    _check_abc_ranking(NANGATE, runner, real_results["nangate45"])


# ------------------------------------------------------------------------------- CLI


@click.group()
def cli() -> None:
    """A bare group with only what the plugin's ``register_commands`` hook adds."""
    configure_logging(0)  # as the real group does: no debug lines in the JSON output


ppa_plugin.register_commands(cli)


@pytest.mark.tools
def test_cli_ppa_json_contract() -> None:
    cli_runner = CliRunner()
    result = cli_runner.invoke(cli, ["ppa", str(FIXTURES / "mul8_seq.v"), "--top", "mul8_seq",
                                     "--period", "5", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    for key in ("area_um2", "delay_ns", "power_mw", "cells", "liberty", "units", "tools"):
        assert key in data
    assert data["units"]["power"] == "mW" and data["details"]["period_ns"] == 5.0
    assert data["estimator"] == "yosys-sta"

    abc = cli_runner.invoke(cli, ["ppa", str(FIXTURES / "rca32.v"), "--top", "rca32",
                                  "--estimator", "yosys-abc", "--json"])
    assert abc.exit_code == 0, abc.output
    assert json.loads(abc.output)["details"]["power_kind"] == "leakage"

    bad = cli_runner.invoke(cli, ["ppa", str(FIXTURES / "broken.v"), "--top", "broken",
                                  "--json"])
    assert bad.exit_code == 1 and "syntax error" in json.loads(bad.output)["error"]

    usage = cli_runner.invoke(cli, ["ppa", str(FIXTURES / "rca32.v"), "--top", "rca32",
                                    "--liberty", str(FIXTURES / "nope.lib")])
    assert usage.exit_code == 2
    not_lib = cli_runner.invoke(cli, ["ppa", str(FIXTURES / "rca32.v"), "--top", "rca32",
                                      "--liberty", str(FIXTURES / "rca32.v")])
    assert not_lib.exit_code == 2


@pytest.mark.tools
def test_cli_ppa_missing_tool_exits_3(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(runner_mod, "_tool_cache", {})
    monkeypatch.setenv("PATH", str(tmp_path))
    result = CliRunner().invoke(cli, ["ppa", str(FIXTURES / "rca32.v"), "--top", "rca32"])
    assert result.exit_code == 3
