"""The refine HTML report: what it shows, and that untrusted text cannot break out of it."""

from __future__ import annotations

import hashlib
import re
import xml.etree.ElementTree as ET
from pathlib import Path

from rtlforge.agents.models import (
    AgentAction,
    Attempt,
    Decision,
    IterationRecord,
    RouterContext,
    SolveResult,
    Tier,
)
from rtlforge.agents.report import MAX_TRACE_EVENTS, render_refine_html, write_refine_report
from rtlforge.agents.run import summarise_results
from rtlforge.agents.trace import JsonlSink, Trace
from rtlforge.core.models import Verdict
from rtlforge.testing.builders import make_candidate

EVIL = "</details><script>alert(1)</script>"


def _rec(i: int, agent: str, verdict: Verdict, tier: Tier = Tier.ROUTER) -> IterationRecord:
    return IterationRecord(iteration=i, tier=tier, agent=agent, verdict=verdict, llm_calls=1,
                           prompt_tokens=40, completion_tokens=10)


def _results() -> list[SolveResult]:
    routed = SolveResult(
        task_id="mux<4>", verdict=Verdict.PASS, iterations=2, llm_calls=2, tokens=100,
        agents=("fast", "debug"), tiers=(Tier.ROUTER, Tier.ROUTER), solved_by=Tier.ROUTER,
        records=(_rec(0, "fast", Verdict.FAIL), _rec(1, "debug", Verdict.PASS)),
        candidate=make_candidate(f"module m; // {EVIL}\nendmodule\n"))
    failed = SolveResult(
        task_id="cnt", verdict=Verdict.FAIL, iterations=1, llm_calls=1, tokens=50,
        agents=("waveform",), tiers=(Tier.SPECIALIST,),
        records=(_rec(0, "waveform", Verdict.FAIL, Tier.SPECIALIST),))
    return [routed, failed]


def _decision(i: int, agent: str, reason: str) -> dict[str, object]:
    d = Decision(task_id="mux<4>", iteration=i, router="heuristic",
                 context=RouterContext(task_id="mux<4>", spec="s"),
                 action=AgentAction(agent=agent, retrieval_k=7, reason=reason),
                 state=(0.0,) * 168)
    return d.model_dump(mode="json")


def _cells(page: str, row_head: str) -> list[str]:
    """The text of the cells of the table row whose first cell is ``row_head``."""
    row = re.search(rf"<tr><td>{re.escape(row_head)}</td>(.*?)</tr>", page)
    assert row, row_head
    return [re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row.group(1))]


def test_report_shows_pass_at_1_cost_tiers_tasks_and_decisions() -> None:
    results = _results()
    summary = {**summarise_results(results), "run": {"max_iterations": 3}}
    page = render_refine_html(summary, results,
                              [_decision(0, "fast", "heuristic: first"),
                               _decision(1, "debug", "heuristic: errors")])
    # neither task passed its first iteration; mux<4> passed its second: solved 1 of 2
    assert _cells(page, "pass@1 (first attempt passed)") == ["0"]
    assert _cells(page, "solved within the budget") == ["0.5"]
    headline = re.search(r'<div class="callout">(.*?)</div>', page, re.S)
    assert headline is not None and re.sub(r"<[^>]+>", "", headline.group(1)) == (
        "pass@1 0.000: 0 of 2 tasks passed their first attempt. Solved 0.500: 1 of 2 within 3 "
        "iterations, 1 of them thanks to refinement, 3 LLM calls per solved task.")
    assert _cells(page, "LLM calls per solved problem") == ["3"]  # 3 calls, 1 solved
    assert _cells(page, "router")[:3] == ["1", "2", "2"]  # solved, iterations, calls
    assert _cells(page, "specialist")[:3] == ["0", "1", "1"]
    assert _cells(page, '<a href="#task-cnt">cnt</a>')[:4] == ["fail", "1", "waveform",
                                                            "specialist"]
    # the iteration grid: one column per iteration of the budget, a verdict per cell
    assert "fast<br>fail" in page and "debug<br>pass" in page
    assert "heuristic: errors" in page and "retrieval_k 7" in page and "168 dims" in page
    # the orchestrator's file name: characters replaced, so the id's digest is appended
    digest = hashlib.sha256(b"mux<4>").hexdigest()[:8]
    assert f'href="traces/mux_4_-{digest}.jsonl"' in page


def test_untrusted_text_is_escaped_and_svg_is_well_formed() -> None:
    results = _results()
    page = render_refine_html(summarise_results(results), results, [])
    assert "<script" not in page
    assert "&lt;/details&gt;&lt;script&gt;" in page  # the design's comment, shown as text
    assert "mux&lt;4&gt;" in page
    svgs = re.findall(r"<svg.*?</svg>", page, re.S)
    assert svgs
    for svg in svgs:
        ET.fromstring(svg)


def test_written_report_inlines_the_trace_capped(tmp_path: Path) -> None:
    results = _results()
    trace = Trace("cnt", owned=(JsonlSink(tmp_path / "traces" / "cnt.jsonl"),))
    trace.emit("analysis", f"waveform cue found {EVIL}", confidence=0.9,
               evidence=("spec says 'timing diagram'",))
    for i in range(MAX_TRACE_EVENTS + 5):
        trace.emit("progress", f"step {i}", iteration=0, agent="waveform")
    trace.close()
    path = write_refine_report(tmp_path, results, summarise_results(results), [])
    page = path.read_text(encoding="utf-8")
    assert path == tmp_path / "report.html"
    assert "waveform cue found &lt;/details&gt;" in page
    assert "spec says &#x27;timing diagram&#x27;" in page
    assert f"Showing {MAX_TRACE_EVENTS} of {MAX_TRACE_EVENTS + 6} events" in page
    assert f"step {MAX_TRACE_EVENTS - 2}" in page and f"step {MAX_TRACE_EVENTS}<" not in page
    assert "no trace recorded" in page  # mux<4> has none


def test_a_failed_task_shows_its_validation_feedback_escaped() -> None:
    from rtlforge.core.models import Feedback, StageResult, ValidationReport

    report = ValidationReport(verdict=Verdict.FAIL, stages=(StageResult(
        name="iverilog-sim", verdict=Verdict.FAIL, feedback=(Feedback(
            category="sim_mismatch", message=f"Mismatches: 3 in 10 samples {EVIL}"),)),))
    failed = _results()[1].model_copy(update={"report": report})
    page = render_refine_html(summarise_results([failed]), [failed], [])
    assert "[sim_mismatch] Mismatches: 3 in 10 samples &lt;/details&gt;" in page
    assert "<script" not in page


def _with_attempt() -> SolveResult:
    """mux<4> as the orchestrator records it: its failing first iteration's design and feedback
    kept, the second iteration's design the passing one."""
    from rtlforge.core.models import Feedback, Mismatch

    wrong = make_candidate(f"module m; assign y = a; // wrong {EVIL}\nendmodule\n")
    feedback = Feedback(category="sim_mismatch", message=f"Mismatches: 4 in 4 samples {EVIL}",
                        hint=f"compare the failing cases {EVIL}",
                        mismatches=(Mismatch(signal="y", raw=f"mismatch: y=1 expected 0 {EVIL}"),))
    return _results()[0].model_copy(update={"attempts": (Attempt(
        iteration=0, verdict=Verdict.FAIL, candidate=wrong, feedback=(feedback,)),)})


def test_a_failing_iteration_shows_its_design_and_feedback_escaped() -> None:
    result = _with_attempt()
    page = render_refine_html(summarise_results([result]), [result], [])
    block = re.search(r'<details class="circuit attempt"><summary>(.*?)</summary>(.*?)</details>',
                      page, re.S)
    assert block is not None
    head, body = block.groups()
    assert head.startswith("iteration 1 · fast (router) · ") and ">fail<" in head
    assert "Mismatches: 4 in 4 samples &lt;/details&gt;" in head  # the first message
    # the design that failed (not the final one), then what it was told
    assert "assign y = a; // wrong &lt;/details&gt;&lt;script&gt;" in body
    assert "[sim_mismatch] Mismatches: 4 in 4 samples &lt;/details&gt;" in body
    assert "hint: compare the failing cases &lt;/details&gt;" in body
    assert "  · mismatch: y=1 expected 0 &lt;/details&gt;" in body
    assert "<script" not in page
    # one open and one close per details element: the payloads closed nothing
    assert page.count("<details") == page.count("</details>")


def test_results_without_attempts_show_no_failing_iterations() -> None:
    results = _results()  # as stored before attempts were recorded
    page = render_refine_html(summarise_results(results), results, [])
    assert "Failing iterations" not in page
