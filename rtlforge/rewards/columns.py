"""What a reward reads from the dataset columns TRL, verl and the GRPO trainer hand it.

Per-sample columns (keyword arguments of :meth:`RTLReward.score`, one value per completion):

- ``task_id`` (required): the id of the task the completion answers.
- ``history`` (optional): the circuits already found for this prompt, a list whose entries are
  either *raw PPA* mappings ``{"power": mW, "delay": ns, "area": um2}`` (``power_mw``/``delay_ns``/
  ``area_um2`` keys and :class:`PPAResult` objects are accepted too) or *objective vectors*: plain
  3-sequences ``(P_g/P, D_g/D, A_g/A)`` already normalised by the golden (what
  :func:`~rtlforge.pareto.hypervolume.objective_vector` returns).
  A mapping may also carry ``"code"`` (the circuit's source), used for duplicate detection,
  or ``"objectives"`` (``"ratio"`` in datasets: a vector). A JSON string of such a list is
  accepted, as datasets often store nested columns that way. Each entry is parsed once into the
  kernel's :class:`~rtlforge.core.models.HistoryEntry`; an entry of none of these shapes is a
  ``ValueError`` naming it.
- ``golden_ppa`` (optional): the golden's PPA as a raw mapping; overrides the measured one.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import ValidationError

from rtlforge.core.errors import (
    TaskFormatError,
)
from rtlforge.core.models import (
    HistoryEntry,
    Objectives,
    PPAResult,
    Task,
    is_vector,
)
from rtlforge.core.untrusted import load_json
from rtlforge.rewards import guards

TaskSource = Mapping[str, Task] | Sequence[Task] | str | Path | Callable[[str], Task]


def completion_text(completion: Any) -> str:
    """The text of a completion: a string, or the last assistant message of a chat list."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, Mapping):
        return str(completion.get("content") or "")
    if isinstance(completion, Sequence):
        messages = [m for m in completion if isinstance(m, Mapping)]
        assistant = [m for m in messages if m.get("role") == "assistant"] or messages
        return str(assistant[-1].get("content") or "") if assistant else ""
    raise TypeError(f"a completion must be text or chat messages, not {type(completion).__name__}")


def resolve_tasks(tasks: TaskSource) -> Callable[[str], Task | None]:
    """A task lookup from a mapping, a list, a task directory (any layout
    :func:`~rtlforge.tasks.loader.load_tasks` reads) or a callable."""
    if isinstance(tasks, str | Path):
        from rtlforge.tasks.loader import load_tasks

        tasks = {t.id: t for t in load_tasks(tasks)}
    elif isinstance(tasks, Sequence):
        tasks = {t.id: t for t in tasks}
    if isinstance(tasks, Mapping):
        return tasks.get
    if callable(tasks):
        lookup = tasks

        def safe(task_id: str) -> Task | None:
            try:
                return lookup(task_id)
            except (KeyError, TaskFormatError):
                return None

        return safe
    raise TypeError(f"tasks must be a mapping, list, directory or callable, not {type(tasks)}")


def parse_ppa(value: Any, *, what: str = "PPA") -> PPAResult | None:
    """A PPA column value through the kernel's one way in (:meth:`PPAResult.from_flat`):
    None, a :class:`PPAResult`, a ``{power, delay, area}`` mapping (or unit-named keys) among
    other keys, or JSON text of one; a value without all three numbers raises ``ValueError``."""
    ppa = PPAResult.from_flat(value, what=what)
    if ppa is None and isinstance(value, Mapping):
        raise ValueError(f"{what} {dict(value)!r} is not a valid PPA: no power, delay or area")
    return ppa


def _as_ppa(ppa: PPAResult | Mapping[str, float] | None) -> PPAResult | None:
    return PPAResult.from_flat(ppa) if isinstance(ppa, Mapping) else ppa


def valid_ppa(ppa: PPAResult | Mapping[str, float] | None) -> bool:
    """Every measurement finite and > 0 (:attr:`PPAResult.valid`): anything else is *invalid
    PPA*, which earns a passing candidate the pass reward only."""
    parsed = _as_ppa(ppa)
    return parsed is not None and parsed.valid


def history_entries(history: Any) -> list[Any]:
    """The entries of one sample's history column (None, a list, an array or a JSON string)."""
    if history is None:
        return []
    if isinstance(history, str):
        history = load_json(history) if history.strip() else []
    if hasattr(history, "tolist"):  # numpy array (k, 3)
        history = history.tolist()
    if isinstance(history, Mapping) or (is_vector(history) and not any(
            isinstance(e, Mapping) or is_vector(e) for e in history)):
        history = [history]  # a single entry passed bare
    return list(history)


def parse_history(history: Any) -> list[HistoryEntry]:
    """One sample's history column parsed and validated (``ValueError`` names a bad entry)."""
    items = []
    for entry in history_entries(history):
        try:
            items.append(HistoryEntry.model_validate(entry))
        except ValidationError as exc:
            raise ValueError("; ".join(str(e["msg"]).removeprefix("Value error, ")
                                       for e in exc.errors())) from exc
    return items


def history_codes(history: Any) -> set[str]:
    """Normalised-source hashes of the history entries that carry their code."""
    return {guards.code_hash(item.code) for item in parse_history(history) if item.code}


def history_ppa(history: Any) -> list[PPAResult]:
    """The raw PPA in a history (objective-vector entries have none)."""
    return [item.ppa for item in parse_history(history) if item.ppa is not None]


def history_objectives(history: Any, golden: PPAResult | Mapping[str, float] | None) -> Any:
    """The history as an ``(k, 3)`` array of objective vectors; invalid entries are dropped.

    Raw PPA is normalised by ``golden`` (the truth the vector was derived from); an entry's
    own vector is taken as it is when it has no PPA or there is no golden.
    """
    gold = _as_ppa(golden)
    rows = []
    for item in parse_history(history):
        vec: Any = item.objectives
        if item.ppa is not None and gold is not None:
            vec = Objectives.of(item.ppa, gold)
        if vec is not None and all(math.isfinite(v) and v > 0 for v in vec):
            rows.append(np.asarray(vec, dtype=float))
    return np.vstack(rows) if rows else np.empty((0, 3))


def freeze(value: Any) -> str:
    """A stable text key of a column value (lists, mappings, arrays), for grouping."""
    if hasattr(value, "tolist"):
        value = value.tolist()
    return json.dumps(value, sort_keys=True, default=str)


def _column(columns: Mapping[str, Any], name: str, n: int, *, required: bool = False) -> list:
    if name not in columns or columns[name] is None:
        if required:
            raise ValueError(f"the reward needs a per-sample {name!r} column")
        return [None] * n
    values = list(columns[name])
    if len(values) != n:
        raise ValueError(f"column {name!r} has {len(values)} values for {n} completions")
    return values


# --------------------------------------------------------------------------------------------
