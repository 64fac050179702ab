"""The eval report: HTML/SVG well-formedness, escaping, summary.json, RTLLM LLM-output loading."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import pytest
from click.testing import CliRunner

from rtlforge.cli import cli
from rtlforge.core.models import SourceFile, Task
from rtlforge.evaluation.evaluate import (
    DetailedEval,
    EvalResult,
    PPAMeasure,
    SampleDetail,
    _assign_hvc,
    sample_labels,
)
from rtlforge.evaluation.metrics import load_records
from rtlforge.evaluation.report import render_html, scatter_svg, summarise, write_report
from rtlforge.tasks.rtllm import load_llm_outputs, match_design

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared"
RTLLM = SHARED / "benchmarks" / "rtllm"
SVG_NS = "{http://www.w3.org/2000/svg}"
PAYLOAD = '</script><script>alert(1)</script><img src=x onerror=alert(2)>"\'&\x1b[31m'

needs_shared = pytest.mark.skipif(
    not RTLLM.is_dir(),
    reason=f"RTLLM data not found at {RTLLM} (../shared is only present in the development "
    "workspace and CI)")


# --------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------


class _Collector(HTMLParser):
    """Counts start tags and keeps every script body and attribute (to look for injection)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.attrs: list[tuple[str, str | None]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attrs += attrs

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _parse(text: str) -> _Collector:
    parser = _Collector()
    parser.feed(text)
    parser.close()
    return parser


def _svgs(text: str) -> list[ET.Element]:
    """The PPA scatter plots (the report also has rHV/win-rate line plots and legend icons)."""
    svgs = [ET.fromstring(m) for m in re.findall(r"<svg\b.*?</svg>", text, re.S)]
    return [s for s in svgs if " versus " in (s.get("aria-label") or "")]


def _circles(svg: ET.Element) -> list[ET.Element]:
    return [c for c in svg.iter(f"{SVG_NS}circle") if "pt" in c.get("class", "").split()]


def _detail(index: int, task: str, method: str, *, trial: int = 1, iteration: int = 1,
            verdict: str = "pass", ppa: tuple[float, float, float] | None = (1.0, 1.0, 1.0),
            golden: tuple[float, float, float] = (2.0, 2.0, 2.0), **kw: object) -> SampleDetail:
    measure = None
    vec = None
    if ppa is not None and verdict == "pass":
        measure = PPAMeasure(power=ppa[0], delay=ppa[1], area=ppa[2], cells=3)
        vec = tuple(g / p for g, p in zip(golden, ppa, strict=True))
    return SampleDetail(index=index, task_id=task, method=method, trial=trial,
                        iteration=iteration, verdict=verdict, ppa=measure,
                        objectives=vec, **kw)  # type: ignore[arg-type]


def _evaluation(details: list[SampleDetail], golden: dict[str, PPAMeasure]) -> DetailedEval:
    result = EvalResult(samples=(), tasks={}, pass_at_k={}, verdicts={})
    return DetailedEval(result=result, details=tuple(_assign_hvc(details, "moocore")),
                        golden=golden)


GOLD = PPAMeasure(power=2.0, delay=2.0, area=2.0, cells=4)


# --------------------------------------------------------------------------------------------
# SVG / HTML structure
# --------------------------------------------------------------------------------------------


def test_scatter_svg_is_xml_with_one_circle_per_point_and_the_front_marked() -> None:
    pts = [(1.0, 4.0, "a", "p1"), (2.0, 2.0, "a", "p2"), (4.0, 1.0, "b", "p3"),
           (3.0, 3.0, "b", "dominated"), (3.0, 3.0, "b", "duplicate")]
    svg = ET.fromstring(scatter_svg(pts, {"a": "#f00", "b": "#00f"}, xlabel="power (mW)",
                                    ylabel="delay (ns)", golden=(2.5, 2.5)))
    circles = _circles(svg)
    assert len(circles) == 5
    front = [c for c in circles if "front" in c.get("class", "")]
    assert sorted(c.find(f"{SVG_NS}title").text for c in front) == ["p1", "p2", "p3"]  # type: ignore[union-attr]
    assert len([p for p in svg.iter(f"{SVG_NS}path") if p.get("class") == "golden"]) == 1


def test_scatter_svg_degenerate_inputs_stay_well_formed() -> None:
    for pts in ([], [(1.0, 1.0, "m", "only")], [(2.0, 5.0, "m", "a"), (2.0, 5.0, "m", "b")]):
        svg = ET.fromstring(scatter_svg(pts, {}, xlabel="x", ylabel="y"))
        assert len(_circles(svg)) == len(pts)


def test_report_html_parses_and_every_svg_has_the_expected_points() -> None:
    details = [
        _detail(0, "t1", "m1", ppa=(1.0, 2.0, 3.0)),
        _detail(1, "t1", "m2", ppa=(2.0, 1.0, 3.0)),
        _detail(2, "t1", "m2", verdict="fail", ppa=None, message="mismatch"),
        _detail(3, "t2", "m1", ppa=(1.0, 1.0, 1.0)),
        _detail(4, "t3", "m1", verdict="error", ppa=None),
    ]
    evaluation = _evaluation(details, {"t1": GOLD, "t2": GOLD, "t3": GOLD})
    summary = summarise(evaluation)
    text = render_html(summary, evaluation.details, evaluation.golden)
    parsed = _parse(text)
    assert "script" not in parsed.tags
    svgs = _svgs(text)
    # three objective pairs for t1 (2 points each) and t2 (1 point); t3 has nothing measured
    assert [len(_circles(s)) for s in svgs] == [2, 2, 2, 1, 1, 1]
    assert summary["methods"]["m2"]["passed"] == 1
    assert set(summary["metrics"]["methods"]) == {"m1", "m2"}


def test_hvc_scores_siblings_against_earlier_iterations_only() -> None:
    details = [
        _detail(0, "t", "m", iteration=1, ppa=(1.0, 1.0, 1.0)),  # objectives (2, 2, 2)
        _detail(1, "t", "m", iteration=1, ppa=(1.0, 1.0, 1.0)),  # sibling duplicate
        _detail(2, "t", "m", iteration=2, ppa=(1.0, 1.0, 1.0)),  # dominated by history
        _detail(3, "t", "m", iteration=2, ppa=(0.5, 1.0, 1.0)),  # (4, 2, 2): adds 8
        _detail(4, "t", "m", iteration=2, verdict="fail", ppa=None),
        _detail(5, "t", "m", trial=2, ppa=(1.0, 1.0, 1.0)),  # another run: own history
    ]
    scored = {d.index: d.hvc for d in _assign_hvc(details, "moocore")}
    assert scored == {0: pytest.approx(8.0), 1: pytest.approx(8.0), 2: 0.0,
                      3: pytest.approx(8.0), 4: None, 5: pytest.approx(8.0)}


def test_sample_labels_defaults_and_rejects_bad_types() -> None:
    assert sample_labels({}, "jsonl") == ("jsonl", 1, 1)
    assert sample_labels({"method": "x", "trial": 3, "iteration": 2}, "d") == ("x", 3, 2)
    from rtlforge.core.errors import TaskFormatError

    for bad in ({"trial": "1"}, {"iteration": True}, {"method": ""}):
        with pytest.raises(TaskFormatError):
            sample_labels(bad, "d")


# --------------------------------------------------------------------------------------------
# escaping of untrusted strings
# --------------------------------------------------------------------------------------------


def test_untrusted_strings_are_escaped_everywhere(tmp_path: Path) -> None:
    task = f"t{PAYLOAD}"
    method = f"m{PAYLOAD}"
    details = [
        _detail(0, task, method, source=PAYLOAD, ppa=(1.0, 1.0, 1.0)),
        _detail(1, task, method, verdict="fail", ppa=None, message=PAYLOAD, source=PAYLOAD),
    ]
    evaluation = _evaluation(details, {task: PPAMeasure(error=PAYLOAD)})
    summary = summarise(evaluation, extra={
        "unmatched_files": [{"method": method, "path": PAYLOAD, "reason": PAYLOAD}],
        "run": {"sources": [PAYLOAD]},
    })
    paths = write_report(tmp_path, evaluation, summary, title=PAYLOAD)
    text = paths["report.html"].read_text()
    parsed = _parse(text)
    assert "script" not in parsed.tags and "img" not in parsed.tags
    assert "</script>" not in text and "<img" not in text and "\x1b" not in text
    assert not any(name.startswith("on") for name, _ in parsed.attrs)
    assert any("</script><script>alert(1)" in chunk for chunk in parsed.text)  # shown as text
    for svg in _svgs(text):
        assert len(_circles(svg)) == 1
    json.loads(paths["summary.json"].read_text())  # still valid JSON


# --------------------------------------------------------------------------------------------
# the LLM-output loader
# --------------------------------------------------------------------------------------------


def _task(tid: str, top: str | None = None) -> Task:
    return Task(id=tid, spec="s", top=top or tid,
                golden=(SourceFile(name="g.v", content=f"module {top or tid}; endmodule"),))


def test_loader_matches_by_name_module_and_spelling(tmp_path: Path) -> None:
    tasks = {t.id: t for t in (_task("calendar"), _task("adder_8bit"),
                               _task("fixed_point_substractor", "fixed_point_subtractor"))}
    assert match_design("adder_8bit", "", tasks) == ("adder_8bit", "name")
    assert match_design("calender", "module calendar(input a); endmodule", tasks) == (
        "calendar", "module")
    assert match_design("calender", "module other; endmodule", tasks) == ("calendar", "spelling")
    assert match_design("fp_sub", "module fixed_point_subtractor; endmodule", tasks)[1] == "module"
    assert match_design("nothing", "module zzz; endmodule", tasks)[0] is None
    for trial in (1, 2):
        folder = tmp_path / "_gpt" / f"t{trial}"
        folder.mkdir(parents=True)
        (folder / "adder_8bit.v").write_text("module adder_8bit; endmodule")
        (folder / "calender.v").write_text("// module x\nmodule calendar; endmodule")
        (folder / "mystery.v").write_text("module mystery; endmodule")
    (tmp_path / "_gpt" / "t1" / "notes.txt").write_text("ignored")
    out = load_llm_outputs(tmp_path / "_gpt", tasks)
    assert out.method == "gpt" and out.per_trial == {1: 2, 2: 2}
    assert [f.path for f in out.unmatched] == ["t1/mystery.v", "t2/mystery.v"]
    assert [f.path for f in out.aliased] == ["t1/calender.v", "t2/calender.v"]
    assert {(s.task_id, s.extra["trial"], s.extra["iteration"]) for s in out.samples} == {
        ("adder_8bit", 1, 1), ("calendar", 1, 1), ("adder_8bit", 2, 1), ("calendar", 2, 1)}


@pytest.mark.shared
@needs_shared
@pytest.mark.parametrize("method", ["_chatgpt35", "_chatgpt4"])
def test_loader_on_rtllm_chatgpt_outputs(method: str) -> None:
    from rtlforge.tasks.rtllm import load_rtllm

    out = load_llm_outputs(RTLLM / method, load_rtllm(RTLLM))
    assert out.per_trial == {n: 29 for n in range(1, 6)}
    assert out.unmatched == ()
    assert len({s.task_id for s in out.samples}) == 29
    expected_alias = ["t1/calender.v", "t2/calender.v", "t3/calender.v", "t4/calender.v",
                      "t5/calender.v"] if method == "_chatgpt35" else []
    assert [f.path for f in out.aliased] == expected_alias
    assert all(f.task_id == "calendar" for f in out.aliased)


# --------------------------------------------------------------------------------------------
# the CLI on the bundled suite
# --------------------------------------------------------------------------------------------


def _invoke(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return res.exit_code, res.output


def test_eval_method_option_usage_errors(tmp_path: Path) -> None:
    tasks = str(ROOT / "examples" / "tasks")
    code, out = _invoke("eval", "--tasks", tasks)
    assert code == 2 and "SAMPLES" in out
    code, out = _invoke("eval", "--tasks", tasks, "--method", f"a={tmp_path / 'missing'}",
                        "--report", str(tmp_path / "r"))
    assert code == 2 and "not a directory" in out
    code, out = _invoke("eval", "--tasks", tasks, "--samples-dir", str(tmp_path),
                        "--method", "a", "--method", "b", "--report", str(tmp_path / "r"))
    assert code == 2 and "one name per folder" in out


@pytest.mark.tools
def test_eval_report_on_bundled_suite_with_ppa(tmp_path: Path) -> None:
    from rtlforge.core.plugins import PluginHost

    if "yosys-sta" not in PluginHost().names("ppa_estimator"):
        pytest.skip("the yosys-sta PPA estimator is not registered (pip install -e . refreshes "
                    "the entry points)")
    samples = ROOT / "examples" / "samples" / "suite-samples.jsonl"
    report = tmp_path / "report"
    code, text = _invoke("eval", str(samples), "--tasks", str(ROOT / "examples" / "tasks"),
                         "--out", str(tmp_path / "results.jsonl"), "--json", "-k", "1",
                         "--ppa", "--ast", "--report", str(report))
    assert code == 0, text
    printed = json.loads(text.strip().splitlines()[-1])
    summary = json.loads((report / "summary.json").read_text())
    assert printed == summary
    lines = [json.loads(x) for x in samples.read_text().splitlines() if x.strip()]
    passing = sum(x["expect"] == "pass" for x in lines)
    method = summary["methods"]["suite-samples"]
    assert method["samples"] == len(lines) and method["passed"] == passing
    assert method["measured"] == passing  # every passing circuit of the suite synthesises
    assert all(g["error"] is None and g["area"] > 0 for g in summary["golden_ppa"].values())
    assert len(summary["golden_ppa"]) == summary["tasks"] == 16
    m = summary["metrics"]["methods"]["suite-samples"]
    assert m["rhv"]["1"] == pytest.approx(1.0) and m["win_rate"]["1"] == pytest.approx(1.0)
    assert 1.0 <= m["diversity"] <= 2.0
    assert summary["ast_similarity"]["scored"] > 0
    records = load_records(report / "records.jsonl")  # strict schema of the metrics module
    assert len(records) == len(lines) and sum(r.passed for r in records) == passing
    results = [json.loads(x) for x in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert sum(r["hvc"] is not None for r in results) == passing
    html_text = (report / "report.html").read_text()
    _parse(html_text)
    svgs = _svgs(html_text)
    assert len(svgs) == 3 * len({r.task for r in records if r.passed})
    assert sum(len(_circles(s)) for s in svgs) == 3 * passing


@pytest.mark.tools
def test_report_renders_in_headless_chromium(tmp_path: Path) -> None:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        pytest.skip("chromium is not installed (scripts/install-tools.sh installs it)")
    details = [_detail(i, f"t{i % 3}", f"m{i % 2}", ppa=(1.0 + i, 2.0 + i % 4, 3.0 + i % 5))
               for i in range(12)]
    evaluation = _evaluation(details, {f"t{i}": GOLD for i in range(3)})
    page = write_report(tmp_path, evaluation, summarise(evaluation))["report.html"]
    shot = tmp_path / "report.png"
    proc = subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         "--window-size=1280,2000", f"--screenshot={shot}", page.as_uri()],
        capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000
