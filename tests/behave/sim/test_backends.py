"""BEHAVE-Sim's Verilator and cocotb backends: the same testbench logic and judge as Icarus.

Verilator builds take seconds, so each design is built once per module (the shared
``VerilatorBuilds``, module-scoped results) and the stimulus is small: four full builds in all.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from rtlforge.behave.sim.check import BehaveResult, check_rtl
from rtlforge.behave.sim.stimulus import StimulusConfig
from rtlforge.behave.sim.task import load_behave_task
from rtlforge.behave.sim.verilator import VerilatorBuilds
from rtlforge.core.models import Candidate
from rtlforge.sandbox.runner import SandboxRunner

pytestmark = [pytest.mark.tools,
              pytest.mark.requires_tools("iverilog", "vvp", "verilator", "make", "g++")]

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "behave"
SMALL = StimulusConfig(sequences=4, transactions=24)


@pytest.fixture(scope="module")
def runner() -> Iterator[SandboxRunner]:
    with SandboxRunner() as r:
        yield r


@pytest.fixture(scope="module")
def builds() -> Iterator[VerilatorBuilds]:
    with VerilatorBuilds() as b:
        yield b


def _source(task: str, design: str) -> str:
    return (EXAMPLES / task / design).read_text()


def _check(runner: SandboxRunner, task: str, source: str, **kw) -> BehaveResult:
    return check_rtl(load_behave_task(EXAMPLES / task), Candidate.from_source(source),
                     runner=runner, stimulus=kw.pop("stimulus", SMALL), **kw)


@pytest.fixture(scope="module")
def rv_golden(runner: SandboxRunner, builds: VerilatorBuilds) -> list[BehaveResult]:
    """rv_accum's golden with Verilator on seeds 0 and 1: one build, two runs."""
    source = _source("rv_accum", "golden.v")
    return [_check(runner, "rv_accum", source, backend="verilator", builds=builds,
                   stimulus=SMALL.model_copy(update={"seed": seed})) for seed in (0, 1)]


def test_verilator_passes_rv_accum_golden_and_reuses_the_build(
        rv_golden: list[BehaveResult], builds: VerilatorBuilds) -> None:
    first, second = rv_golden
    for result in rv_golden:
        assert result.verdict == "pass", result.message
        assert result.coverage.completed == result.coverage.outputs > 0
    assert first.metrics["build_cached"] == 0 and second.metrics["build_cached"] == 1
    assert second.metrics["compile_s"] == 0
    # Same size, other values: seed 1 passing against the golden's seed-1 outputs means the
    # reused binary read seed 1's stimulus file, not the one it was built with.
    assert first.coverage.transactions == second.coverage.transactions
    assert builds.builds >= 1 and builds.hits >= 1


@pytest.fixture(scope="module")
def escape_paths(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    outside = tmp_path_factory.mktemp("outside")
    return outside, outside / "opened.txt", outside / "touched.txt"


@pytest.fixture(scope="module")
def escaping_wrong_sum(builds: VerilatorBuilds,
                       escape_paths: tuple[Path, Path, Path]) -> tuple[str, BehaveResult]:
    """rv_accum's 9-bit accumulator plus an initial block that writes a host file and runs a
    shell command, checked with the gate off so that they reach the simulator. One build
    serves the wrong-design test and the jail test: the escape touches files, never outputs."""
    _, opened, touched = escape_paths
    escape = (f"  integer fd;\n  initial begin\n    fd = $fopen(\"{opened}\", \"w\");\n"
              f"    $fwrite(fd, \"escaped\\n\");\n    $fclose(fd);\n"
              f"    $system(\"touch {touched}\");\n  end\nendmodule")
    source = _source("rv_accum", "wrong_sum.v").replace("endmodule", escape, 1)
    with SandboxRunner(unsafe_skip_gate=True) as ungated:
        return source, _check(ungated, "rv_accum", source, backend="verilator", builds=builds)


def test_verilator_fails_a_9_bit_accumulator_like_icarus(
        runner: SandboxRunner, escaping_wrong_sum: tuple[str, BehaveResult]) -> None:
    _, vl = escaping_wrong_sum
    assert vl.verdict == "fail" and vl.first_failure is not None
    first = vl.first_failure
    # A sum of four bytes of 512 or more loses its bit 9 in a 9-bit accumulator.
    assert first.kind == "value" and first.expected["out_sum"] >= 512
    assert first.observed == {"out_sum": first.expected["out_sum"] - 512}
    icarus = _check(runner, "rv_accum", _source("rv_accum", "wrong_sum.v"))
    assert (icarus.verdict, icarus.mismatches) == (vl.verdict, vl.mismatches)
    assert icarus.first_failure == vl.first_failure


def test_verilator_per_cycle_counter(runner: SandboxRunner, builds: VerilatorBuilds) -> None:
    good = _check(runner, "counter_cfg", _source("counter_cfg", "golden.v"),
                  backend="verilator", builds=builds)
    assert good.verdict == "pass", good.message
    bad = _check(runner, "counter_cfg", _source("counter_cfg", "wrong_limit.v"),
                 backend="verilator", builds=builds)
    assert bad.verdict == "fail"
    first = bad.first_failure  # wraps one count late (see test_behave_rtl's late-wrap test)
    limit = first.inputs["limit"]
    if limit < 15:  # limit + 1 where 0 was due
        assert first.expected["count"] == 0 and first.observed["count"] == limit + 1
    else:  # the all-maximum corner: count + 1 wraps to 0 where 1 was due
        assert first.expected["count"] == 1 and first.observed["count"] == 0


def test_design_verilator_rejects_is_an_error(runner: SandboxRunner,
                                              builds: VerilatorBuilds) -> None:
    # A switch primitive: Icarus simulates it, Verilator 5 does not support it.
    source = _source("rv_accum", "golden.v").replace(
        "endmodule", "  wire spare;\n  rnmos (spare, clk, 1'b1);\nendmodule", 1)
    icarus = _check(runner, "rv_accum", source)
    assert icarus.verdict == "pass", icarus.message
    before = builds.builds
    for seed in (0, 1):  # the rejection is cached like a build
        vl = _check(runner, "rv_accum", source, backend="verilator", builds=builds,
                    stimulus=SMALL.model_copy(update={"seed": seed}))
        assert vl.verdict == "error"
        assert "does not compile" in vl.message and "rmos" in vl.message
    assert builds.builds == before + 1


def test_missing_verilator_is_an_infrastructure_error(runner: SandboxRunner) -> None:
    with VerilatorBuilds(verilator="verilator-not-installed-here") as absent:
        result = _check(runner, "rv_accum", _source("rv_accum", "golden.v"),
                        backend="verilator", builds=absent)
    assert result.verdict == "infra_error"
    assert "verilator-not-installed-here" in result.message


def test_verilator_4_is_refused_as_infrastructure(runner: SandboxRunner,
                                                  tmp_path: Path) -> None:
    old = tmp_path / "verilator"
    old.write_text("#!/bin/sh\necho 'Verilator 4.228 2023-01-01 rev v4.228'\n")
    old.chmod(old.stat().st_mode | stat.S_IEXEC)
    with VerilatorBuilds(verilator=str(old)) as builds:
        result = _check(runner, "rv_accum", _source("rv_accum", "golden.v"),
                        backend="verilator", builds=builds)
    assert result.verdict == "infra_error"
    assert "4.228" in result.message and "Verilator 5" in result.message


def test_unknown_backend_is_refused(runner: SandboxRunner) -> None:
    with pytest.raises(ValueError, match="unknown simulation backend"):
        _check(runner, "rv_accum", _source("rv_accum", "golden.v"), backend="modelsim")


def test_jail_holds_for_the_verilator_path(
        builds: VerilatorBuilds, escaping_wrong_sum: tuple[str, BehaveResult],
        escape_paths: tuple[Path, Path, Path]) -> None:
    """With the gate off the design's file write and shell command ran in the simulation;
    nothing of them may reach the host (the jail's /tmp is its own, the rest read-only)."""
    source, result = escaping_wrong_sum
    outside, _, _ = escape_paths
    assert result.verdict == "fail" and result.first_failure.kind == "value"  # it did run
    assert list(outside.iterdir()) == []
    with SandboxRunner() as gated:  # with the gate, refused before any tool runs, cache or not
        refused = _check(gated, "rv_accum", source, backend="verilator", builds=builds)
    assert refused.verdict == "fail" and refused.message.startswith("security")


def test_cli_backend_option(tmp_path: Path) -> None:
    from rtlforge.behave.cli import behave

    design = tmp_path / "rv_accum.v"
    design.write_text(_source("rv_accum", "golden.v").replace(
        "endmodule", "  wire spare;\n  rnmos (spare, clk, 1'b1);\nendmodule", 1))
    result = CliRunner().invoke(behave, [
        "check", str(design), "--task", str(EXAMPLES / "rv_accum"), "--json",
        "--sequences", "1", "--transactions", "8", "--backend", "verilator",
        "--solve-budget", "0"])
    assert result.exit_code == 1, result.output
    assert json.loads(result.output)["verdict"] == "error"


def test_cocotb_backend_agrees_with_icarus(runner: SandboxRunner) -> None:
    cocotb = pytest.importorskip("cocotb", reason="the cocotb backend needs cocotb 2")
    if int(cocotb.__version__.split(".")[0]) < 2:
        pytest.skip(f"cocotb {cocotb.__version__} installed; the backend needs cocotb 2")
    source = _source("rv_accum", "wrong_sum.v")
    config = StimulusConfig(sequences=1, transactions=16)
    via_cocotb = _check(runner, "rv_accum", source, backend="cocotb", stimulus=config)
    icarus = _check(runner, "rv_accum", source, stimulus=config)
    assert icarus.verdict == "fail" and icarus.first_failure is not None, icarus.message
    assert via_cocotb.verdict == "fail", via_cocotb.message
    assert via_cocotb.mismatches == icarus.mismatches
    assert via_cocotb.first_failure == icarus.first_failure
    assert via_cocotb.coverage == icarus.coverage
    assert via_cocotb.metrics["cycles"] == icarus.metrics["cycles"]


def test_no_build_directory_is_left_behind(tmp_path: Path) -> None:
    builds = VerilatorBuilds()
    made = builds.directory
    assert made.is_dir()
    builds.close()
    assert not made.exists()
    keep = VerilatorBuilds(tmp_path / "kept")
    assert keep.directory == (tmp_path / "kept").resolve()
    keep.close()
    assert os.path.isdir(tmp_path / "kept")
