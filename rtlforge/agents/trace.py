"""The visible reasoning trace: typed thought events, a JSONL file per task, live listeners.

Every step of a refinement run (what was analysed, which bottleneck was found, what was
proposed, retrieved, generated, validated and decided) is a :class:`ThoughtEvent`. The
orchestrator emits them to a :class:`Trace`; sinks decide where they go: :class:`JsonlSink`
writes one line per event (flushed, so a crash loses nothing already decided), and the CLI adds
a sink that draws the live view. The library itself never prints.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from enum import StrEnum
from pathlib import Path
from typing import Any, Protocol, TextIO

from pydantic import BaseModel, ConfigDict, Field

from rtlforge.core.untrusted import load_json

__all__ = ["ClosingSink", "JsonlSink", "ThoughtEvent", "ThoughtKind", "Trace", "TraceSink",
           "read_trace"]


class ThoughtKind(StrEnum):
    ANALYSIS = "analysis"  # what the task is (complexity, cues, tier chosen)
    BOTTLENECK = "bottleneck"  # what is blocking progress (the error category, the trend)
    PROPOSAL = "proposal"  # what the next attempt will try
    RETRIEVAL = "retrieval"  # knowledge entries fetched, with scores
    GENERATION = "generation"  # a generator call: agent, tokens, latency
    VALIDATION = "validation"  # a verdict with the stage reached
    DECISION = "decision"  # a router decision: its state and action
    ERROR = "error"  # an infrastructure failure
    PROGRESS = "progress"  # iteration finished, task finished


class ThoughtEvent(BaseModel):
    """One step of the reasoning, with how sure the step is and what it rests on."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: ThoughtKind
    message: str
    task_id: str | None = None
    iteration: int | None = None
    agent: str | None = None
    confidence: float | None = Field(None, ge=0.0, le=1.0)
    evidence: tuple[str, ...] = ()  # short human-readable facts the step rests on
    data: dict[str, Any] = Field(default_factory=dict)  # machine-readable details
    timestamp: float = Field(default_factory=time.time)


TraceSink = Callable[[ThoughtEvent], None]


class ClosingSink(Protocol):
    """A sink that holds a resource (a file): the trace that owns it closes it."""

    def __call__(self, event: ThoughtEvent) -> None: ...

    def close(self) -> None: ...


class JsonlSink:
    """Appends each event as one JSON line to a file, flushed per event."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file: TextIO | None = self.path.open("a", encoding="utf-8")
        self._lock = threading.Lock()

    def __call__(self, event: ThoughtEvent) -> None:
        with self._lock:
            if self._file is None:
                return
            self._file.write(event.model_dump_json() + "\n")
            self._file.flush()

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None


class Trace:
    """Where one task's events go; keeps them in memory too (``events``) for the result.

    ``sinks`` belong to the caller (a live view that spans a whole run) and are only called;
    ``owned`` sinks are called too and closed by :meth:`close` (this task's JSONL file).
    """

    def __init__(self, task_id: str | None = None, sinks: Sequence[TraceSink] = (), *,
                 owned: Sequence[ClosingSink] = ()) -> None:
        self.task_id = task_id
        self.sinks: list[TraceSink] = [*sinks, *owned]
        self._owned = tuple(owned)
        self.events: list[ThoughtEvent] = []

    def emit(self, kind: ThoughtKind | str, message: str, **fields: Any) -> ThoughtEvent:
        fields.setdefault("task_id", self.task_id)
        event = ThoughtEvent(kind=ThoughtKind(kind), message=message, **fields)
        self.events.append(event)
        for sink in self.sinks:
            sink(event)
        return event

    def close(self) -> None:
        """Close the sinks this trace owns; the caller's stay open."""
        for sink in self._owned:
            sink.close()


def read_trace(path: str | Path) -> Iterator[ThoughtEvent]:
    """The events of a JSONL trace; a torn last line (a killed run) is skipped, also one torn
    inside a UTF-8 sequence (messages quote model and tool text verbatim)."""
    with Path(path).open("rb") as handle:
        for raw in handle:
            if not raw.strip():
                continue
            try:
                event = ThoughtEvent.model_validate(load_json(raw.decode("utf-8")))
            except (ValueError, TypeError, RecursionError):  # UnicodeDecodeError: a ValueError
                continue
            yield event
