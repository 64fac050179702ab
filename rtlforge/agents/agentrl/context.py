"""Which earlier turns fit the model's window (BEHAVE §3.4: when the context fills, the oldest
interaction turns are dropped; the task instructions and the latest tool feedback stay).

Pure: it sees token counts, not tokens. A turn is the model's reply and the tool results that
answered it, so the latest feedback is the last turn and is never dropped; the instructions are
never dropped either. Dropping is oldest first, so the kept turns are always the longest suffix
that fits, and a turn once dropped stays dropped as the conversation grows.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["select_turns"]


def select_turns(instructions: int, turns: Sequence[int], *, prompt: int, reserve: int,
                 window: int) -> tuple[list[int], list[int]] | None:
    """Kept and evicted turn positions (0-based into ``turns``) so that ``instructions`` +
    the kept turns + ``prompt`` (the next turn's opening) + ``reserve`` (its completion) tokens
    fit ``window``; None when even the instructions and the latest turn do not fit."""
    fixed = instructions + prompt + reserve + (turns[-1] if turns else 0)
    if fixed > window:
        return None
    start = 0
    total = fixed + sum(turns[:-1])
    while total > window:  # the last turn is in ``fixed``, so this stops before it
        total -= turns[start]
        start += 1
    return list(range(start, len(turns))), list(range(start))
