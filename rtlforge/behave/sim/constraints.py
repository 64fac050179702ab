"""Input constraints (``[[constraints]]``): make a stimulus obey a spec's rules on its inputs.

Some specs restrict how their inputs move over time, not just their values: RTLLM's
synchronizer holds ``data_in`` for at least 10 cycles and changes it only while ``data_en`` is
low. Drawing a fresh value every transaction would leave almost every transaction outside such
a spec's input domain, so a check there would test what the spec does not define.

One pass, :func:`apply_constraints`, turns any list of transactions (the edge sweep, random
and continuous sequences alike) into one that obeys the task's constraints; the generators
stay as they are and propose values. :func:`constraint_violations` is the independent check
(tests, and guided stimulus, which drops a directed sequence that breaks a rule), and
:func:`z3_constraints` states the same rules for the solver, so the sequences it finds obey
them by construction.

How a proposal becomes a value, per reset segment (a reset or the stimulus start begins every
run afresh): an endpoint with ``hold = [min, max]`` keeps its value until its run reaches a
length drawn from the range, then takes the latest proposal (or, when that equals the current
value, another value: a run is a maximal stretch of equal values). A gated endpoint
(``stable_while = Y``) changes only when Y was 0 for the last ``settle + 1`` transactions; while
it waits, Y is steered to 0 (as soon as Y's own hold allows) and kept there (as long as Y's own
hold allows). The task loader rejects rules that cannot all hold at once
(:func:`~.task._check_constraints`), and the run lengths are drawn so that the worst wait fits
(:func:`~.task.gate_wait`): every rule holds on every transaction, with no search.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict

from rtlforge.behave.sim.task import BehaveTask, InputConstraint, gate_wait
from rtlforge.behave.types import ArrayType, ScalarType, Value, from_bits, to_bits

if TYPE_CHECKING:
    from rtlforge.behave.sim.stimulus import Transaction

__all__ = ["ConstraintViolation", "apply_constraints", "constraint_violations",
           "sweep_repeats", "z3_constraints"]


class ConstraintViolation(BaseModel):
    """One broken rule: the transaction (index in the list checked) where it shows."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    transaction: int
    endpoint: str
    rule: Literal["hold_min", "hold_max", "stable_while"]
    message: str


def _is_zero(t: ScalarType | ArrayType, value: Value) -> bool:
    return to_bits(t, value) == 0


def _other(t: ScalarType | ArrayType, current: Value, rng: random.Random, *,
           nonzero: bool = False) -> Value:
    """A random value of ``t`` unlike ``current`` (and not 0 with ``nonzero``); no retry
    loop: a clash is moved to the next bit pattern."""
    width = t.width if isinstance(t, ScalarType) else t.element.width * t.length
    mask = (1 << width) - 1
    bits = rng.getrandbits(width)
    avoid = {to_bits(t, current)} | ({0} if nonzero else set())
    while bits in avoid:  # at most two values to step over
        bits = (bits + 1) & mask
    return from_bits(t, bits)


@dataclass
class _Run:
    """The current run of one constrained endpoint within a reset segment."""

    value: Value
    length: int  # transactions so far, this one included
    target: int  # the length at which it is due to change (1 without a hold)
    zeros: int  # consecutive transactions, this one included, the value was 0 (gates)


class _Rules:
    """The task's constraints, resolved: which endpoints gate which, draw ranges."""

    def __init__(self, task: BehaveTask) -> None:
        types = {e.name: e.type for e in task.data_input.endpoints}
        self.types = types
        self.rules = {c.endpoint: c for c in task.constraints}
        self.gates = {c.stable_while for c in task.constraints if c.stable_while is not None}
        self.waits = {c.endpoint: gate_wait(task, c) for c in task.constraints}
        # gates first: a gated endpoint's change depends on its gate's value this transaction
        self.order = [*sorted(self.gates), *(c.endpoint for c in task.constraints
                                             if c.endpoint not in self.gates)]
        for gate in self.gates:
            self.rules.setdefault(gate, InputConstraint(endpoint=gate, hold=None,
                                                        stable_while=None))

    def target(self, name: str, rng: random.Random) -> int:
        hold = self.rules[name].hold
        if hold is None:
            return 1
        return rng.randint(hold[0], hold[1] - self.waits.get(name, 0))


def apply_constraints(task: BehaveTask, transactions: Sequence[Transaction], seed: int,
                      ) -> list[Transaction]:
    """``transactions`` with the constrained endpoints' values made to obey the task's rules
    (other endpoints, gaps and resets untouched). Seeded apart from the stimulus generator, so
    the proposals it reads are the same with or without constraints."""
    if not task.constraints:
        return list(transactions)
    rules = _Rules(task)
    rng = random.Random(f"behave-constraints-{seed}")
    runs: dict[str, _Run] = {}
    out: list[Transaction] = []
    for n, txn in enumerate(transactions):
        proposal = txn.inputs
        values = dict(proposal)
        if n == 0 or txn.reset:
            runs = {}
            for name in rules.order:
                value = proposal[name]
                zero = _is_zero(rules.types[name], value)
                runs[name] = _Run(value, 1, rules.target(name, rng), int(zero))
        else:
            _advance(rules, runs, proposal, rng)
        for name, run in runs.items():
            values[name] = run.value
        out.append(txn if values == proposal else txn.model_copy(update={"inputs": values}))
    return out


def _due(rule: InputConstraint, run: _Run, proposed: Value) -> bool:
    """Whether the endpoint wants to change in this transaction."""
    if rule.hold is None:
        return proposed != run.value
    return run.length >= run.target


def _next_value(rule: InputConstraint, run: _Run, proposed: Value,
                t: ScalarType | ArrayType, rng: random.Random) -> Value:
    if rule.hold is None or proposed != run.value:
        return proposed
    return _other(t, run.value, rng)


def _advance(rules: _Rules, runs: dict[str, _Run], proposal: dict[str, Any],
             rng: random.Random) -> None:
    """One transaction further: gates decide first (steered by the endpoints waiting on
    them), then the endpoints they gate."""
    demand = {gate: False for gate in rules.gates}
    for name, rule in rules.rules.items():
        if rule.stable_while is not None and _due(rule, runs[name], proposal[name]):
            demand[rule.stable_while] = True

    def move(name: str, value: Value | None) -> None:
        run = runs[name]
        zero = _is_zero(rules.types[name], value if value is not None else run.value)
        if value is None or value == run.value:
            run.length += 1
        else:
            run.value, run.length, run.target = value, 1, rules.target(name, rng)
        run.zeros = run.zeros + 1 if zero else 0

    for name in rules.order:
        rule, run, t = rules.rules[name], runs[name], rules.types[name]
        low, high = rule.hold if rule.hold is not None else (1, None)
        must = high is not None and run.length >= high
        if name in rules.gates and demand[name]:
            if _is_zero(t, run.value):  # keep it 0 while its hold allows
                move(name, (proposal[name] if not _is_zero(t, proposal[name])
                            else _other(t, run.value, rng, nonzero=True)) if must else None)
            else:  # leave the non-zero value as soon as its hold allows
                move(name, from_bits(t, 0) if run.length >= low else None)
            continue
        gate = rule.stable_while
        allowed = gate is None or runs[gate].zeros >= rule.settle + 1
        if (must or _due(rule, run, proposal[name])) and allowed:
            move(name, _next_value(rule, run, proposal[name], t, rng))
        else:
            move(name, None)


def sweep_repeats(task: BehaveTask, endpoint: str) -> int:
    """Transactions the edge sweep proposes one value of ``endpoint`` for, so that the value
    is taken whatever run was in progress (its longest run plus its longest wait for a gate)."""
    rule = task.constraint_of(endpoint)
    longest = rule.hold[1] if rule is not None and rule.hold is not None else 1
    if rule is None or rule.hold is None:  # a gate with no hold of its own stays 0 while
        # an endpoint waits on it (at most settle + 1 transactions)
        longest += max((c.settle + 1 for c in task.constraints if c.stable_while == endpoint),
                       default=0)
    return longest + (gate_wait(task, rule) if rule is not None else 0)


def _segments(transactions: Sequence[Transaction]) -> list[tuple[int, int]]:
    starts = [n for n, t in enumerate(transactions) if n == 0 or t.reset]
    return list(zip(starts, [*starts[1:], len(transactions)], strict=True))


def constraint_violations(task: BehaveTask, transactions: Sequence[Transaction],
                          ) -> list[ConstraintViolation]:
    """Every place ``transactions`` break the task's constraints, per reset segment: a run
    (maximal stretch of one value) longer than the hold's max, a run shorter than its min that
    a change ended (the last run of a segment may be cut short by the reset or the end), a
    change of a gated endpoint in a transaction where its gate was not 0 for the
    ``settle + 1`` transactions up to it (counted within the segment)."""
    out: list[ConstraintViolation] = []
    types = {e.name: e.type for e in task.data_input.endpoints}
    for start, end in _segments(transactions):
        zeros: dict[str, list[int]] = {}  # per gate: consecutive 0s up to each transaction
        for gate in {c.stable_while for c in task.constraints if c.stable_while is not None}:
            streak, counts = 0, []
            for n in range(start, end):
                streak = streak + 1 if _is_zero(types[gate], transactions[n].inputs[gate]) else 0
                counts.append(streak)
            zeros[gate] = counts
        for rule in task.constraints:
            name = rule.endpoint
            series = [transactions[n].inputs[name] for n in range(start, end)]
            run_start = 0
            for k in range(1, len(series) + 1):
                changed = k < len(series) and series[k] != series[k - 1]
                if k < len(series) and not changed:
                    continue
                length = k - run_start
                if rule.hold is not None and length > rule.hold[1]:
                    out.append(ConstraintViolation(
                        transaction=start + run_start + rule.hold[1], endpoint=name,
                        rule="hold_max", message=f"{name} held one value for {length} "
                        f"transactions, more than {rule.hold[1]}"))
                if changed and rule.hold is not None and length < rule.hold[0]:
                    out.append(ConstraintViolation(
                        transaction=start + k, endpoint=name, rule="hold_min",
                        message=f"{name} changed after {length} transactions, fewer than "
                        f"{rule.hold[0]}"))
                if changed and rule.stable_while is not None:
                    gate = rule.stable_while
                    if zeros[gate][k] < rule.settle + 1:
                        out.append(ConstraintViolation(
                            transaction=start + k, endpoint=name, rule="stable_while",
                            message=f"{name} changed while {gate} was not 0 for the "
                            f"{rule.settle + 1} transaction(s) up to it"))
                run_start = k
    return sorted(out, key=lambda v: (v.transaction, v.endpoint))


def z3_constraints(task: BehaveTask, z3: Any, inputs: Sequence[dict[str, Any]],
                   equal: Callable[[Any, Any], Any]) -> list[Any]:
    """The task's constraints on a sequence that starts from reset, as Z3 terms over
    ``inputs`` (one dict of input terms per transaction; ``equal`` compares two terms of one
    endpoint, arrays element-wise): the same rules as :func:`constraint_violations`, with the
    sequence's last run allowed to be short, since a reset or the end follows it."""
    terms: list[Any] = []
    length = len(inputs)
    for rule in task.constraints:
        name = rule.endpoint
        if name not in inputs[0]:
            continue
        changed = [z3.BoolVal(False)] + [z3.Not(equal(inputs[k][name], inputs[k - 1][name]))
                                         for k in range(1, length)]
        for k in range(1, length):
            needs = []
            if rule.hold is not None:
                low = rule.hold[0]
                if k < low:
                    needs.append(z3.BoolVal(False))
                needs += [z3.Not(changed[i]) for i in range(max(1, k - low + 1), k)]
            if rule.stable_while is not None:
                gate = rule.stable_while
                if k < rule.settle:
                    needs.append(z3.BoolVal(False))
                needs += [_zero_term(z3, inputs[i][gate])
                          for i in range(max(0, k - rule.settle), k + 1)]
            if needs:
                terms.append(z3.Implies(changed[k], z3.And(*needs)))
        if rule.hold is not None:
            high = rule.hold[1]
            for k in range(high, length):  # every high + 1 transactions see a change
                terms.append(z3.Or(*changed[k - high + 1:k + 1]))
    return terms


def _zero_term(z3: Any, term: Any) -> Any:
    if z3.is_bool(term):
        return z3.Not(term)
    return term == 0
