"""The BEHAVE task format: a spec, typed interfaces with protocols, rules, a golden model.

A task directory holds ``behave.toml`` (this format; docs/behave-sim.md describes every field),
the spec text and the golden model. Loading is strict: bad TOML, an unknown key, a wrong type or
an inconsistent declaration raises :class:`BehaveTaskError` naming the field (and the line in
``behave.toml`` where it can be found), never a bare ``KeyError`` from deep inside the checker.

Endpoint names are the names the behaviour model sees: ``process`` takes a mapping from input
endpoint name to value and returns one from output endpoint name to value. An output
interface's transaction is expected exactly when ``process`` returns its endpoints (all of them;
none means no output for that transaction, so a model can emit one sum per four inputs).
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from rtlforge.behave.sim.protocols import Protocol, allowed_pins, required_pins
from rtlforge.behave.types import ArrayType, ScalarType, ValueType, bit_width, to_bits
from rtlforge.core.errors import TaskFormatError
from rtlforge.core.untrusted import load_toml
from rtlforge.eda.modules import VERILOG_KEYWORDS

__all__ = [
    "TASK_FILE",
    "BehaveTask",
    "BehaveTaskError",
    "ClockSpec",
    "Endpoint",
    "InputConstraint",
    "Interface",
    "LatencyBounds",
    "Matching",
    "ResetPort",
    "ResetSpec",
    "StimulusSettings",
    "gate_wait",
    "load_behave_task",
    "parse_type",
    "reset_input_bits",
]

TASK_FILE = "behave.toml"
_MAX_TEXT_BYTES = 1 << 20
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_PLAIN_FILE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")
_TYPE_TEXT = re.compile(r"^(?:(?P<kind>uint|sint)(?P<width>\d+)|(?P<bool>bool))"
                        r"(?:\[(?P<length>\d+)\])?$")
#: Verilog/SystemVerilog keywords no port or top may be named (the testbench declares them).
_RESERVED = VERILOG_KEYWORDS
#: Every name the generated testbench declares starts with this (:mod:`.testbench`): a port
#: named so would be declared twice and no design, the right one included, would compile.
TESTBENCH_PREFIX = "bt_"
#: Most bits all endpoints of a task may carry together, and most array elements: stimulus,
#: golden runs and the testbench's registers grow with them (a ``uint4096[65536]`` is 268 M
#: bits a transaction), and no design we model needs more.
MAX_TASK_BITS = 8192
MAX_TASK_ELEMENTS = 4096
#: Further clocks a task may declare, and the most rising edges one may make per cycle of the
#: transaction clock: the testbench writes every edge of every clock (2 x ratio statements a
#: cycle each), so a huge ratio would be a huge, slow simulation for no design we model.
MAX_EXTRA_CLOCKS = 4
MAX_CLOCK_RATIO = 16
#: Further reset ports, and the widest output delay window (cycles) a per_cycle output may
#: declare: the judge tries every delay in the window.
MAX_EXTRA_RESETS = 4
MAX_OUTPUT_DELAY = 32
#: Longest hold (transactions) and settle an input constraint may ask for.
MAX_HOLD = 100_000


class BehaveTaskError(TaskFormatError):
    """A malformed BEHAVE task: ``field`` is the dotted path, ``line`` its line in the file."""

    def __init__(self, message: str, *, field: str | None = None, line: int | None = None,
                 file: str | None = None) -> None:
        where = ":".join(str(p) for p in (file, line) if p is not None)
        super().__init__(f"{where}: {message}" if where else message)
        self.field = field
        self.line = line
        self.file = file


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


def parse_type(value: object) -> ScalarType | ArrayType:
    """A type from its short text (``uint8``, ``sint16``, ``bool``, ``uint4[8]``) or table."""
    if isinstance(value, ScalarType | ArrayType):
        return value
    if isinstance(value, str):
        found = _TYPE_TEXT.match(value.strip())
        if not found:
            raise ValueError(f"{value!r} is not a type (uint<W>, sint<W>, bool, or one of "
                             "these with [N] for an array)")
        element = (ScalarType(kind="bool") if found["bool"]
                   else ScalarType(kind=found["kind"], width=int(found["width"])))
        if found["length"]:
            return ArrayType(element=element, length=int(found["length"]))
        return element
    if isinstance(value, dict):
        if value.get("kind") == "array":
            return ArrayType.model_validate({**value, "element": parse_type(value.get("element"))})
        return ScalarType.model_validate(value)
    raise ValueError(f"expected a type, got {value!r}")


class Endpoint(_Frozen):
    """One value an interface carries: the model's name for it, its type and its port."""

    name: str
    type: ValueType
    port: str | None = None  # the Verilog port; default: the endpoint's name

    @field_validator("type", mode="before")
    @classmethod
    def _short_type(cls, value: object) -> object:
        return parse_type(value)

    @property
    def pin(self) -> str:
        return self.port or self.name

    @property
    def width(self) -> int:
        return bit_width(self.type)


class Interface(_Frozen):
    """A group of endpoints that move together under one protocol."""

    name: str
    direction: Literal["input", "output"]
    protocol: Protocol
    pins: dict[str, str] = Field(default_factory=dict)  # valid/ready/start/done -> port
    latency: int | None = Field(None, ge=0, le=4096)  # fixed_latency outputs only
    #: per_cycle outputs only: [lo, hi]; the sampled stream is the model's delayed by one
    #: fixed, unknown d in the window for the whole run (docs/behave-constraints.md)
    delay: tuple[int, int] | None = None
    endpoints: tuple[Endpoint, ...] = ()

    @property
    def width(self) -> int:
        return sum(e.width for e in self.endpoints)

    @property
    def sampled(self) -> bool:
        """Observed at fixed cycles rather than by a handshake (matched in cycle order)."""
        return self.protocol in (Protocol.COMBINATIONAL, Protocol.PER_CYCLE,
                                 Protocol.FIXED_LATENCY)


class ClockSpec(_Frozen):
    """A further clock port the testbench drives at ``ratio`` rising edges per cycle of the
    transaction clock (``clock``), e.g. a data-side clock twice as fast as the destination
    clock of a synchroniser. ``align``: which of its edges falls on each rising edge of
    ``clock``, its rising one (``rise``) or its falling one (``fall``: it rises half of its
    own period earlier)."""

    port: str
    ratio: int
    align: Literal["rise", "fall"] = "rise"


class ResetPort(_Frozen):
    """A further reset port, asserted and released together with the main one."""

    signal: str
    active: Literal["high", "low"] = "high"


class ResetSpec(_Frozen):
    """The reset port and how the testbench applies it.

    ``inputs``: values some input endpoints are driven to while reset is active (e.g. an
    enable a synchronous reset acts only under, as RTLLM's LIFObuffer's does); an endpoint not
    named keeps whatever it last carried (the previous transaction's value), as without it."""

    signal: str
    active: Literal["high", "low"] = "high"
    kind: Literal["sync", "async"] = "sync"
    cycles: int = Field(2, ge=1, le=64)
    inputs: dict[str, int | bool] = Field(default_factory=dict)
    #: further reset ports (e.g. one per clock domain), asserted and released with ``signal``
    extra: tuple[ResetPort, ...] = ()


class InputConstraint(_Frozen):
    """A rule the stimulus obeys on one data-input endpoint, for specs that restrict their
    inputs over time (docs/behave-constraints.md). ``hold = [min, max]``: each value is held
    for min..max transactions (a run of equal values; a reset or the end of the stimulus may
    cut a run short). ``stable_while = "Y"``: the endpoint may change only in a transaction
    where scalar endpoint Y is 0 (false) and was 0 in the ``settle`` transactions before it
    (within the same reset segment)."""

    endpoint: str
    hold: tuple[int, int] | None = None
    stable_while: str | None = None
    settle: int = Field(0, ge=0, le=MAX_HOLD)


class StimulusSettings(_Frozen):
    """The task's own stimulus defaults (``[stimulus]``), e.g. for a design whose behaviour
    unfolds over long time constants. Each field set here replaces the
    :class:`~rtlforge.behave.sim.stimulus.StimulusConfig` default for this task; a caller that
    sets the field explicitly (a CLI flag) still wins."""

    sequences: int | None = Field(None, ge=0, le=10_000)
    transactions: int | None = Field(None, ge=1, le=1_000_000)  # per sequence
    continuous_fraction: float | None = Field(None, ge=0, le=1)
    reset_probability: float | None = Field(None, ge=0, le=1)
    idle_probability: float | None = Field(None, ge=0, le=1)
    edge_fraction: float | None = Field(None, ge=0, le=1)
    max_gap: int | None = Field(None, ge=0, le=255)


#: At most this many random transactions a task's ``[stimulus]`` may ask for (bounded runs).
MAX_TASK_TRANSACTIONS = 2_000_000


class Matching(_Frozen):
    """How observed outputs pair with expected ones on handshake interfaces."""

    policy: Literal["in_order", "by_id", "multiset"] = "in_order"
    id_field: str | None = None  # by_id: the output endpoint whose value names the transaction


class LatencyBounds(_Frozen):
    """Cycles from the input transaction to its output being offered, stalls excluded."""

    min: int = Field(0, ge=0)
    max: int = Field(16, ge=0, le=100_000)


class BehaveTask(_Frozen):
    id: str
    top: str
    spec: str = ""
    spec_file: str | None = None
    clock: str | None = None
    clocks: tuple[ClockSpec, ...] = ()  # further clocks, driven at a ratio to ``clock``
    reset: ResetSpec | None = None
    interfaces: tuple[Interface, ...] = Field(min_length=2)
    constraints: tuple[InputConstraint, ...] = ()
    matching: Matching = Matching()
    latency: LatencyBounds = LatencyBounds()
    stimulus: StimulusSettings = StimulusSettings()
    golden: str  # file name of the golden behaviour-DSL model inside the task directory
    rtllm: str | None = None  # an RTLLM v2 design this task models (rtlforge.behave.rtllm)
    directory: Path | None = Field(None, exclude=True)
    rtllm_dir: Path | None = Field(None, exclude=True)  # that design's folder, once found

    @property
    def data_input(self) -> Interface:
        """The one input interface whose events form transactions."""
        return next(i for i in self.interfaces
                    if i.direction == "input" and i.protocol is not Protocol.STATIC)

    @property
    def static_inputs(self) -> tuple[Interface, ...]:
        return tuple(i for i in self.interfaces if i.protocol is Protocol.STATIC)

    @property
    def outputs(self) -> tuple[Interface, ...]:
        return tuple(i for i in self.interfaces if i.direction == "output")

    @property
    def input_endpoints(self) -> tuple[Endpoint, ...]:
        return (*(e for i in self.static_inputs for e in i.endpoints),
                *self.data_input.endpoints)

    @property
    def combinational(self) -> bool:
        return self.data_input.protocol is Protocol.COMBINATIONAL

    def constraint_of(self, endpoint: str) -> InputConstraint | None:
        return next((c for c in self.constraints if c.endpoint == endpoint), None)


# ------------------------------------------------------------------------------- checks


def _fail(message: str, field: str) -> BehaveTaskError:
    return BehaveTaskError(f"field {field!r}: {message}", field=field)


def check_task(task: BehaveTask) -> None:
    """Raise :class:`BehaveTaskError` for declarations that parse but cannot be simulated."""
    from rtlforge.behave.sim.testbench import TB_TOP

    for field, name in (("id", task.id), ("top", task.top)):
        if not _IDENT.match(name):
            raise _fail(f"{name!r} is not a plain identifier", field)
    if task.top in _RESERVED or task.top == TB_TOP:
        raise _fail(f"{task.top!r} is a Verilog keyword or the generated testbench's module",
                    "top")
    data = [i for i in task.interfaces
            if i.direction == "input" and i.protocol is not Protocol.STATIC]
    if len(data) != 1:
        raise _fail(f"exactly one non-static input interface forms the transactions; found "
                    f"{len(data)} (configuration goes in 'static' interfaces)", "interfaces")
    if not task.outputs:
        raise _fail("at least one output interface is needed", "interfaces")
    ports: dict[str, str] = {}

    def claim(port: str, field: str) -> None:
        if not _IDENT.match(port) or port in _RESERVED:
            raise _fail(f"{port!r} is not a usable Verilog identifier", field)
        if port.startswith(TESTBENCH_PREFIX) or port == TB_TOP:
            raise _fail(f"{port!r} is a name of the generated testbench (its signals start "
                        f"with {TESTBENCH_PREFIX!r}): choose another port name", field)
        if port in ports:
            raise _fail(f"port {port!r} is already used by {ports[port]}", field)
        ports[port] = field

    sampled_in = data[0].protocol in (Protocol.COMBINATIONAL, Protocol.PER_CYCLE)
    if task.clock is not None:
        claim(task.clock, "clock")
    if task.reset is not None:
        claim(task.reset.signal, "reset.signal")
        if len(task.reset.extra) > MAX_EXTRA_RESETS:
            raise _fail(f"at most {MAX_EXTRA_RESETS} further reset ports", "reset.extra")
        for k, port in enumerate(task.reset.extra):
            claim(port.signal, f"reset.extra[{k}].signal")
    _check_clocks(task, claim)
    names: set[str] = set()
    for n, iface in enumerate(task.interfaces):
        where = f"interfaces[{n}]"
        if not _IDENT.match(iface.name):
            raise _fail(f"{iface.name!r} is not a plain identifier", f"{where}.name")
        if iface.protocol is Protocol.STATIC and iface.direction != "input":
            raise _fail("a static (configuration) interface is an input", f"{where}.protocol")
        if iface.direction == "output" and iface.protocol is not Protocol.STATIC:
            sampled_out = iface.protocol in (Protocol.COMBINATIONAL, Protocol.PER_CYCLE)
            if sampled_out != sampled_in:
                raise _fail(f"output protocol {iface.protocol.value} cannot pair with input "
                            f"protocol {data[0].protocol.value}: combinational and per_cycle "
                            "inputs and outputs go together", f"{where}.protocol")
            if (iface.protocol is Protocol.COMBINATIONAL) != task.combinational:
                raise _fail("combinational outputs need a combinational input and vice versa",
                            f"{where}.protocol")
        if iface.protocol is Protocol.FIXED_LATENCY and iface.direction == "output" \
                and iface.latency is None:
            raise _fail("a fixed_latency output declares its latency", f"{where}.latency")
        if iface.latency is not None and not (iface.protocol is Protocol.FIXED_LATENCY
                                              and iface.direction == "output"):
            raise _fail("only a fixed_latency output has a latency", f"{where}.latency")
        if iface.delay is not None:
            _check_delay(iface, f"{where}.delay")
        allowed = allowed_pins(iface.protocol, iface.direction)
        for pin, port in iface.pins.items():
            if pin not in allowed:
                raise _fail(f"protocol {iface.protocol.value} ({iface.direction}) has no pin "
                            f"{pin!r}; its pins: {list(allowed) or 'none'}", f"{where}.pins.{pin}")
            claim(port, f"{where}.pins.{pin}")
        for pin in required_pins(iface.protocol, iface.direction):
            if pin not in iface.pins:
                raise _fail(f"protocol {iface.protocol.value} needs the pin {pin!r}",
                            f"{where}.pins")
        if not iface.endpoints and not (iface.direction == "input"
                                        and iface.protocol is Protocol.PER_CYCLE):
            raise _fail("an interface carries at least one endpoint (only a per_cycle input, "
                        "a design clocked with no data input, may have none)", f"{where}.endpoints")
        for k, ep in enumerate(iface.endpoints):
            field = f"{where}.endpoints[{k}]"
            if not _IDENT.match(ep.name):
                raise _fail(f"{ep.name!r} is not a plain identifier", f"{field}.name")
            if ep.name in names:
                raise _fail(f"endpoint {ep.name!r} is declared twice", f"{field}.name")
            names.add(ep.name)
            claim(ep.pin, f"{field}.port")
    endpoints = [e for i in task.interfaces for e in i.endpoints]
    bits = sum(e.width for e in endpoints)
    elements = sum(e.type.length for e in endpoints if isinstance(e.type, ArrayType))
    if bits > MAX_TASK_BITS or elements > MAX_TASK_ELEMENTS:
        raise _fail(f"the endpoints carry {bits} bits ({elements} array elements); a task "
                    f"carries at most {MAX_TASK_BITS} bits and {MAX_TASK_ELEMENTS} elements",
                    "interfaces")
    if not task.combinational and task.clock is None:
        raise _fail("a clocked protocol needs the clock port", "clock")
    if task.reset is not None:
        _check_reset_inputs(task, task.reset)
    _check_constraints(task)
    if task.constraints:
        _check_sweep_size(task)
    if task.latency.min > task.latency.max:
        raise _fail("min exceeds max", "latency")
    total = (task.stimulus.sequences if task.stimulus.sequences is not None else 50) * (
        task.stimulus.transactions if task.stimulus.transactions is not None else 100)
    if total > MAX_TASK_TRANSACTIONS:
        raise _fail(f"sequences x transactions is {total}, more than {MAX_TASK_TRANSACTIONS}",
                    "stimulus")
    if task.matching.policy == "by_id":
        out_names = {e.name for i in task.outputs for e in i.endpoints}
        if task.matching.id_field not in out_names:
            raise _fail("by_id names an output endpoint as its id_field", "matching.id_field")
    elif task.matching.id_field is not None:
        raise _fail("id_field belongs to the by_id policy", "matching.id_field")
    if not _PLAIN_FILE.match(task.golden):
        raise _fail(f"{task.golden!r} is not a plain file name in the task directory", "golden")
    if task.rtllm is not None and not _PLAIN_FILE.match(task.rtllm):
        raise _fail(f"{task.rtllm!r} is not an RTLLM design folder name", "rtllm")


def _check_clocks(task: BehaveTask, claim: Any) -> None:
    if not task.clocks:
        return
    if task.clock is None or task.combinational:
        raise _fail("further clocks need the transaction clock (`clock`) and a clocked "
                    "protocol", "clocks")
    if len(task.clocks) > MAX_EXTRA_CLOCKS:
        raise _fail(f"at most {MAX_EXTRA_CLOCKS} further clocks", "clocks")
    for k, spec in enumerate(task.clocks):
        if not 1 <= spec.ratio <= MAX_CLOCK_RATIO:
            raise _fail(f"ratio {spec.ratio} is not a whole number of rising edges per "
                        f"transaction-clock cycle between 1 and {MAX_CLOCK_RATIO}",
                        f"clocks[{k}].ratio")
        claim(spec.port, f"clocks[{k}].port")


def _check_delay(iface: Interface, field: str) -> None:
    assert iface.delay is not None
    lo, hi = iface.delay
    if not (iface.direction == "output" and iface.protocol is Protocol.PER_CYCLE):
        raise _fail("only a per_cycle output has a delay window", field)
    if not 0 <= lo <= hi <= MAX_OUTPUT_DELAY:
        raise _fail(f"[{lo}, {hi}] is not a window 0 <= lo <= hi <= {MAX_OUTPUT_DELAY} "
                    "(cycles)", field)


def _hold_bounds(c: InputConstraint | None) -> tuple[int, int | None]:
    """(min, max) run length of a constrained endpoint; (1, None) when it has no hold."""
    return (c.hold[0], c.hold[1]) if c is not None and c.hold is not None else (1, None)


def gate_wait(task: BehaveTask, c: InputConstraint) -> int:
    """Most transactions a gated endpoint may wait, once it is due to change, for its gate to
    allow it: the gate may have to finish a shortest non-zero run, then stay 0 for ``settle``
    more transactions (the stimulus generator's worst case; 0 without a gate)."""
    if c.stable_while is None:
        return 0
    return _hold_bounds(task.constraint_of(c.stable_while))[0] + c.settle


def _check_constraints(task: BehaveTask) -> None:
    """Each constraint names a data-input endpoint once; gates are scalar data inputs that are
    not gated themselves (no chains, so no loops); the holds leave room for the gate's wait,
    so every constraint can be met at once (unsatisfiable ones are refused here, never found
    by a generator that would loop)."""
    data = {e.name: e for e in task.data_input.endpoints}
    static = {e.name for i in task.static_inputs for e in i.endpoints}
    seen: set[str] = set()
    for k, c in enumerate(task.constraints):
        where = f"constraints[{k}]"
        if c.endpoint not in data:
            why = ("a configuration (static) endpoint changes only with a reset"
                   if c.endpoint in static else "not an input endpoint of the data interface")
            raise _fail(f"{c.endpoint!r}: {why}", f"{where}.endpoint")
        if c.endpoint in seen:
            raise _fail(f"{c.endpoint!r} is constrained twice: put its rules in one entry",
                        f"{where}.endpoint")
        seen.add(c.endpoint)
        if c.hold is None and c.stable_while is None:
            raise _fail("a constraint has a hold, a stable_while, or both", where)
        if c.hold is not None and not 1 <= c.hold[0] <= c.hold[1] <= MAX_HOLD:
            raise _fail(f"{list(c.hold)} is not [min, max] with 1 <= min <= max <= {MAX_HOLD}"
                        " (transactions)", f"{where}.hold")
        if c.stable_while is None:
            if c.settle:
                raise _fail("settle belongs to stable_while", f"{where}.settle")
            continue
        gate = data.get(c.stable_while)
        if gate is None:
            raise _fail(f"{c.stable_while!r} is not an input endpoint of the data interface",
                        f"{where}.stable_while")
        if gate.name == c.endpoint:
            raise _fail("an endpoint cannot be stable while itself is 0", f"{where}.stable_while")
        if not isinstance(gate.type, ScalarType):
            raise _fail(f"{gate.name!r} is an array: a gate is a scalar (0 = may change)",
                        f"{where}.stable_while")
    for k, c in enumerate(task.constraints):
        if c.stable_while is None:
            continue
        where = f"constraints[{k}]"
        gate_rule = task.constraint_of(c.stable_while)
        if gate_rule is not None and gate_rule.stable_while is not None:
            raise _fail(f"{c.stable_while!r} gates {c.endpoint!r} and is gated itself (by "
                        f"{gate_rule.stable_while!r}): chains of stable_while are not supported",
                        f"{where}.stable_while")
        gate_max = _hold_bounds(gate_rule)[1]
        if gate_max is not None and gate_max < c.settle + 1:
            raise _fail(f"unsatisfiable: {c.endpoint!r} may change only after "
                        f"{c.stable_while!r} was 0 for {c.settle + 1} transactions, but "
                        f"{c.stable_while!r} holds a value at most {gate_max}",
                        f"{where}.settle")
        lo, hi = _hold_bounds(c)
        wait = gate_wait(task, c)
        if hi is not None and hi - wait < lo:
            raise _fail(f"unsatisfiable: {c.endpoint!r} holds a value at most {hi} "
                        f"transactions, but it may have to wait {wait} for {c.stable_while!r} "
                        f"(its shortest run, then {c.settle} settle) after holding {lo}: "
                        f"make max at least {lo + wait}", f"{where}.hold")


def _check_sweep_size(task: BehaveTask) -> None:
    """The edge sweep proposes each edge value of a constrained endpoint for its longest run
    plus wait (:func:`~.constraints.sweep_repeats`): long holds on wide endpoints would make
    it huge, so it counts against the same bound as the random transactions."""
    from rtlforge.behave.sim.constraints import sweep_repeats
    from rtlforge.behave.sim.stimulus import edge_cases

    size = sum(len(edge_cases(e.type)) * sweep_repeats(task, e.name)
               for e in task.data_input.endpoints)
    if size > MAX_TASK_TRANSACTIONS:
        raise _fail(f"with these holds the edge sweep alone is {size} transactions, more than "
                    f"{MAX_TASK_TRANSACTIONS}: shorten the holds", "constraints")


def _check_reset_inputs(task: BehaveTask, reset: ResetSpec) -> None:
    endpoints = {e.name: e for e in task.input_endpoints}
    for name, value in reset.inputs.items():
        field = f"reset.inputs.{name}"
        endpoint = endpoints.get(name)
        if endpoint is None:
            raise _fail(f"{name!r} is not an input endpoint of the task", field)
        if not isinstance(endpoint.type, ScalarType):
            raise _fail("only a scalar endpoint can be held during reset", field)
        t = endpoint.type
        if t.kind == "bool":
            ok = isinstance(value, bool) or value in (0, 1)
        else:
            ok = not isinstance(value, bool) and t.lo <= value <= t.hi
        if not ok:
            raise _fail(f"{value!r} is not a value of {name}'s type "
                        f"({t.kind}{t.width if t.kind != 'bool' else ''})", field)


def reset_input_bits(task: BehaveTask) -> tuple[tuple[Endpoint, int], ...]:
    """The endpoints held during reset and their bit patterns (none without ``inputs``)."""
    if task.reset is None:
        return ()
    endpoints = {e.name: e for e in task.input_endpoints}
    return tuple((endpoints[name], to_bits(endpoints[name].type, int(value)))
                 for name, value in task.reset.inputs.items())


# ------------------------------------------------------------------------------- loading


def _line_of(text: str, loc: tuple[Any, ...]) -> int | None:
    """Best-effort line of a field path in the TOML text: the array table it is in (counted by
    index), then the outermost key after it (an inline table or array is on that key's line)."""
    lines = text.splitlines()
    start, rest = 0, list(loc)
    for i, part in enumerate(loc):
        if isinstance(part, int) and i > 0 and isinstance(loc[i - 1], str):
            header = re.compile(rf"^\s*\[\[\s*{re.escape(loc[i - 1])}\s*\]\]")
            hits = [n for n, line in enumerate(lines) if n >= start and header.match(line)]
            if part < len(hits):
                start, rest = hits[part], list(loc[i + 1:])
    key = next((p for p in rest if isinstance(p, str)), None)
    if key is None:
        return start + 1 if start else None
    pattern = re.compile(rf"^\s*\"?{re.escape(key)}\"?\s*=|^\s*\[+\s*{re.escape(key)}\s*\]")
    for n in range(start, len(lines)):
        if n > start and lines[n].lstrip().startswith("[[") and start:
            break
        if pattern.search(lines[n]):
            return n + 1
    return start + 1 if start else None


def _field_path(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _read(path: Path, what: str) -> str:
    try:
        if path.is_symlink() or not path.is_file():
            raise BehaveTaskError(f"{what} {path.name!r} is not a file in the task directory",
                                  field=what, file=str(path))
        if path.stat().st_size > _MAX_TEXT_BYTES:
            raise BehaveTaskError(f"{what} is larger than {_MAX_TEXT_BYTES} bytes", field=what,
                                  file=str(path))
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise BehaveTaskError(f"cannot read {what}: {exc}", field=what, file=str(path)) from exc


def parse_behave_task(text: str, *, file: str = TASK_FILE,
                      directory: Path | None = None) -> BehaveTask:
    """A task from its TOML text; ``directory`` resolves the spec and golden files."""
    try:
        raw = load_toml(text)
    except tomllib.TOMLDecodeError as exc:
        found = re.search(r"line (\d+)", str(exc))
        raise BehaveTaskError(f"not valid TOML: {exc}", file=file,
                              line=int(found[1]) if found else None) from exc
    except RecursionError:  # tomllib recurses once per level of nested arrays and tables
        raise BehaveTaskError("not a usable task: values nested too deeply", file=file
                              ) from None
    try:
        task = BehaveTask.model_validate({**raw, "directory": directory})
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = tuple(first["loc"])
        field = _field_path(loc)
        raise BehaveTaskError(f"field {field!r}: {first['msg']}", field=field, file=file,
                              line=_line_of(text, loc)) from exc
    try:
        check_task(task)
    except BehaveTaskError as exc:
        loc = tuple(int(p) if p.isdigit() else p
                    for p in re.split(r"[.\[\]]+", exc.field or "") if p)
        raise BehaveTaskError(str(exc), field=exc.field, file=file,
                              line=_line_of(text, loc)) from exc
    return task


def load_behave_task(directory: str | Path, *, rtllm_root: str | Path | None = None
                     ) -> BehaveTask:
    """Load ``behave.toml`` from a task directory (spec text read, golden file checked).

    A task naming an RTLLM design (``rtllm = "<design>"``) is joined with RTLLM's files where
    they are distributed (``rtllm_root``, or as :func:`rtlforge.behave.rtllm.find_design`
    searches): its spec is the design's ``design_description.txt`` unless ``spec_file`` is given.
    """
    root = Path(directory).resolve()
    path = root / TASK_FILE
    text = _read(path, TASK_FILE)
    task = parse_behave_task(text, file=str(path), directory=root)
    updates: dict[str, Any] = {}
    if task.rtllm is not None:
        from rtlforge.behave.rtllm import DESCRIPTION, find_design

        design = find_design(task.rtllm, root, rtllm_root)
        updates["rtllm_dir"] = design
        updates["spec"] = _read(design / DESCRIPTION, "rtllm")
    if task.spec_file is not None:
        if not _PLAIN_FILE.match(task.spec_file):
            raise BehaveTaskError(f"field 'spec_file': {task.spec_file!r} is not a plain file "
                                  "name", field="spec_file", file=str(path))
        updates["spec"] = _read(root / task.spec_file, "spec_file")
    golden = root / task.golden
    if golden.is_symlink() or not golden.is_file():
        raise BehaveTaskError(f"field 'golden': {task.golden!r} is not a file in the task "
                              "directory", field="golden", file=str(path),
                              line=_line_of(text, ("golden",)))
    return task.model_copy(update=updates) if updates else task
