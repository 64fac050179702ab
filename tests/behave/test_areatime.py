"""Area-time exploration: N_W by hand, the front and its exclusions, the CLI and its report."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from rtlforge.behave.areatime import (
    AreaTimePoint,
    AreaTimeResult,
    NamedDesign,
    Workload,
    explore_area_time,
    render_report,
)
from rtlforge.behave.cli import behave
from rtlforge.behave.sim.stimulus import StimulusConfig
from rtlforge.behave.sim.task import load_behave_task
from rtlforge.core.errors import SandboxError
from rtlforge.core.interfaces import PPAResult
from rtlforge.core.models import Candidate, SourceFile
from rtlforge.plugins.estimators.ppa import PPAError

REPO = Path(__file__).resolve().parents[2]
TASK = REPO / "examples" / "behave" / "rv_accum"
#: The shared liberty data next to the checkout (RTLFORGE_PDK points elsewhere, e.g. from a
#: worktree); tests that need it are skipped when it is absent.
PDK = Path(os.environ.get("RTLFORGE_PDK", REPO.parent / "shared" / "pdk"))
SKY130 = PDK / "sky130_fd_sc_hd" / "sky130hd_tt.lib.gz"
SMALL = StimulusConfig(sequences=3, transactions=20)


def design(name: str, label: str | None = None) -> NamedDesign:
    return NamedDesign(name=label or Path(name).stem,
                       candidate=Candidate.from_files([TASK / name]))


class TableEstimator:
    """A PPA estimator answering from a table keyed by the candidate's first file name: a
    (area, delay) pair, or an exception to raise."""

    def __init__(self, table: dict[str, tuple[float, float] | Exception]) -> None:
        self.table = table
        self.periods: list[float | None] = []

    def estimate(self, candidate: Candidate, top: str, runner: Any, *, clock: str | None = None,
                 period_ns: float | None = None) -> PPAResult:
        assert top == "rv_accum" and clock == "clk"
        self.periods.append(period_ns)
        entry = self.table[candidate.files[0].name]
        if isinstance(entry, Exception):
            raise entry
        area, delay = entry
        return PPAResult(area_um2=area, delay_ns=delay, power_mw=0.1, cells=10)


def test_workload_is_back_to_back() -> None:
    task = load_behave_task(TASK)
    stim = Workload(transactions=8, seed=3).stimulus(task)
    assert len(stim.transactions) == 8
    assert [t.reset for t in stim.transactions] == [True] + [False] * 7
    assert all(t.gap == 0 for t in stim.transactions)
    assert set(stim.backpressure["out"]) == {True}
    assert stim == Workload(transactions=8, seed=3).stimulus(task)  # fixed by its seed


@pytest.mark.tools
@pytest.mark.requires_tools("iverilog", "vvp")
def test_n_w_by_hand_and_the_front() -> None:
    """N_W for 8 back-to-back transactions, outputs always ready, worked out from the RTL.

    Let r be the cycle of the first offer (in_ready is high after reset in all three).
    golden.v takes an input every cycle (r..r+7); the fourth input of a group registers the
    sum, offered the next cycle: the second sum at r+8, so N_W = 8 + 1 = 9.
    pipe3.v also takes an input every cycle; the sum goes s1 -> s2 -> out_sum: offered 3
    cycles after the group's fourth input, r+7+3 = r+10, N_W = 11.
    slow.v takes inputs r..r+3, is busy r+4, r+5, offers the sum at r+6 (in_ready low while
    out_valid), takes the next group r+7..r+10, busy r+11, r+12, sum at r+13: N_W = 14.
    """
    table: dict[str, tuple[float, float] | Exception] = {
        "golden.v": (300.0, 2.0), "pipe3.v": (200.0, 2.0), "slow.v": (100.0, 2.0),
        "wrong_sum.v": (90.0, 2.0)}
    estimator = TableEstimator(table)
    task = load_behave_task(TASK)
    result = explore_area_time(
        task, [design("golden.v"), design("pipe3.v"), design("slow.v"), design("wrong_sum.v")],
        freq_mhz=250.0, estimator=estimator, workload=Workload(transactions=8), check=SMALL)
    by = {p.name: p for p in result.candidates}
    assert {n: by[n].cycles for n in ("golden", "pipe3", "slow")} == {
        "golden": 9, "pipe3": 11, "slow": 14}
    assert by["golden"].time_ns == pytest.approx(9 * 4.0)  # tau_W = N_W / f0, 4 ns period
    assert estimator.periods == [pytest.approx(4.0)] * 4  # timed at the period of f0
    # each valid one trades area for time: all three on the front, fastest first
    assert [p.name for p in result.front] == ["golden", "pipe3", "slow"]
    assert by["wrong_sum"].status == "fails_b_star" and "fails B*" in by["wrong_sum"].reason

    # pipe3 now misses timing at 250 MHz; slow grows past golden: dominated by it
    table.update({"pipe3.v": (200.0, 4.5), "slow.v": (400.0, 2.0)})
    result = explore_area_time(
        task, [design("golden.v"), design("pipe3.v"), design("slow.v")], freq_mhz=250.0,
        estimator=TableEstimator(table), workload=Workload(transactions=8), check=SMALL)
    by = {p.name: p for p in result.candidates}
    assert [p.name for p in result.front] == ["golden"]
    assert by["pipe3"].status == "misses_timing" and by["pipe3"].slack_ns == pytest.approx(-0.5)
    assert by["slow"].status == "dominated" and by["slow"].reason.startswith("dominated by golden")
    page = render_report(result)
    assert "<svg" in page and "misses timing: critical path 4.500 ns" in page


@pytest.mark.tools
@pytest.mark.requires_tools("iverilog", "vvp")
def test_exclusions_carry_their_reason(tmp_path: Path) -> None:
    broken = tmp_path / "broken.v"
    broken.write_text("module rv_accum(input clk);\n  assign = 1;\nendmodule\n")
    table: dict[str, tuple[float, float] | Exception] = {
        "golden.v": PPAError("no timing path", stage="sta"),
        "pipe3.v": SandboxError("the jail is down")}
    result = explore_area_time(
        load_behave_task(TASK),
        [design("golden.v"), design("pipe3.v"),
         NamedDesign(name="broken", candidate=Candidate.from_files([broken]))],
        freq_mhz=100.0, estimator=TableEstimator(table), workload=Workload(transactions=8),
        check=SMALL)
    by = {p.name: p for p in result.candidates}
    assert by["golden"].status == "unmeasured" and "no timing path" in by["golden"].reason
    assert by["golden"].cycles == 9  # measured all the same
    assert by["pipe3"].status == "infra_error" and "jail is down" in by["pipe3"].reason
    assert by["broken"].status == "fails_b_star" and by["broken"].check_verdict == "error"
    assert by["broken"].cycles is None and "does not compile" in by["broken"].reason
    assert result.front == ()


@pytest.mark.tools
@pytest.mark.requires_tools("iverilog", "vvp", "yosys", "sta")
@pytest.mark.skipif(not SKY130.is_file(), reason=f"shared liberty data absent ({SKY130})")
def test_sky130_front_at_350_mhz() -> None:
    """The figure of docs/behave-sim.md: at 350 MHz on sky130 pipe3 misses timing, slow is
    dominated by golden, wrong_sum is excluded as wrong."""
    from rtlforge.core.plugins import PluginHost

    estimator = PluginHost.default().create("ppa_estimator", "yosys-sta", liberty=SKY130)
    try:
        result = explore_area_time(
            load_behave_task(TASK), [design(n) for n in ("golden.v", "slow.v", "pipe3.v",
                                                         "wrong_sum.v")],
            freq_mhz=350.0, estimator=estimator, check=SMALL)
    finally:
        estimator.close()
    by = {p.name: p for p in result.candidates}
    assert result.liberty.startswith("sky130_fd_sc_hd")
    assert {n: by[n].cycles for n in ("golden", "slow", "pipe3")} == {
        "golden": 65, "slow": 112, "pipe3": 67}  # 64 + 1; 16 groups of 7; 64 + 3
    assert {n: p.status for n, p in by.items()} == {
        "golden": "front", "slow": "dominated", "pipe3": "misses_timing",
        "wrong_sum": "fails_b_star"}
    for p in result.candidates:  # meets timing exactly when the path fits the period
        assert (p.critical_path_ns <= result.period_ns) == (p.status != "misses_timing")


def _cli(*args: str | Path) -> tuple[int, str]:
    result = CliRunner().invoke(behave, ["area-time", *map(str, args)])
    return result.exit_code, result.output


def test_cli_names_candidates() -> None:
    code, out = _cli(TASK / "golden.v", "--design-set", f"golden={TASK / 'slow.v'}",
                     "--task", TASK, "--freq", "100")
    assert code == 2 and "names clash: golden" in out
    code, out = _cli("--design-set", "pipe", "--task", TASK, "--freq", "100")
    assert code == 2 and "NAME=FILE" in out
    code, out = _cli("--task", TASK, "--freq", "100")
    assert code == 2 and "at least one" in out


@pytest.mark.tools
@pytest.mark.requires_tools("iverilog", "vvp", "yosys", "sta")
def test_cli_json_and_report(tmp_path: Path) -> None:
    """The generic library: two candidates, one of them several files named by --design-set."""
    helper = tmp_path / "adder.v"
    helper.write_text("module add10(input [9:0] a, input [7:0] b, output [9:0] s);\n"
                      "  assign s = a + b;\nendmodule\n")
    top = tmp_path / "top.v"
    top.write_text((TASK / "golden.v").read_text().replace(
        "out_sum <= acc + in_data;", "out_sum <= sum;").replace(
        "reg [1:0] n;", "reg [1:0] n;\n  wire [9:0] sum;\n  add10 u_add(.a(acc), .b(in_data), "
        ".s(sum));"))
    code, out = _cli(TASK / "golden.v", "--design-set", f"split={top},{helper}", "--task", TASK,
                     "--freq", "200", "--sequences", "3", "--transactions", "20",
                     "--workload", "16", "--json", "--report", tmp_path / "report")
    data = json.loads(out)
    assert code == 0 and data["liberty"] == "generic" and data["period_ns"] == 5.0
    by = {c["name"]: c for c in data["candidates"]}
    assert by["split"]["files"] == ["top.v", "adder.v"] and by["split"]["cycles"] == 17
    assert "sources" not in by["split"]  # stdout names the files; area_time.json has them
    assert by["golden"]["cycles"] == 17 and data["front"]
    page = (tmp_path / "report" / "index.html").read_text()
    assert "<svg" in page and "split" in page and (tmp_path / "report" / "area_time.json").is_file()
    assert "module add10(input [9:0] a" in page  # the split design's helper, in its source


# ------------------------------------------------------------------------------ the report

PAYLOAD = "</code></pre></details><script>alert(1)</script><img src=x onerror=alert(2)>"


def _point(name: str, status: str, cycles: int | None, area: float | None,
           source: str, file: str | None = None) -> AreaTimePoint:
    file = file or f"{name}.v"
    return AreaTimePoint(
        name=name, files=(file,), status=status,  # type: ignore[arg-type]
        check_verdict="pass" if status != "fails_b_star" else "fail", cycles=cycles,
        time_ns=cycles * 4.0 if cycles is not None else None, area_um2=area,
        critical_path_ns=2.0, slack_ns=2.0, cells=10,
        sources=(SourceFile(name=file, content=source),))


def _result(points: list[AreaTimePoint]) -> AreaTimeResult:
    return AreaTimeResult(task="rv_accum", freq_mhz=250.0, period_ns=4.0, workload=Workload(),
                          check=SMALL, liberty="generic", candidates=tuple(points))


def test_report_says_which_to_build_and_shows_each_source() -> None:
    # fast: 9 cycles (36 ns), 300 um2; slow: 14 cycles (56 ns), 100 um2; both on the front
    result = _result([
        _point("fast", "front", 9, 300.0, "module rv_accum; // fast one\nendmodule\n"),
        _point("slow", "front", 14, 100.0, "module rv_accum; // slow one\nendmodule\n"),
        _point("big", "dominated", 14, 350.0, "module rv_accum; // big\nendmodule\n"),
        _point("wrong", "fails_b_star", 9, 90.0, "module rv_accum; // wrong\nendmodule\n")])
    page = render_report(result)
    takeaway = page[page.index('<div class="takeaway">'):]
    takeaway = re.sub(r"<[^>]+>", "", takeaway[:takeaway.index("</div>")])
    # 1 - 100/300 = 67 % less area; 56/36 = 1.6x the time
    assert "Fastest: fast (τ_W 36.0 ns, 300.0 µm²)" in takeaway
    assert "Smallest: slow (100.0 µm², 67% less area for 1.6× the workload time)" in takeaway
    assert "Not eligible: wrong (fails B*)" in takeaway and "Dominated: big." in takeaway
    # every candidate's source, collapsed, reached from its file name in the table
    blocks = re.findall(r'<details class="src" id="src-(\d)"><summary>(.*?)</summary>', page)
    assert [(n, re.sub(r"<[^>]+>", "", s)) for n, s in blocks] == [
        ("1", "fast · fast.v · front"), ("2", "slow · slow.v · front"),
        ("3", "big · big.v · dominated"), ("4", "wrong · wrong.v · fails_b_star")]
    assert '<a href="#src-2">slow.v</a>' in page and "// slow one" in page


def test_a_single_front_point_is_the_one_to_build() -> None:
    page = render_report(_result([_point("only", "front", 9, 300.0, "module m; endmodule")]))
    assert "<b>Build only</b>: the only architecture on the front" in page


def test_report_sources_and_names_with_markup_render_inert() -> None:
    """Attack: a candidate's name (free text; file names are checked plain) and its source
    carry markup; all of it is text, in the takeaway, the table and the source blocks."""
    bad = _point(f"x{PAYLOAD}", "front", 9, 300.0, f"module m; // {PAYLOAD}\nendmodule\n",
                 file="x.v")
    page = render_report(_result([bad, _point(f"y{PAYLOAD}", "fails_b_star", 9, 1.0, PAYLOAD,
                                              file="y.v")]))
    assert "<script" not in page and "<img" not in page
    assert page.count("<details") == page.count("</details>") == 2
    # each name in the takeaway, the plot, the table and the summary; each source once
    assert page.count("&lt;/code&gt;&lt;/pre&gt;&lt;/details&gt;&lt;script&gt;") >= 8
    assert "onerror=alert(2)&gt;" in page and " onerror=" not in page.replace(
        "onerror=alert(2)&gt;", "")


def test_cli_json_leaves_the_sources_to_area_time_json(tmp_path: Path) -> None:
    result = _result([_point("only", "front", 9, 300.0, "module m; endmodule")])
    from rtlforge.behave.areatime import write_report

    write_report(result, tmp_path)
    stored = json.loads((tmp_path / "area_time.json").read_text())
    assert stored["candidates"][0]["sources"] == [
        {"name": "only.v", "content": "module m; endmodule"}]
    assert AreaTimeResult.model_validate(stored) == result  # re-renders from the file
