"""What an engineer reads in report.html: circuits, rHV/win-rate plots, legends, the golden's
marker, axis ranges, environment, CI warnings, escaping of circuit sources, the circuit cap."""

from __future__ import annotations

import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import pytest

from rtlforge.core.models import PPAResult, StageResult, ToolInfo, ValidationReport, Verdict
from rtlforge.evaluation.evaluate import (
    DetailedEval,
    EvalResult,
    PPAMeasure,
    SampleDetail,
    SampleResult,
    _assign_hvc,
)
from rtlforge.evaluation.report import (
    MAX_CIRCUITS_PER_TASK,
    MIN_CI_CELLS,
    environment,
    render_html,
    scatter_svg,
    summarise,
    write_report,
)

SVG = "{http://www.w3.org/2000/svg}"
ATTACK = ("module t; endmodule\n// </details><script>alert(1)</script></pre>"
          "<img src=x onerror=alert(2)>")
GOLD = PPAMeasure(power=2.0, delay=2.0, area=2.0, cells=4)


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.starts: list[str] = []
        self.ends: list[str] = []
        self.attrs: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.starts.append(tag)
        self.attrs += [name for name, _ in attrs]

    def handle_endtag(self, tag: str) -> None:
        self.ends.append(tag)

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _tags(text: str) -> _Tags:
    parser = _Tags()
    parser.feed(text)
    parser.close()
    return parser


def _svgs(text: str) -> list[ET.Element]:
    return [ET.fromstring(m) for m in re.findall(r"<svg\b.*?</svg>", text, re.S)]


def _detail(index: int, task: str, method: str, *, iteration: int = 1, verdict: str = "pass",
            ppa: tuple[float, float, float] | None = (1.0, 1.0, 1.0), code: str | None = None,
            trial: int = 1) -> SampleDetail:
    measure = vec = None
    if ppa is not None and verdict == "pass":
        measure = PPAMeasure(power=ppa[0], delay=ppa[1], area=ppa[2], cells=3)
        vec = tuple(2.0 / p for p in ppa)
    return SampleDetail(index=index, task_id=task, method=method, trial=trial,
                        iteration=iteration, verdict=verdict, ppa=measure, objectives=vec,
                        code=code if code is not None else f"module {task}_{index}; endmodule",
                        message=None if verdict == "pass" else "mismatch at t=5")


def _evaluation(details: list[SampleDetail], golden: dict[str, PPAMeasure] | None = None,
                samples: tuple[SampleResult, ...] = ()) -> DetailedEval:
    result = EvalResult(samples=samples, tasks={}, pass_at_k={}, verdicts={})
    golden = golden if golden is not None else {d.task_id: GOLD for d in details}
    return DetailedEval(result=result, details=tuple(_assign_hvc(details, "moocore")),
                        golden=golden)


def _render(details: list[SampleDetail], **kw: object) -> str:
    evaluation = _evaluation(details)
    return render_html(summarise(evaluation), evaluation.details, evaluation.golden,
                       **kw)  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------
# circuits
# --------------------------------------------------------------------------------------------


def test_every_circuit_is_shown_collapsed_with_its_verdict_and_ppa() -> None:
    details = [_detail(0, "t", "a", ppa=(1.5, 1.0, 1.0)), _detail(1, "t", "b", verdict="fail")]
    text = _render(details)
    blocks = re.findall(r'<details class="circuit"><summary>(.*?)</summary>(.*?)</details>',
                        text, re.S)
    assert len(blocks) == 2
    (head_a, body_a), (head_b, body_b) = blocks
    assert "a · trial 1 · iteration 1" in head_a and ">pass<" in head_a
    assert "power 1.5 mW" in head_a and "HVC" in head_a
    assert "module t_0; endmodule" in body_a
    assert ">fail<" in head_b and "no PPA" in head_b and "mismatch at t=5" in body_b


def test_a_circuit_source_with_markup_renders_inert() -> None:
    text = _render([_detail(0, "t", "m", code=ATTACK), _detail(1, "t", "m", code=ATTACK,
                                                               verdict="fail")])
    parsed = _tags(text)
    assert "script" not in parsed.starts and "img" not in parsed.starts
    assert not any(name.startswith("on") for name in parsed.attrs)
    # the payload's </details> did not close anything: one open and one close per circuit
    assert parsed.starts.count("details") == parsed.ends.count("details") == 2
    assert sum("</details><script>alert(1)</script>" in t for t in parsed.text) == 2


def test_circuits_per_task_are_capped_fairly_and_the_cap_is_said() -> None:
    many = MAX_CIRCUITS_PER_TASK + 10
    details = [_detail(i, "t", "a" if i < many - 3 else "b", iteration=i + 1)
               for i in range(many)]
    text = _render(details)
    assert text.count('<details class="circuit">') == MAX_CIRCUITS_PER_TASK
    assert f"Showing {MAX_CIRCUITS_PER_TASK} of {many} circuits" in text
    heads = re.findall(r'<details class="circuit"><summary>(\w+) ·', text)
    assert heads.count("b") == 3  # the small method is not crowded out by the big one


# --------------------------------------------------------------------------------------------
# plots
# --------------------------------------------------------------------------------------------


def _golden_paths(svg: ET.Element) -> list[ET.Element]:
    return [p for p in svg.iter(f"{SVG}path")
            if "golden" in (p.get("class") or "").split() and p.find(f"{SVG}title") is not None]


def _diamond_centre(path: ET.Element) -> tuple[float, float]:
    nums = [float(v) for v in re.findall(r"-?\d+\.?\d*", path.get("d") or "")]
    return nums[0], (nums[1] + nums[5]) / 2


def test_every_scatter_has_a_legend_lower_is_better_and_the_golden_drawn_last() -> None:
    pts = [(2.0, 2.0, "a", "same as golden"), (2.0, 2.0, "b", "also"), (3.0, 1.0, "a", "x")]
    svg_text = scatter_svg(pts, {"a": "#f00", "b": "#00f"}, xlabel="power (mW)",
                           ylabel="delay (ns)", golden=(2.0, 2.0))
    svg = ET.fromstring(svg_text)
    assert "lower is better" in svg_text
    legend = "".join(svg.find(f".//{SVG}g[@class='legend']").itertext())  # type: ignore[union-attr]
    assert "a" in legend and "b" in legend and "golden" in legend and "front" in legend
    # the golden follows every circle, so equal circuits cannot cover it
    order = [el for el in svg.iter() if el.tag in (f"{SVG}circle", f"{SVG}path")
             and (el.get("class") or "").split()[:1] in (["pt"], ["golden"])
             and el.find(f"{SVG}title") is not None]
    assert "golden" in (order[-1].get("class") or "")
    # the legend's golden marker is the plot's (same style, same diamond shape)
    marker = next(p for p in svg.iter(f"{SVG}path") if p.get("class") == "lg-golden")
    assert marker.get("d", "").count("L") == 3 and marker.get("d", "").endswith("Z")


def test_a_far_golden_is_pinned_to_the_edge_and_the_circuits_keep_the_frame() -> None:
    pts = [(1.0 + i * 0.01, 5.0 - i * 0.01, "a", f"p{i}") for i in range(5)]
    near = ET.fromstring(scatter_svg(pts, {}, xlabel="x", ylabel="y", golden=(1.02, 5.05)))
    assert [p.get("class") for p in _golden_paths(near)] == ["golden"]
    far = ET.fromstring(scatter_svg(pts, {}, xlabel="x", ylabel="y", golden=(100.0, 500.0)))
    (gold,) = _golden_paths(far)
    assert gold.get("class") == "golden off"
    frame = far.find(f"{SVG}rect")
    assert frame is not None
    x0, y0 = float(frame.get("x", 0)), float(frame.get("y", 0))
    w = float(frame.get("width", 0))
    gx, gy = _diamond_centre(gold)
    assert (gx, gy) == (pytest.approx(x0 + w), pytest.approx(y0))  # top right corner
    assert "golden off scale (100, 500)" in "".join(far.itertext())
    cx = [float(c.get("cx", 0)) for c in far.iter(f"{SVG}circle") if c.get("class", "")
          .startswith("pt")]
    assert max(cx) - min(cx) > 0.7 * w  # the circuits are spread, not squeezed in a corner


def test_rhv_and_win_rate_against_iteration_are_plotted_per_method() -> None:
    details = [_detail(0, "t", "a", iteration=1, ppa=(2.0, 2.0, 2.0)),
               _detail(1, "t", "a", iteration=2, ppa=(1.0, 1.0, 1.0)),
               _detail(2, "t", "b", iteration=1, ppa=(1.0, 1.0, 1.0)),
               _detail(3, "t", "b", iteration=2, ppa=(1.0, 1.0, 1.0))]
    evaluation = _evaluation(details)
    summary = summarise(evaluation)
    text = render_html(summary, evaluation.details, evaluation.golden)
    lines = [s for s in _svgs(text) if "against iteration" in (s.get("aria-label") or "")]
    assert [s.get("aria-label") for s in lines] == ["rHV against iteration",
                                                    "win rate against iteration"]
    rhv = lines[0]
    assert "higher is better" in "".join(rhv.itertext())
    points = {}
    for title in rhv.iter(f"{SVG}title"):
        method, rest = (title.text or "").split(" @")
        iteration, value = rest.split(": ")
        points[(method, int(iteration))] = float(value)
    # one point per method and iteration, the metrics' own numbers; a is behind b's front at
    # iteration 1 (its golden-equal circuit adds nothing) and reaches it at iteration 2
    assert set(points) == {("a", 1), ("a", 2), ("b", 1), ("b", 2)}
    rhv_values = summary["metrics"]["methods"]
    for (method, iteration), value in points.items():
        assert value == pytest.approx(rhv_values[method]["rhv"][str(iteration)], rel=1e-3,
                                      abs=1e-9)
    assert points[("a", 1)] < 0.01 and points[("a", 2)] == points[("b", 1)] == 1.0
    legend = "".join(rhv.find(f".//{SVG}g[@class='legend']").itertext())  # type: ignore[union-attr]
    assert "a" in legend and "b" in legend


# --------------------------------------------------------------------------------------------
# environment and CI warnings
# --------------------------------------------------------------------------------------------


def test_environment_names_liberty_clock_tools_and_the_time() -> None:
    measured = PPAMeasure(ppa=PPAResult(
        power=1.0, delay=1.0, area=1.0, cells=2, liberty="sky130_fd_sc_hd__tt",
        tools=(ToolInfo(name="yosys", version="Yosys 0.9"), ToolInfo(name="sta", version="2.5")),
        details={"period_ns": 5.0, "estimator": "yosys-sta"}))
    report = ValidationReport(verdict=Verdict.PASS, stages=(StageResult(
        name="sim", verdict=Verdict.PASS, tools=(ToolInfo(name="iverilog", version="12.0"),)),))
    detail = SampleDetail(index=0, task_id="t", method="m", trial=1, iteration=1,
                          verdict="pass", ppa=measured, objectives=(1.0, 1.0, 1.0))
    evaluation = _evaluation([detail], {"t": measured},
                             samples=(SampleResult(index=0, task_id="t", report=report),))
    env = environment(evaluation)
    assert env == {"estimator": "yosys-sta", "liberty": "sky130_fd_sc_hd__tt",
                   "clock_period_ns": [5.0],
                   "tools": {"iverilog": "12.0", "sta": "2.5", "yosys": "Yosys 0.9"}}
    summary = summarise(evaluation)
    assert summary["environment"] == env
    text = render_html(summary, evaluation.details, evaluation.golden,
                       generated="2025-01-02T03:04:05+00:00")
    section = text[text.index("<h2>Environment</h2>"):text.index("<h2>Methods</h2>")]
    for shown in ("sky130_fd_sc_hd__tt", "clock period (ns)</td><td>5<", "iverilog 12.0",
                  "yosys Yosys 0.9", "sta 2.5", "2025-01-02T03:04:05+00:00"):
        assert shown in section


def _with_comparison(cells: int) -> str:
    details = [_detail(0, "t", "a"), _detail(1, "t", "b")]
    evaluation = _evaluation(details)
    summary = summarise(evaluation)
    summary["metrics"]["cells"] = cells
    summary["metrics"]["comparisons"] = [{"method": "a", "versus": "b", "rhv_diff": 0.1,
                                          "ci95": [-0.2, 0.4]}]
    return render_html(summary, evaluation.details, evaluation.golden)


def test_a_ci_on_too_few_cells_is_flagged() -> None:
    few = _with_comparison(MIN_CI_CELLS - 1)
    assert f"rest on {MIN_CI_CELLS - 1} (task, trial) cells" in few
    enough = _with_comparison(MIN_CI_CELLS)
    assert "(task, trial) cells, fewer than" not in enough and "⚠" not in enough


# --------------------------------------------------------------------------------------------
# in a browser
# --------------------------------------------------------------------------------------------


@pytest.mark.tools
def test_report_with_circuits_renders_in_headless_chromium(tmp_path: Path) -> None:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        pytest.skip("chromium is not installed (scripts/install-tools.sh installs it)")
    details = [_detail(i, f"t{i % 2}", f"m{i % 3}", iteration=1 + i // 6,
                       ppa=(1.0 + i % 5, 2.0 + i % 4, 3.0 + i % 7),
                       code=ATTACK if i == 0 else None) for i in range(18)]
    golden = {"t0": GOLD, "t1": PPAMeasure(power=90.0, delay=80.0, area=70.0, cells=9)}
    evaluation = _evaluation(details, golden)
    page = write_report(tmp_path, evaluation, summarise(evaluation))["report.html"]
    text = page.read_text()
    assert "<script" not in text and "https://" not in text and "http://www.w3.org" in text
    shot = tmp_path / "report.png"
    proc = subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         "--window-size=1400,2000", f"--screenshot={shot}", page.as_uri()],
        capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000
