"""Thought events: typed, written one JSON line each, readable after a torn write."""

from __future__ import annotations

from pathlib import Path

import pytest

from rtlforge.agents.trace import JsonlSink, ThoughtEvent, ThoughtKind, Trace, read_trace


def test_events_go_to_every_sink_and_stay_in_memory(tmp_path: Path) -> None:
    seen: list[ThoughtEvent] = []
    sink = JsonlSink(tmp_path / "traces" / "t.jsonl")
    trace = Trace("t", sinks=(seen.append,), owned=(sink,))
    trace.emit("analysis", "spec has a K-map", confidence=0.9, evidence=("Karnaugh",))
    trace.emit(ThoughtKind.DECISION, "debug, error focus", iteration=1, agent="debug",
               data={"state": [0.0, 1.0]})
    trace.close()
    assert [e.kind for e in seen] == [ThoughtKind.ANALYSIS, ThoughtKind.DECISION]
    assert trace.events == seen
    back = list(read_trace(tmp_path / "traces" / "t.jsonl"))
    assert back == seen and back[0].task_id == "t" and back[1].data == {"state": [0.0, 1.0]}


def test_a_torn_last_line_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    good = ThoughtEvent(kind="progress", message="done", task_id="t")
    path.write_text(good.model_dump_json() + "\n" + '{"kind": "progr', encoding="utf-8")
    assert list(read_trace(path)) == [good]


def test_unknown_kinds_and_confidence_out_of_range_are_refused() -> None:
    trace = Trace("t")
    with pytest.raises(ValueError):
        trace.emit("musing", "hm")
    with pytest.raises(ValueError):
        trace.emit("analysis", "sure", confidence=1.5)


def test_writing_after_close_is_ignored(tmp_path: Path) -> None:
    sink = JsonlSink(tmp_path / "t.jsonl")
    sink.close()
    sink(ThoughtEvent(kind="progress", message="late"))
    assert (tmp_path / "t.jsonl").read_text(encoding="utf-8") == ""


def test_closing_a_trace_closes_only_the_sinks_it_owns(tmp_path: Path) -> None:
    callers = JsonlSink(tmp_path / "run.jsonl")  # a run-wide sink: outlives each task's trace
    owned = JsonlSink(tmp_path / "task.jsonl")
    trace = Trace("t", sinks=(callers,), owned=(owned,))
    trace.emit("progress", "first task")
    trace.close()
    Trace("u", sinks=(callers,)).emit("progress", "second task")
    owned(ThoughtEvent(kind="progress", message="late"))
    assert [e.message for e in read_trace(tmp_path / "run.jsonl")] == ["first task",
                                                                      "second task"]
    assert [e.message for e in read_trace(tmp_path / "task.jsonl")] == ["first task"]
