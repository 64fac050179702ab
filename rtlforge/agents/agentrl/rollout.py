"""A multi-turn rollout as tokens: what the model saw at each turn and what it produced.

The model's own tokens are kept exactly as sampled (never decoded and re-tokenised), and every
other token (instructions, chat formatting, tool results) is tokenised once when it enters the
conversation. Each turn records the segments its context held, so the loss is computed on the
very context a completion was sampled from, also after the window evicted older turns.

:func:`pack` turns a rollout into masked sequences: while one turn's context extends the
previous turn's (no eviction in between), the turns share one sequence; an eviction starts a
new one. Every model token is trained once, in its own turn's sequence (mask 1); everything
else is context (mask 0).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["Rollout", "Segment", "SegmentKind", "TurnRecord", "pack"]

#: ``instructions``: the system and task messages; ``format``: chat markup around a turn;
#: ``model``: sampled tokens (the only trainable kind); ``tool``: a tool result message.
SegmentKind = Literal["instructions", "format", "model", "tool"]


class Segment(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: SegmentKind
    turn: int = Field(ge=0, description="0: the instructions; k: interaction turn k")
    ids: tuple[int, ...]


class TurnRecord(BaseModel):
    """One model turn: the segments of its context (indices into ``Rollout.segments``), its
    completion segment, and the earlier turns the window left out."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    turn: int = Field(ge=1)
    context: tuple[int, ...]
    completion: int
    evicted: tuple[int, ...] = ()
    tool_calls: tuple[str, ...] = ()


class Rollout(BaseModel):
    """One episode of one task in one group. ``reward`` is None exactly when the rollout was
    dropped (``drop_reason``: an infrastructure failure); ``advantage`` is set when its group
    was kept for the update."""

    model_config = ConfigDict(extra="forbid")

    update: int
    task_id: str
    group: int
    index: int
    segments: list[Segment] = Field(default_factory=list)
    turns: list[TurnRecord] = Field(default_factory=list)
    end_reason: str = ""
    rtl: str = "missing"
    model: str = "missing"
    reward: float | None = None
    unresolved: bool = False
    drop_reason: str | None = None
    feedback: str = ""  # one line for acquisition's Analyst (the rollout log's reader)
    advantage: float | None = None

    def add(self, kind: SegmentKind, turn: int, ids: list[int] | tuple[int, ...]) -> int:
        self.segments.append(Segment(kind=kind, turn=turn, ids=tuple(int(i) for i in ids)))
        return len(self.segments) - 1

    def turn_segments(self, turn: int) -> list[int]:
        return [i for i, s in enumerate(self.segments) if s.turn == turn]

    @property
    def model_tokens(self) -> int:
        return sum(len(s.ids) for s in self.segments if s.kind == "model")

    @property
    def tool_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for turn in self.turns:
            for name in turn.tool_calls:
                counts[name] = counts.get(name, 0) + 1
        return counts


def pack(rollout: Rollout) -> list[tuple[list[int], list[int]]]:
    """The rollout as ``(ids, mask)`` sequences; mask 1 marks the tokens a turn sampled."""
    out: list[tuple[list[int], list[int]]] = []
    for turn in rollout.turns:
        ids: list[int] = []
        mask: list[int] = []
        for index in turn.context:
            seg = rollout.segments[index].ids
            ids.extend(seg)
            mask.extend([0] * len(seg))
        completion = rollout.segments[turn.completion].ids
        if out and ids[:len(out[-1][0])] == out[-1][0] and len(ids) >= len(out[-1][0]):
            prev_ids, prev_mask = out[-1]
            prev_mask.extend(mask[len(prev_ids):])
            prev_ids.extend(ids[len(prev_ids):])
            prev_ids.extend(completion)
            prev_mask.extend([1] * len(completion))
        else:
            out.append((ids + list(completion), mask + [1] * len(completion)))
    return out
