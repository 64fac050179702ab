"""What a task's measured circuits say at a glance: identical measurements, synthesis collapse,
the front and the best design, read off the data the report draws.

- **Identical PPA**: passing circuits whose (power, delay, area) agree to
  :data:`SIGNIFICANT_DIGITS` significant digits form one :class:`PPAGroup` (its values are
  its first circuit's). A plot shows such a
  group as one point; the report says how many designs it holds.
- **Synthesis collapse**: a group holding several *distinct* RTL sources (comments and
  whitespace aside) means synthesis mapped different designs to the same netlist metrics, e.g.
  a ripple-carry and a ``+`` adder on a liberty where ABC restructures both alike.
- **The front** of the groups (all three objectives minimised) and the **best design**: the
  front group with the lowest geometric mean of its PPA relative to the golden (relative to the
  front's best value of each objective when the golden was not measured), with what each other
  front group trades against it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from rtlforge.evaluation.evaluate import PPAMeasure, SampleDetail
from rtlforge.pareto.hypervolume import non_dominated

__all__ = ["OBJECTIVES", "SIGNIFICANT_DIGITS", "TIGHT_SPREAD", "Best", "PPAGroup", "TaskFindings",
           "find", "normalised_source", "relative", "same_value"]

#: The raw PPA attributes of :class:`PPAMeasure`, in the order groups and findings use.
OBJECTIVES: tuple[str, str, str] = ("power", "delay", "area")
#: Two measurements are the same when they agree to this many significant digits, the
#: precision the report shows: differences below it (two netlists with the same cells wired
#: apart, a few ppm of power) are not differences an estimate can tell.
SIGNIFICANT_DIGITS = 4
#: A relative spread (max - min) / min under this is reported as "all within x %".
TIGHT_SPREAD = 0.01

_LINE_COMMENT = re.compile(r"//[^\n]*")
_BLOCK_COMMENT = re.compile(r"/\*.*?\*/", re.S)
_SPACE = re.compile(r"\s+")


def normalised_source(code: str | None) -> str | None:
    """The design text with comments removed and whitespace collapsed (``None`` when empty):
    two circuits are the same design when these agree."""
    if code is None:
        return None
    text = _SPACE.sub(" ", _LINE_COMMENT.sub("", _BLOCK_COMMENT.sub(" ", code))).strip()
    return text or None


def same_value(value: float) -> float:
    """``value`` to :data:`SIGNIFICANT_DIGITS` significant digits: equal keys, same value."""
    return float(f"{value:.{SIGNIFICANT_DIGITS}g}")


def _key(measure: PPAMeasure) -> tuple[float, float, float]:
    return tuple(same_value(getattr(measure, o)) for o in OBJECTIVES)  # type: ignore[return-value]


def relative(value: float, reference: float) -> float | None:
    """``value / reference - 1`` (0.05 is 5 % more), or None when the reference is 0."""
    return value / reference - 1.0 if reference else None


@dataclass(frozen=True)
class PPAGroup:
    """Passing circuits of one task that measure the same PPA."""

    power: float
    delay: float
    area: float
    members: tuple[SampleDetail, ...]
    sources: int  # distinct designs among the members (comments and whitespace aside)
    on_front: bool = False
    golden_equal: bool = False  # the golden measures the same

    def value(self, objective: str) -> float:
        return float(getattr(self, objective))

    @property
    def collapsed(self) -> bool:
        """Several distinct designs measure the same: synthesis made them one netlist."""
        return self.sources > 1


@dataclass(frozen=True)
class Best:
    """The best design of a task and why."""

    group: PPAGroup
    score: float  # geometric mean of PPA relative to the reference (lower is better)
    against: str  # "golden" or "front" (the front's best value of each objective)
    dominates_all: bool  # no other group is on the front
    lowest: tuple[str, ...]  # objectives on which it is the lowest of all groups


@dataclass(frozen=True)
class TaskFindings:
    """Everything :func:`find` reads off one task's circuits."""

    groups: tuple[PPAGroup, ...]  # by area, then delay, then power
    measured: int  # passing circuits with PPA
    spread: dict[str, float]  # objective -> (max - min) / min over the groups
    best: Best | None
    golden: PPAMeasure | None  # the golden, when it was measured

    @property
    def front(self) -> tuple[PPAGroup, ...]:
        return tuple(g for g in self.groups if g.on_front)

    @property
    def collapsed(self) -> tuple[PPAGroup, ...]:
        return tuple(g for g in self.groups if g.collapsed)

    def lowest(self, objective: str) -> tuple[PPAGroup, ...]:
        """The groups with the lowest value of ``objective``."""
        return _lowest(self.groups, objective)


def find(details: Sequence[SampleDetail], golden: PPAMeasure | None) -> TaskFindings:
    """The groups, front, spread and best design of one task's circuits (``details`` may hold
    failing ones: only passing circuits with PPA count)."""
    gold = golden if golden is not None and golden.ok else None
    measured = [d for d in details if d.passed and d.ppa is not None and d.ppa.ok]
    by_key: dict[tuple[float, float, float], list[SampleDetail]] = {}
    for d in measured:
        by_key.setdefault(_key(d.ppa), []).append(d)  # type: ignore[arg-type]
    gold_key = _key(gold) if gold is not None else None
    groups = []
    for key, members in by_key.items():
        sources = {s for s in (normalised_source(d.code) for d in members) if s is not None}
        first = members[0].ppa
        assert first is not None
        groups.append(PPAGroup(first.power, first.delay, first.area, members=tuple(members),
                               sources=len(sources), golden_equal=key == gold_key))
    groups.sort(key=lambda g: (g.area, g.delay, g.power))
    if not groups:
        return TaskFindings(groups=(), measured=0, spread={}, best=None, golden=gold)
    front = non_dominated(-np.array([[g.value(o) for o in OBJECTIVES] for g in groups]))
    groups = [PPAGroup(g.power, g.delay, g.area, g.members, g.sources, bool(on), g.golden_equal)
              for g, on in zip(groups, front, strict=True)]
    spread = {}
    for o in OBJECTIVES:
        values = [g.value(o) for g in groups]
        spread[o] = (max(values) - min(values)) / min(values) if min(values) > 0 else math.inf
    return TaskFindings(groups=tuple(groups), measured=len(measured), spread=spread,
                        best=_best(groups, gold), golden=gold)


def _lowest(groups: Sequence[PPAGroup], objective: str) -> tuple[PPAGroup, ...]:
    low = min(g.value(objective) for g in groups)
    return tuple(g for g in groups if g.value(objective) == low)


def _best(groups: Sequence[PPAGroup], gold: PPAMeasure | None) -> Best | None:
    front = [g for g in groups if g.on_front]
    if gold is not None and all(getattr(gold, o) > 0 for o in OBJECTIVES):
        reference = {o: float(getattr(gold, o)) for o in OBJECTIVES}
        against = "golden"
    else:
        reference = {o: min(g.value(o) for g in front) for o in OBJECTIVES}
        against = "front"
    if any(v <= 0 for v in reference.values()):
        return None

    def score(g: PPAGroup) -> float:
        return math.prod(g.value(o) / reference[o] for o in OBJECTIVES) ** (1 / len(OBJECTIVES))

    # ties: the smaller group first (groups are sorted by area, delay, power)
    best = min(front, key=score)
    lowest = tuple(o for o in OBJECTIVES if any(g is best for g in _lowest(groups, o)))
    return Best(group=best, score=score(best), against=against, dominates_all=len(front) == 1,
                lowest=lowest)
