"""Stimulus for BEHAVE-Sim: edge cases per type, seeded random sequences, schedule variation.

One :class:`Stimulus` drives the RTL (through the testbench's files) and every behaviour model
alike, so they all see the same logical inputs. A stimulus is a list of transactions for the
data interface (configuration values ride along in each one) plus backpressure patterns for the
design's ready/valid outputs. Schedule variation: idle gaps before a transaction, resets at the
start of a sequence and, rarely, mid-stream (after the design drained: what a reset does to
transactions in flight is not something a behaviour model specifies), and continuous sequences
that keep the state of the one before (no reset between them). A task's input constraints
(:mod:`.constraints`) are applied last, to all of it.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from rtlforge.behave.sim.constraints import apply_constraints, sweep_repeats
from rtlforge.behave.sim.protocols import Protocol
from rtlforge.behave.sim.task import BehaveTask, Endpoint
from rtlforge.behave.types import ArrayType, ScalarType, Value, from_bits

__all__ = [
    "BACKPRESSURE_CYCLES",
    "Stimulus",
    "StimulusConfig",
    "Transaction",
    "edge_cases",
    "effective_config",
    "extreme",
    "generate_stimulus",
]

#: Length of each backpressure pattern; the testbench cycles through it.
BACKPRESSURE_CYCLES = 256
#: Widest idle gap the testbench's stimulus word can carry.
MAX_GAP = 255


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class StimulusConfig(_Frozen):
    """How much stimulus and of which kinds; the defaults are the issue's baseline."""

    seed: int = 0
    sequences: int = Field(50, ge=0)
    transactions: int = Field(100, ge=1)  # per sequence
    edge_sweep: bool = True  # one extra first sequence walking every endpoint's edge cases
    edge_fraction: float = Field(0.15, ge=0, le=1)  # random values replaced by edge cases
    idle_probability: float = Field(0.2, ge=0, le=1)
    max_gap: int = Field(3, ge=0, le=MAX_GAP)
    reset_probability: float = Field(0.01, ge=0, le=1)  # mid-stream, per transaction
    continuous_fraction: float = Field(0.2, ge=0, le=1)  # sequences that keep the state
    backpressure: bool = True


class Transaction(_Frozen):
    inputs: dict[str, Any]
    gap: int = 0  # idle cycles before it is offered
    reset: bool = False  # reset design and models before it
    sequence: int = 0


class Stimulus(_Frozen):
    transactions: tuple[Transaction, ...]
    backpressure: dict[str, tuple[bool, ...]] = Field(default_factory=dict)  # iface -> ready


def edge_cases(t: ScalarType | ArrayType) -> list[Value]:
    """Values where designs break: 0, 1, max, min, sign boundaries, all-ones, walking ones."""
    if isinstance(t, ArrayType):
        elems = edge_cases(t.element)
        out: list[Value] = [tuple(e for _ in range(t.length)) for e in elems]
        lo, hi = elems[0], elems[-1]
        for i in range(min(t.length, 8)):  # one element at its extreme, the rest at the other
            out.append(tuple(hi if j == i else lo for j in range(t.length)))
        return out
    if t.kind == "bool":
        return [False, True]
    w = t.width
    patterns = [0, 1, (1 << w) - 1, (1 << w) - 2, 1 << (w - 1), (1 << (w - 1)) - 1,
                (1 << (w - 1)) + 1, int("01" * w, 2) & ((1 << w) - 1),
                int("10" * w, 2) & ((1 << w) - 1)]
    patterns += [1 << i for i in range(w)]  # walking ones
    seen: dict[Value, None] = {}
    for bits in patterns:
        seen.setdefault(from_bits(t, bits & ((1 << w) - 1)), None)
    values = sorted(seen, key=lambda v: (int(v) != 0, int(v)))
    return values


#: Transactions per cross-endpoint corner of the edge sweep (repeated, so state builds up).
CORNER_REPEATS = 3


def extreme(t: ScalarType | ArrayType, high: bool) -> Value:
    """The type's largest (``high``) or smallest value; an array's every element at it."""
    if isinstance(t, ArrayType):
        return tuple(extreme(t.element, high) for _ in range(t.length))
    if t.kind == "bool":
        return high
    return t.hi if high else t.lo


def _corners(static: list[Endpoint], data: list[Endpoint], sequence: int) -> list[Transaction]:
    """Every endpoint at its minimum together, then at its maximum (configuration too, and
    the two mixed when there is configuration), each after a reset and held for a few
    transactions: what a sweep changing one endpoint at a time never reaches (e.g. an all -128
    matrix times an all -128 vector). Deterministic: it draws nothing from the random
    generator, so the random part of every stimulus is the same with or without it."""
    combos = [(False, False), (True, True)]
    if static:
        combos += [(False, True), (True, False)]
    out: list[Transaction] = []
    for static_high, data_high in combos:
        inputs = {**{e.name: extreme(e.type, static_high) for e in static},
                  **{e.name: extreme(e.type, data_high) for e in data}}
        out += [Transaction(inputs=inputs, reset=k == 0, sequence=sequence)
                for k in range(CORNER_REPEATS)]
    return out


def _random_value(t: ScalarType | ArrayType, rng: random.Random, edge_fraction: float,
                  edges: dict[ScalarType | ArrayType, list[Value]]) -> Value:
    """A random value, an edge case with probability ``edge_fraction`` (per array element).

    ``edges`` memoises :func:`edge_cases` per type for one stimulus: recomputing it for every
    element of a wide array was most of the stimulus time (MXFP4: 32 BF16 per transaction).
    """
    if isinstance(t, ArrayType):
        return tuple(_random_value(t.element, rng, edge_fraction, edges)
                     for _ in range(t.length))
    if rng.random() < edge_fraction:
        cases = edges.get(t)
        if cases is None:
            cases = edges[t] = edge_cases(t)
        return rng.choice(cases)
    return from_bits(t, rng.getrandbits(t.width))


def _backpressure(rng: random.Random) -> tuple[bool, ...]:
    """Ready patterns in segments: always ready, coin flips, mostly stalled, bursts."""
    out: list[bool] = []
    while len(out) < BACKPRESSURE_CYCLES:
        kind = rng.randrange(4)
        if kind == 0:
            out += [True] * 24
        elif kind == 1:
            out += [rng.random() < 0.5 for _ in range(32)]
        elif kind == 2:
            out += [rng.random() < 0.2 for _ in range(24)]
        else:
            off, on = rng.randint(2, 9), rng.randint(2, 9)
            out += ([False] * off + [True] * on) * 2
    return tuple(out[:BACKPRESSURE_CYCLES])


def effective_config(task: BehaveTask, config: StimulusConfig | None = None) -> StimulusConfig:
    """``config`` with the task's ``[stimulus]`` settings for every field the caller did not set
    explicitly (pydantic's ``model_fields_set``): explicit, then the task's, then the default."""
    config = config or StimulusConfig()
    from_task = {name: value for name, value in task.stimulus.model_dump(exclude_none=True).items()
                 if name not in config.model_fields_set}
    return StimulusConfig.model_validate({**config.model_dump(include=config.model_fields_set),
                                          **from_task}) if from_task else config


def generate_stimulus(task: BehaveTask, config: StimulusConfig | None = None) -> Stimulus:
    """The seeded stimulus for ``task``: the same seed gives the same transactions.

    The task's ``[stimulus]`` settings apply to the fields ``config`` leaves at their defaults
    (:func:`effective_config`)."""
    config = effective_config(task, config)
    rng = random.Random(config.seed)
    data = task.data_input
    # without a valid pin an idle cycle would look like a transaction to the design
    every_cycle = data.protocol in (Protocol.COMBINATIONAL, Protocol.PER_CYCLE) or (
        data.protocol is Protocol.FIXED_LATENCY and "valid" not in data.pins)
    static = [e for i in task.static_inputs for e in i.endpoints]
    txns: list[Transaction] = []
    edges: dict[ScalarType | ArrayType, list[Value]] = {}

    def config_values() -> dict[str, Value]:
        return {e.name: _random_value(e.type, rng, 0.3, edges) for e in static}

    def gap() -> int:
        if every_cycle or config.max_gap == 0 or rng.random() >= config.idle_probability:
            return 0
        return rng.randint(1, config.max_gap)

    seq = 0
    if config.edge_sweep:
        held = config_values()
        sweep = [(e, v) for e in (*static, *data.endpoints) for v in edge_cases(e.type)]
        for k, (endpoint, value) in enumerate(sweep):
            values = {e.name: _random_value(e.type, rng, 0.5, edges) for e in data.endpoints}
            if endpoint in static:  # a configuration value changes only with a reset
                held = {**held, endpoint.name: value}
            else:
                values[endpoint.name] = value
            reset = k == 0 or endpoint in static
            # a constrained endpoint's value is proposed until a run of it can start
            repeats = 1 if endpoint in static else sweep_repeats(task, endpoint.name)
            for r in range(repeats):
                txns.append(Transaction(inputs={**held, **values}, gap=gap(),
                                        reset=reset and r == 0, sequence=seq))
        txns += _corners(static, list(data.endpoints), seq)
        seq += 1
    held = config_values()
    for s in range(config.sequences):
        keep = bool(txns) and s > 0 and rng.random() < config.continuous_fraction
        if not keep:
            held = config_values()
        for k in range(config.transactions):
            reset = (k == 0 and not keep) or (k > 0 and rng.random() < config.reset_probability)
            values = {e.name: _random_value(e.type, rng, config.edge_fraction, edges)
                      for e in data.endpoints}
            txns.append(Transaction(inputs={**held, **values}, gap=gap(), reset=reset or not txns,
                                    sequence=seq))
        seq += 1
    if task.reset is None:  # nothing can reset the design: only the first transaction resets
        txns = [t.model_copy(update={"reset": n == 0}) if t.reset != (n == 0) else t
                for n, t in enumerate(txns)]
    if task.constraints:  # the spec's rules on how inputs move ([[constraints]])
        txns = apply_constraints(task, txns, config.seed)
    bp = {i.name: (_backpressure(rng) if config.backpressure else (True,) * BACKPRESSURE_CYCLES)
          for i in task.outputs if i.protocol is Protocol.READY_VALID}
    return Stimulus(transactions=tuple(txns), backpressure=bp)


def input_values(task: BehaveTask, txn: Transaction) -> Mapping[str, Value]:
    """The mapping a behaviour model's ``process`` receives for ``txn``."""
    return {e.name: txn.inputs[e.name] for e in task.input_endpoints}
