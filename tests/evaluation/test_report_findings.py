"""What a task's section says at a glance: identical measurements grouped and counted, the note
when synthesis maps different RTL to the same metrics, axes that keep small differences small,
and the best design with why. Expected values are worked out by hand from the inputs."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

import pytest

from rtlforge.evaluation.evaluate import (
    DetailedEval,
    EvalResult,
    PPAMeasure,
    SampleDetail,
    _assign_hvc,
)
from rtlforge.evaluation.findings import find, normalised_source
from rtlforge.evaluation.report import MIN_AXIS_SPAN, render_html, scatter_svg, summarise

SVG = "{http://www.w3.org/2000/svg}"
GOLD = PPAMeasure(power=2.0, delay=2.0, area=2.0, cells=4)
PAYLOAD = '</p></div><script>alert(1)</script><img src=x onerror=alert(2)>"\'&'

PLUS = "module t(input [7:0] a, b, output [8:0] s);\n  assign s = a + b;\nendmodule\n"
# the same design, commented and spaced differently
PLUS_AGAIN = ("// behavioural\nmodule t(input [7:0] a, b, output [8:0] s);\n"
              "    assign s = a + b;   /* synthesis picks */\nendmodule")
RIPPLE = "module t(input [7:0] a, b, output [8:0] s);\n  ripple r(a, b, s);\nendmodule\n"
CLA = "module t(input [7:0] a, b, output [8:0] s);\n  cla c(a, b, s);\nendmodule\n"


def _detail(index: int, method: str, ppa: tuple[float, float, float] | None, code: str, *,
            task: str = "t", iteration: int = 1, verdict: str = "pass") -> SampleDetail:
    measure = PPAMeasure(power=ppa[0], delay=ppa[1], area=ppa[2], cells=3) if ppa else None
    return SampleDetail(index=index, task_id=task, method=method, trial=1,
                        iteration=iteration, verdict=verdict, ppa=measure, code=code,
                        objectives=tuple(2.0 / v for v in ppa) if ppa else None,
                        message=None if verdict == "pass" else "mismatch")


def _render(details: list[SampleDetail], golden: PPAMeasure | None = GOLD) -> str:
    result = EvalResult(samples=(), tasks={}, pass_at_k={}, verdicts={})
    evaluation = DetailedEval(result=result, details=tuple(_assign_hvc(details, "moocore")),
                              golden={"t": golden} if golden is not None else {})
    return render_html(summarise(evaluation), evaluation.details, evaluation.golden)


def _add8_like() -> list[SampleDetail]:
    """Six circuits measuring the golden's PPA (the +, ripple and CLA adders of add8_carry, the
    + one three times, once commented), one faster and larger, one failing."""
    same = (2.0, 2.0, 2.0)
    return [_detail(0, "pareto", same, PLUS, iteration=1),
            _detail(1, "pareto", same, RIPPLE, iteration=2),
            _detail(2, "pareto", same, CLA, iteration=3),
            _detail(3, "pareto", (2.2, 1.8, 2.4), "module t; fast f(); endmodule", iteration=4),
            _detail(4, "spec", same, PLUS, iteration=1),
            _detail(5, "spec", same, PLUS_AGAIN, iteration=2),
            _detail(6, "spec", same, PLUS, iteration=3),
            _detail(7, "spec", None, "module t; endmodule", iteration=4, verdict="fail")]


# --------------------------------------------------------------------------------------------
# the findings, from the data
# --------------------------------------------------------------------------------------------


def test_identical_measurements_are_grouped_and_their_distinct_sources_counted() -> None:
    findings = find(_add8_like(), GOLD)
    assert findings.measured == 7  # the failing circuit has no PPA
    assert [len(g.members) for g in findings.groups] == [6, 1]
    shared, fast = findings.groups
    # +, ripple, CLA: three designs; the commented + is the + again
    assert shared.sources == 3 and shared.collapsed and shared.golden_equal
    assert not fast.collapsed and not fast.golden_equal
    assert findings.collapsed == (shared,)
    # the shared point has the least power and area, the fast one the least delay: both front
    assert findings.front == (shared, fast)
    assert findings.spread == pytest.approx({"power": 0.1, "delay": 2.0 / 1.8 - 1, "area": 0.2})


def test_comments_and_whitespace_do_not_make_another_design() -> None:
    assert normalised_source(PLUS) == normalised_source(PLUS_AGAIN) != normalised_source(RIPPLE)
    assert normalised_source("// only a comment\n") is None and normalised_source(None) is None


def test_the_best_design_is_the_front_point_closest_to_the_golden_in_geometric_mean() -> None:
    # golden (2, 2, 2); a = (1, 3, 2): (0.5 * 1.5 * 1) ** (1/3) = 0.9086
    #                   b = (2, 1, 2): (1 * 0.5 * 1) ** (1/3) = 0.7937, the best
    details = [_detail(0, "a", (1.0, 3.0, 2.0), "module t; a x(); endmodule"),
               _detail(1, "b", (2.0, 1.0, 2.0), "module t; b x(); endmodule"),
               _detail(2, "c", (3.0, 3.0, 3.0), "module t; c x(); endmodule")]
    best = find(details, GOLD).best
    assert best is not None and best.group.members[0].method == "b"
    assert best.score == pytest.approx(0.5 ** (1 / 3)) and best.against == "golden"
    assert not best.dominates_all and best.lowest == ("delay", "area")  # area tied with a
    text = _render(details)
    callout = re.search(r'<div class="callout">(.*?)</div>', text, re.S)
    assert callout is not None
    body = callout.group(1)
    assert "Best design: b · trial 1 · iteration 1" in body
    assert "delay <span class=\"better-v\">−50.0 %</span>" in body  # 1 against the golden's 2
    assert "dominates the golden" in body and "0.794×" in body
    # what a trades against b: half the power, three times the delay, the same area
    assert re.search(r"<li>a · trial 1 · iteration 1: power <span class=\"better-v\">−50.0 %"
                     r"</span>, delay <span class=\"worse-v\">\+200.0 %</span>, area ±0 %</li>",
                     body)


def test_a_design_that_dominates_all_others_says_so() -> None:
    details = [_detail(0, "a", (1.0, 1.0, 1.0), "module t; a x(); endmodule"),
               _detail(1, "a", (1.5, 1.0, 1.2), "module t; b x(); endmodule", iteration=2)]
    text = _render(details)
    assert "it dominates every other passing design" in text
    assert "What the rest of the front trades" not in text


# --------------------------------------------------------------------------------------------
# the synthesis-collapse note: exactly when distinct sources share a measurement
# --------------------------------------------------------------------------------------------


NOTE = "Synthesis mapped"


@pytest.mark.parametrize(("codes", "ppas", "expected"), [
    # distinct designs, one measurement: the note, naming how many designs
    ((PLUS, RIPPLE, CLA), [(1.0, 1.0, 1.0)] * 3, "Synthesis mapped 3 different designs"),
    # the same design three times (once only commented differently): no note
    ((PLUS, PLUS_AGAIN, PLUS), [(1.0, 1.0, 1.0)] * 3, None),
    # distinct designs, distinct measurements: no note
    ((PLUS, RIPPLE, CLA), [(1.0, 1.0, 1.0), (1.0, 1.1, 1.0), (1.2, 1.0, 1.0)], None),
])
def test_the_collapse_note_appears_exactly_when_distinct_sources_share_ppa(
        codes: tuple[str, ...], ppas: list[tuple[float, float, float]],
        expected: str | None) -> None:
    details = [_detail(i, "m", ppa, code, iteration=i + 1)
               for i, (code, ppa) in enumerate(zip(codes, ppas, strict=True))]
    text = _render(details)
    if expected is None:
        assert NOTE not in text and "· collapsed" not in text
    else:
        assert text.count(NOTE) == 1 and expected in text
        assert "the 3 circuits: m · trial 1 · iteration 1; m · trial 1 · iteration 2; " in text


def test_grouping_table_has_one_row_per_distinct_measurement() -> None:
    text = _render(_add8_like())
    table = text[text.index("<h4>Distinct measurements</h4>"):]
    table = table[:table.index("</table>")]
    rows = re.findall(r"<tr><td class=\"n\">(\d+)</td>(.*?)</tr>", table, re.S)
    assert [n for n, _ in rows] == ["1", "2"]
    first = rows[0][1]
    # 6 circuits, 3 distinct designs, best and equal to the golden
    assert '<td class="n">6</td><td class="n">3 · collapsed</td>' in first
    assert "★ best · = golden" in first
    assert "Synthesis mapped 3 different designs" in text


# --------------------------------------------------------------------------------------------
# the plots: identical points visible and counted, honest axis spans
# --------------------------------------------------------------------------------------------


def _circles(svg: ET.Element) -> list[ET.Element]:
    return [c for c in svg.iter(f"{SVG}circle") if "pt" in (c.get("class") or "").split()]


def test_identical_points_keep_their_circles_and_get_a_count_badge_over_the_golden() -> None:
    pts = [(2.0, 2.0, "pareto", f"p{i}") for i in range(3)]
    pts += [(2.0, 2.0, "spec", f"s{i}") for i in range(3)] + [(3.0, 1.0, "pareto", "alone")]
    svg = ET.fromstring(scatter_svg(pts, {"pareto": "#00f", "spec": "#f00"}, xlabel="x",
                                    ylabel="y", golden=(2.0, 2.0)))
    circles = _circles(svg)
    assert len(circles) == 7  # one per circuit, each with its own tooltip
    badges = [t for t in svg.iter(f"{SVG}text") if t.get("class") == "count"]
    assert [t.text for t in badges] == ["×6"]  # the lone point has none
    # the two methods at the shared point sit apart, so both colours show
    shared = {(c.get("fill"), c.get("cx"), c.get("cy")) for c in circles
              if (c.find(f"{SVG}title").text or "") != "alone"}  # type: ignore[union-attr]
    assert len(shared) == 2 and {f for f, _, _ in shared} == {"#00f", "#f00"}
    # the badge is drawn after the golden: a golden on the shared point does not cover it
    order = [el for el in svg.iter() if el.get("class") in ("golden", "count")]
    assert [el.get("class") for el in order] == ["golden", "count"]


def test_a_sub_percent_difference_is_not_stretched_over_the_frame() -> None:
    # power 0.5 % apart: the axis spans at least MIN_AXIS_SPAN of the value
    pts = [(1.000, 1.0, "m", "a"), (1.005, 2.0, "m", "b")]
    svg = ET.fromstring(scatter_svg(pts, {}, xlabel="x", ylabel="y"))
    frame = svg.find(f"{SVG}rect")
    assert frame is not None
    width = float(frame.get("width", 0))
    xs = sorted(float(c.get("cx", 0)) for c in _circles(svg))
    drawn = (xs[1] - xs[0]) / width
    # 0.005 over an axis of 3 % of ~1.0025 plus 8 % padding on each side
    assert drawn == pytest.approx(0.005 / (MIN_AXIS_SPAN * 1.005 * 1.16), rel=0.02)
    assert drawn < 0.2
    # a 100 % difference still fills the frame (the floor only widens narrow axes)
    wide = ET.fromstring(scatter_svg([(1.0, 1.0, "m", "a"), (2.0, 2.0, "m", "b")], {},
                                     xlabel="x", ylabel="y"))
    wxs = sorted(float(c.get("cx", 0)) for c in _circles(wide))
    assert (wxs[1] - wxs[0]) / width == pytest.approx(1 / 1.16, rel=0.01)


def test_spread_below_one_percent_is_said_in_words() -> None:
    details = [_detail(0, "m", (1.000, 1.0, 10.0), PLUS),
               _detail(1, "m", (1.004, 1.5, 12.0), RIPPLE, iteration=2)]
    text = _render(details)
    assert "power all within 0.4 %" in text and "delay 50.0 %" in text


# --------------------------------------------------------------------------------------------
# escaping of the new fields
# --------------------------------------------------------------------------------------------


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.starts: list[str] = []
        self.attrs: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.starts.append(tag)
        self.attrs += [name for name, _ in attrs]

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def test_method_names_in_the_callout_note_and_grouping_table_render_inert() -> None:
    method = f"m{PAYLOAD}"
    details = [_detail(0, method, (1.0, 1.0, 1.0), f"module t; // {PAYLOAD}\nendmodule"),
               _detail(1, method, (1.0, 1.0, 1.0), f"module t; /* x */ a b();{PAYLOAD}\n"
                                                   "endmodule", iteration=2),
               _detail(2, method, (2.0, 0.5, 1.0), "module t; c d(); endmodule", iteration=3)]
    text = _render(details)
    assert "Best design: " in text and NOTE in text and "Distinct measurements" in text
    parser = _Tags()
    parser.feed(text)
    parser.close()
    assert "script" not in parser.starts and "img" not in parser.starts
    assert not any(name.startswith("on") for name in parser.attrs)
    # the payload is text in the callout, the note and the table (and the circuits)
    shown = sum(f"{method} · trial 1" in chunk for chunk in parser.text)
    assert shown >= 3
