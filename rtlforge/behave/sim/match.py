"""Output matching policies: pair observed output transactions with expected ones.

Handshake outputs are matched per reset segment (a reset ends one, after the design drained)
under the task's policy: ``in_order`` (the n-th observed is the n-th expected), ``by_id`` (in
order among transactions with the same value of the declared id endpoint; outputs without that
endpoint fall back to in order) or ``multiset`` (content only: each observed pairs with the
earliest unpaired expected of equal value). Sampled outputs (combinational, per-cycle, fixed
latency) are read at the cycle the expected value belongs to, so they are always in order.

An expected value may be :data:`~rtlforge.behave.base.DONT_CARE` (the model returned ``ANY``):
that endpoint is not compared, and unknown (X/Z) bits in it are accepted (``Observed.partial``
holds the endpoints that were readable). Without don't-cares every comparison is exact, as before.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from rtlforge.behave.base import is_dont_care

__all__ = ["Expected", "Observed", "Pair", "agrees", "match_outputs"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Expected(_Frozen):
    transaction: int
    values: dict[str, Any]


class Observed(_Frozen):
    cycle: int
    values: dict[str, Any] | None  # None: unknown bits (X/Z) in the log
    # per endpoint, None where that endpoint had unknown bits (only when ``values`` is None)
    partial: dict[str, Any] | None = None
    first: int = 0
    stalled: int = 0
    raw: str = ""


class Pair(_Frozen):
    expected: Expected | None
    observed: Observed | None

    @property
    def ok(self) -> bool:
        return (self.expected is not None and self.observed is not None
                and agrees(self.expected, self.observed))


def agrees(expected: Expected, observed: Observed) -> bool:
    """The observation carries the expected value on every endpoint the model specified."""
    want = expected.values
    if not any(is_dont_care(v) for v in want.values()):
        return observed.values == want
    have = observed.values if observed.values is not None else observed.partial
    if have is None or set(have) != set(want):
        return False
    return all(is_dont_care(v) or (have[k] is not None and have[k] == v)
               for k, v in want.items())


def _wild(e: Expected) -> bool:
    return any(is_dont_care(v) for v in e.values.values())


def _key(values: dict[str, Any] | None) -> tuple[tuple[str, Any], ...] | None:
    return None if values is None else tuple(sorted(values.items()))


def match_outputs(expected: Sequence[Expected], observed: Sequence[Observed], *, policy: str,
                  id_field: str | None = None) -> list[Pair]:
    """Pairs in the order of ``expected``, then unexpected observations (expected None)."""
    if policy == "by_id" and id_field is not None and all(
            id_field in e.values and not is_dont_care(e.values[id_field]) for e in expected):
        groups_e: dict[Any, list[Expected]] = defaultdict(list)
        groups_o: dict[Any, list[Observed]] = defaultdict(list)
        for e in expected:
            groups_e[e.values[id_field]].append(e)
        stray: list[Observed] = []
        for o in observed:
            if o.values is None or id_field not in o.values:
                stray.append(o)
            else:
                groups_o[o.values[id_field]].append(o)
        pairs: list[Pair] = []
        for ident, exps in groups_e.items():
            obs = groups_o.pop(ident, [])
            pairs += [Pair(expected=e, observed=obs[i] if i < len(obs) else None)
                      for i, e in enumerate(exps)]
            stray += obs[len(exps):]
        stray += [o for obs in groups_o.values() for o in obs]
        pairs.sort(key=lambda p: p.expected.transaction if p.expected else 0)
        return pairs + [Pair(expected=None, observed=o) for o in sorted(stray,
                                                                         key=lambda o: o.cycle)]
    if policy == "multiset":
        by_value: dict[Any, list[int]] = defaultdict(list)
        wild: list[int] = []  # expected with don't-cares: matched by content, scanned in order
        for n, e in enumerate(expected):
            (wild if _wild(e) else by_value[_key(e.values)]).append(n)
        taken: dict[int, Observed] = {}
        extra: list[Observed] = []
        for o in observed:
            slots = by_value.get(_key(o.values))
            if slots:
                taken[slots.pop(0)] = o
                continue
            fit = next((k for k, n in enumerate(wild) if agrees(expected[n], o)), None)
            if fit is not None:
                taken[wild.pop(fit)] = o
            else:
                extra.append(o)
        # what is left pairs up in order, so a wrong value shows beside what was expected
        free = [n for n in range(len(expected)) if n not in taken]
        for n, o in zip(free, extra, strict=False):
            taken[n] = o
        extra = extra[len(free):]
        return ([Pair(expected=e, observed=taken.get(n)) for n, e in enumerate(expected)]
                + [Pair(expected=None, observed=o) for o in extra])
    pairs = [Pair(expected=e, observed=observed[n] if n < len(observed) else None)
             for n, e in enumerate(expected)]
    return pairs + [Pair(expected=None, observed=o) for o in observed[len(expected):]]
