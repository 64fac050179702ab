"""Training data for sequential Pareto RL: prompt rows, generation-based reconstruction, filters.

Rows are plain dicts so they go straight into ``datasets.Dataset.from_list`` and on to TRL,
which hands every column to the reward function by name. A row has

- ``prompt``: chat messages (system + user) rendered with a prompt template; the ``pareto``
  template shows the spec and the circuit history with its PPA;
- ``task_id``: what the reward validates against;
- ``history``: the circuits found so far for this prompt, as JSON text: a list of the kernel's
  :class:`~rtlforge.core.models.HistoryEntry` in its flat form ``{"code", "power", "delay",
  "area", "ratio"}`` (``ratio`` is the golden-normalised objective vector or null). The reward
  reads the raw PPA (and ``code`` for duplicate detection); ``ratio`` lets reconstruction score
  HVC without the golden;
- ``history_len`` and ``born`` (the generation that created the row; the original rows have 0).

The generation loop (paper §4.2) lives in :func:`reconstruct`; it is pure data so its rules are
unit-tested without a model. The problem filters of the paper's data preparation are
:func:`usable_tasks` (golden passes its testbench and PPA estimation) and
:func:`negative_tradeoff_tasks` (sampled candidates show a negative area-delay correlation).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, field_validator

from rtlforge.core.models import FlatPPA, HistoryEntry, Objectives, PPAResult, Task
from rtlforge.core.untrusted import load_json
from rtlforge.generation.prompts import PromptTemplate, load_template
from rtlforge.pareto.hypervolume import hvc_group

__all__ = [
    "MAX_HISTORY",
    "PER_LENGTH_CAP",
    "Rollout",
    "area_delay_correlation",
    "best_per_group",
    "group_hvc",
    "history_key",
    "history_length_mix",
    "initial_rows",
    "make_row",
    "negative_tradeoff_tasks",
    "reconstruct",
    "usable_tasks",
]

#: A row whose history reaches this many circuits is dropped (paper §4.2).
MAX_HISTORY = 5
#: At most this many rows per history length; the oldest go first (paper §4.2).
PER_LENGTH_CAP = 1000


# --------------------------------------------------------------------------------------------
# rows
# --------------------------------------------------------------------------------------------


def history_key(history: Any) -> str:
    """Canonical JSON of a history column value, so equal histories group together."""
    if isinstance(history, str):
        history = load_json(history) if history.strip() else []
    return json.dumps(list(history or []), sort_keys=True)


def _prompt_entries(history: Sequence[Mapping[str, Any]]) -> list[HistoryEntry]:
    entries = [HistoryEntry.model_validate(h) for h in history]
    return [e.model_copy(update={"source": e.source or "", "iteration": i})
            for i, e in enumerate(entries, start=1)]


def make_row(task: Task, history: Sequence[Mapping[str, Any]], template: PromptTemplate | str,
             *, born: int = 0, conversational: bool = True,
             iterations: int = MAX_HISTORY) -> dict[str, Any]:
    """One training row: the template rendered for ``task`` after the circuits in ``history``."""
    tmpl = load_template(template)
    req = tmpl.request(task, _prompt_entries(history), iteration=len(history) + 1,
                       iterations=iterations)
    if conversational:
        prompt: Any = ([{"role": "system", "content": req.system}] if req.system else []) + [
            {"role": "user", "content": req.prompt}]
    else:
        prompt = (req.system + "\n\n" if req.system else "") + req.prompt
    return {"prompt": prompt, "task_id": task.id, "history": history_key(history),
            "history_len": len(history), "born": born}


def initial_rows(tasks: Iterable[Task], template: PromptTemplate | str = "pareto", *,
                 repeat: int = 1, conversational: bool = True) -> list[dict[str, Any]]:
    """The original, history-free dataset (each task ``repeat`` times)."""
    tmpl = load_template(template)
    rows = [make_row(t, [], tmpl, conversational=conversational) for t in tasks]
    return [dict(r) for _ in range(repeat) for r in rows]


def history_length_mix(rows: Iterable[Mapping[str, Any]],
                       max_history: int = MAX_HISTORY) -> list[int]:
    """How many rows have 0, 1, ..., ``max_history - 1`` circuits of history (index = length).

    Reconstruction never keeps a row whose history reaches ``max_history``, so the list covers
    every length a dataset can hold (it grows if a row is longer, e.g. a pool saved under a
    larger ``max_history``); it is what shows whether a run is sequential at all.
    """
    counts = [0] * max_history
    for row in rows:
        length = int(row.get("history_len", 0))
        counts.extend([0] * (length + 1 - len(counts)))
        counts[length] += 1
    return counts


# --------------------------------------------------------------------------------------------
# generation-based reconstruction
# --------------------------------------------------------------------------------------------


class Rollout(BaseModel):
    """One scored completion of the last generation, as reconstruction needs it.

    ``ppa`` is the raw PPA (stored as ``{power, delay, area}`` in checkpoints); ``objectives``
    the golden-normalised vector (None when the design failed or PPA was not measured); ``hvc``
    the reward's own HVC when it computed one. ``passed`` means the design passed its testbench.
    """

    model_config = ConfigDict(frozen=True)

    task_id: str
    history: str
    code: str | None
    reward: float | None
    passed: bool
    ppa: FlatPPA | None = None
    objectives: Objectives | None = None
    hvc: float | None = None

    @field_validator("ppa", mode="before")
    @classmethod
    def _flat_ppa(cls, value: Any) -> Any:
        return PPAResult.from_flat(value, what="rollout PPA")

    def entry(self) -> HistoryEntry:
        """What this circuit adds to its group's history."""
        return HistoryEntry(source=self.code, ppa=self.ppa, objectives=self.objectives)


def _history_ratios(history: Sequence[Any]) -> np.ndarray:
    entries = (HistoryEntry.model_validate(h) for h in history)
    rows = [e.objectives for e in entries if e.objectives is not None]
    return np.asarray(rows, dtype=float).reshape(-1, 3)


def group_hvc(history: Any, objectives: Sequence[float] | None) -> float | None:
    """HVC of one objective vector over a history column value (None without objectives)."""
    if objectives is None:
        return None
    entries = load_json(history_key(history))
    return float(hvc_group(_history_ratios(entries), [objectives])[0])


def best_per_group(rollouts: Iterable[Rollout]) -> dict[tuple[str, str], Rollout]:
    """The highest-HVC passing candidate of every ``(task_id, history)`` group.

    HVC is recomputed against the group's history from the candidates' objective vectors, so
    baselines whose reward is not HVC (testbench, TB+PPA, repetition penalty) select the same
    way as the HVC reward. Candidates without PPA rank below every measured one and among
    themselves by reward; the first wins ties. Groups with no passing candidate are absent.
    """
    groups: dict[tuple[str, str], list[Rollout]] = {}
    for r in rollouts:
        if r.passed and r.code and r.reward is not None:
            groups.setdefault((r.task_id, history_key(r.history)), []).append(r)
    best: dict[tuple[str, str], Rollout] = {}
    for key, members in groups.items():
        history = load_json(key[1])
        hvcs = hvc_group(_history_ratios(history), [m.objectives for m in members])
        ranks = [(m.objectives is not None, float(h), float(m.reward or 0.0))
                 for m, h in zip(members, hvcs, strict=True)]
        top = max(range(len(members)), key=lambda i: ranks[i])  # max keeps the first of ties
        best[key] = members[top]
    return best


def reconstruct(
    original: Sequence[Mapping[str, Any]],
    current: Sequence[Mapping[str, Any]],
    rollouts: Iterable[Rollout],
    tasks: Mapping[str, Task] | Callable[[str], Task],
    template: PromptTemplate | str = "pareto",
    *,
    generation: int,
    max_history: int = MAX_HISTORY,
    per_length_cap: int = PER_LENGTH_CAP,
    conversational: bool = True,
) -> list[dict[str, Any]]:
    """The dataset of the next generation (paper §4.2).

    1. for every ``(task, history)`` group of the last generation keep the highest-HVC
       candidate (:func:`best_per_group`) and append it, with its PPA, to that history;
    2. drop rows whose history length reaches ``max_history``;
    3. pool the new rows with the history-bearing rows of ``current`` and keep at most
       ``per_length_cap`` rows per history length, dropping the oldest (lowest ``born``, then
       earliest position);
    4. add the original history-free rows back.

    ``generation`` is the index of the generation that just finished; new rows get
    ``born = generation + 1``. Rows are returned shortest history first.
    """
    lookup = tasks.__getitem__ if isinstance(tasks, Mapping) else tasks
    tmpl = load_template(template)
    fresh: list[dict[str, Any]] = []
    for (task_id, key), best in best_per_group(rollouts).items():
        history = [*load_json(key), best.entry().model_dump()]
        if len(history) >= max_history:
            continue
        fresh.append(make_row(lookup(task_id), history, tmpl, born=generation + 1,
                              conversational=conversational, iterations=max_history))
    pool = [dict(r) for r in current if int(r.get("history_len", 0)) > 0] + fresh
    by_len: dict[int, list[tuple[int, int, dict[str, Any]]]] = {}
    for pos, row in enumerate(pool):
        by_len.setdefault(int(row["history_len"]), []).append((int(row.get("born", 0)), pos, row))
    kept: list[dict[str, Any]] = []
    for length in sorted(by_len):
        rows = sorted(by_len[length], key=lambda t: (t[0], t[1]))[-per_length_cap:]
        kept.extend(row for _, _, row in rows)
    return [dict(r) for r in original] + kept


# --------------------------------------------------------------------------------------------
# problem filters (paper's data preparation)
# --------------------------------------------------------------------------------------------


def usable_tasks(tasks: Iterable[Task], reward: Any) -> list[Task]:
    """Tasks whose golden passes its own testbench and whose golden PPA can be measured.

    ``reward`` is an :class:`~rtlforge.rewards.ppa.PPAReward` (its pipeline, golden PPA
    service and cached task checks are reused): a task the reward would abstain on teaches
    nothing.
    """
    tasks = list(tasks)
    checks = reward.check_tasks(tasks)
    keep = [t for t in tasks if t.golden and checks.get(t.id) is not None and checks[t.id].usable]
    out = []
    for task in keep:
        try:
            measure = reward.goldens.measure(task)
        except Exception:  # noqa: BLE001 - a task we cannot measure is filtered out
            continue
        if measure.ppa is not None and measure.ppa.valid:
            out.append(task)
    return out


def _ppa_pair(ppa: Any) -> tuple[float, float] | None:
    parsed = PPAResult.from_flat(ppa, what="candidate PPA")
    if parsed is None or not all(math.isfinite(v) and v > 0
                                 for v in (parsed.area_um2, parsed.delay_ns)):
        return None
    return parsed.area_um2, parsed.delay_ns


def area_delay_correlation(candidates: Iterable[Any], *, distinct: bool = True) -> float | None:
    """Pearson r between area and delay over candidate PPA (mappings or ``PPAResult``).

    Invalid measurements are skipped; with ``distinct`` repeated (area, delay) points count
    once, so a model that samples one design ten times does not fake a trade-off. None when
    fewer than three points remain or either coordinate is constant (r is undefined).
    """
    points = [p for p in (_ppa_pair(c) for c in candidates) if p is not None]
    if distinct:
        points = list(dict.fromkeys(points))
    if len(points) < 3:
        return None
    arr = np.asarray(points, dtype=float)
    if np.ptp(arr[:, 0]) == 0 or np.ptp(arr[:, 1]) == 0:
        return None
    return float(np.corrcoef(arr[:, 0], arr[:, 1])[0, 1])


def negative_tradeoff_tasks(candidates: Mapping[str, Iterable[Any]], *,
                            threshold: float = 0.0, distinct: bool = True) -> list[str]:
    """Task ids whose sampled candidates show ``r(area, delay) < threshold`` (paper: r < 0).

    A negative correlation means smaller circuits are slower: the task has a real area-delay
    trade-off for the policy to explore. Tasks with undefined r are not selected.
    """
    out = []
    for task_id, ppas in candidates.items():
        r = area_delay_correlation(ppas, distinct=distinct)
        if r is not None and r < threshold:
            out.append(task_id)
    return out
