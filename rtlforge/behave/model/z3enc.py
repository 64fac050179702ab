"""Z3 bit-vector encoding of one transaction, and goal-directed input search.

Every integer IR node has a static interval, hence an exact two's complement width: the
encoding computes each operation at a width where no overflow can happen, so a bit-vector term
equals the interpreter's unbounded-integer value (not an approximation). Unsigned ports become
``BitVec(W)`` zero-extended by one bit; signed ones are used as they are. Execution is encoded
as guarded assignments (no path forking): each statement runs under the condition that control
reaches it, early ``return``/``fail()`` and failed runtime checks clear that condition for the
rest, and each branch outcome's goal condition is the guard under which it is taken (ORed over
loop-unrolled copies).

What the encoding cannot express exactly it refuses with :class:`Unsupported` (signed ``//``
and ``%``; very long arrays): the concrete interpreter is unaffected. Z3 is the optional
``z3-solver`` dependency, imported on first use; without it :class:`Z3Unavailable` says how to
install it. Every solver answer is replayed on the interpreter before it counts.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from rtlforge.behave.model.ir import (
    ArrayExpr,
    ArrayLit,
    ArrayRef,
    Assign,
    BinOp,
    BoolT,
    Call,
    Const,
    DontCareValue,
    EnumT,
    Expr,
    ExprType,
    Fail,
    Fill,
    If,
    IfExp,
    Index,
    IntT,
    Return,
    Stmt,
    Store,
    UnOp,
    Var,
)
from rtlforge.behave.types import ArrayType, ScalarType, Value

if TYPE_CHECKING:
    from rtlforge.behave.model import BehaviorModel, Goal

__all__ = [
    "MAX_SYMBOLIC_ARRAY",
    "MAX_SYMBOLIC_OPS",
    "SolveResult",
    "StepEncoding",
    "Unsupported",
    "Z3Unavailable",
    "encode_step",
    "input_vars",
    "solve_for_branch",
    "state_vars",
]

#: Longest array the encoding accepts (a symbolic index becomes a mux over the elements).
MAX_SYMBOLIC_ARRAY = 1024
#: Largest process() (IR operations after unrolling) the encoding accepts: bounds term depth,
#: which Z3 walks recursively in native code.
MAX_SYMBOLIC_OPS = 20_000


class Unsupported(Exception):
    """The model uses something the symbolic encoding cannot express exactly."""

    def __init__(self, construct: str, line: int = 0) -> None:
        where = f"line {line}: " if line else ""
        super().__init__(f"{where}{construct} is not supported by the Z3 encoding")
        self.construct = construct
        self.line = line


class Z3Unavailable(ImportError):
    """z3 (PyPI ``z3-solver``) is not installed: the symbolic part is unavailable."""


def _z3() -> Any:
    try:
        import z3
    except ImportError as exc:
        raise Z3Unavailable(
            "the Z3 solver is not installed: install the `z3-solver` package "
            "(pip install z3-solver) to use goal-directed stimulus; concrete execution of "
            "behaviour models does not need it") from exc
    return z3


def _width(ty: ExprType) -> int:
    assert isinstance(ty, IntT | EnumT)
    return ty.width


class StepEncoding(NamedTuple):
    """One transaction: outputs and next state (port-typed terms, arrays as lists), the goal
    condition of each branch outcome, and when the transaction fails.

    ``emits`` is the condition under which the transaction returns its output record (a bare
    ``return`` emits none): ``outputs`` mean something only where ``emits`` holds (elsewhere
    they are unconstrained by the model, zero when no path emits). ``cares[name]``: where the
    output is also specified (not returned as ``ANY``); ``outputs[name]`` means something only
    there (no constraint elsewhere). Without ``ANY`` it equals ``emits``."""

    outputs: dict[str, Any]
    next_state: dict[str, Any]
    branches: dict[tuple[int, bool], Any]
    failed: Any
    declared_failures: dict[int, Any]
    emits: Any
    cares: dict[str, Any] = {}  # noqa: RUF012 - a NamedTuple default, never mutated


def _port_var(z3: Any, name: str, port: ScalarType) -> Any:
    if port.kind == "bool":
        return z3.Bool(name)
    return z3.BitVec(name, port.width)


def _vars(model: BehaviorModel, slots: tuple[int, ...], prefix: str) -> dict[str, Any]:
    z3 = _z3()
    out: dict[str, Any] = {}
    for s in slots:
        slot = model.ir.slots[s]
        port = slot.declared
        if isinstance(port, ArrayType):
            out[slot.name] = [_port_var(z3, f"{prefix}{slot.name}[{k}]", port.element)
                              for k in range(port.length)]
        else:
            assert port is not None
            out[slot.name] = _port_var(z3, f"{prefix}{slot.name}", port)
    return out


def state_vars(model: BehaviorModel, prefix: str = "s_") -> dict[str, Any]:
    """Free Z3 variables for every state field (port-typed)."""
    return _vars(model, model.ir.state, prefix)


def input_vars(model: BehaviorModel, prefix: str = "i_") -> dict[str, Any]:
    """Free Z3 variables for every process() parameter (port-typed)."""
    return _vars(model, model.ir.inputs, prefix)


def _constant(z3: Any, port: ScalarType | ArrayType, value: Value) -> Any:
    """A concrete value as a port-typed term."""
    if isinstance(port, ArrayType):
        assert isinstance(value, tuple)
        return [_constant(z3, port.element, v) for v in value]
    if port.kind == "bool":
        return z3.BoolVal(bool(value))
    return z3.BitVecVal(int(value) & ((1 << port.width) - 1), port.width)


def domain_constraints(model: BehaviorModel, values: Mapping[str, Any],
                       slots: tuple[int, ...]) -> list[Any]:
    """Enum-typed variables range over their members only."""
    z3 = _z3()
    out = []
    for s in slots:
        slot = model.ir.slots[s]
        if isinstance(slot.type, EnumT):
            terms = values[slot.name] if slot.length else [values[slot.name]]
            for t in terms:
                out.append(z3.Or(*[t == z3.BitVecVal(v, t.size()) for _, v in slot.type.members]))
    return out


@dataclass
class _Encoder:
    z3: Any
    model: BehaviorModel
    env: list[Any]
    branches: dict[tuple[int, bool], Any] = field(default_factory=dict)
    declared: dict[int, Any] = field(default_factory=dict)
    violations: list[Any] = field(default_factory=list)
    range_failed: Any = None
    returned: Any = None
    emitted: Any = None
    outputs: list[Any] = field(default_factory=list)
    cared: list[Any] = field(default_factory=list)  # per output: emitted and not ANY

    # width helpers
    def fit(self, x: Any, w: int) -> Any:
        n = x.size()
        if n == w:
            return x
        if n < w:
            return self.z3.SignExt(w - n, x)
        return self.z3.Extract(w - 1, 0, x)

    def to_internal(self, term: Any, port: ScalarType) -> Any:
        if port.kind == "bool":
            return term
        return self.z3.ZeroExt(1, term) if port.kind == "uint" else term

    def to_port(self, term: Any, port: ScalarType) -> Any:
        if port.kind == "bool":
            return term
        return self.z3.Extract(port.width - 1, 0, term)

    def merge(self, guard: Any, new: Any, old: Any) -> Any:
        if old is None:
            return new
        if isinstance(new, bool) or self.z3.is_bool(new):
            return self.z3.If(guard, new, old)
        w = max(new.size(), old.size())
        return self.z3.If(guard, self.fit(new, w), self.fit(old, w))

    # expressions
    def expr(self, e: Expr, g: Any) -> Any:
        z3 = self.z3
        if isinstance(e, Const):
            if isinstance(e.ty, BoolT):
                return z3.BoolVal(bool(e.value))
            return z3.BitVecVal(int(e.value), _width(e.ty))
        if isinstance(e, Var):
            v = self.env[e.slot]
            return v if isinstance(e.ty, BoolT) else self.fit(v, _width(e.ty))
        if isinstance(e, UnOp):
            a = self.expr(e.a, g)
            if e.op == "not":
                return z3.Not(a)
            w = max(a.size(), _width(e.ty))
            x = self.fit(a, w)
            return self.fit(-x if e.op == "neg" else ~x, _width(e.ty))
        if isinstance(e, BinOp):
            return self.binop(e, g)
        if isinstance(e, IfExp):
            c = self.expr(e.cond, g)
            a = self.expr(e.a, z3.And(g, c))
            b = self.expr(e.b, z3.And(g, z3.Not(c)))
            if isinstance(e.ty, BoolT):
                return z3.If(c, a, b)
            w = _width(e.ty)
            return z3.If(c, self.fit(a, w), self.fit(b, w))
        if isinstance(e, Call):
            return self.call(e, g)
        if isinstance(e, Index):
            idx = self.expr(e.index, g)
            elems = self.env[e.slot]
            if e.check:
                i = self.fit(idx, max(idx.size(), e.length.bit_length() + 1))
                self.violations.append(z3.And(g, z3.Not(z3.And(i >= 0, i <= e.length - 1))))
            return self.select(elems, idx, e.ty)
        raise TypeError(f"not an IR expression: {e!r}")

    def select(self, elems: list[Any], idx: Any, ty: ExprType) -> Any:
        z3 = self.z3
        items = elems if isinstance(ty, BoolT) else [self.fit(x, _width(ty)) for x in elems]
        if z3.is_bv_value(idx):
            k = idx.as_signed_long()
            return items[k] if 0 <= k < len(items) else items[0]
        w = max(idx.size(), len(items).bit_length() + 1)
        i = self.fit(idx, w)
        out = items[0]
        for k in range(1, len(items)):
            out = z3.If(i == k, items[k], out)
        return out

    def binop(self, e: BinOp, g: Any) -> Any:
        z3 = self.z3
        if e.op in ("land", "lor"):
            a = self.expr(e.a, g)
            b = self.expr(e.b, z3.And(g, a) if e.op == "land" else z3.And(g, z3.Not(a)))
            return z3.And(a, b) if e.op == "land" else z3.Or(a, b)
        a = self.expr(e.a, g)
        b = self.expr(e.b, g)
        if isinstance(e.ty, BoolT):  # comparison
            if z3.is_bool(a):
                return a == b if e.op == "eq" else a != b
            w = max(a.size(), b.size())
            x, y = self.fit(a, w), self.fit(b, w)
            return {"eq": x == y, "ne": x != y, "lt": x < y, "le": x <= y, "gt": x > y,
                    "ge": x >= y}[e.op]
        wr = _width(e.ty)
        w = max(a.size(), b.size(), wr)
        x, y = self.fit(a, w), self.fit(b, w)
        if e.check == "div0":
            self.violations.append(z3.And(g, y == 0))
        elif e.check == "shift":
            self.violations.append(z3.And(g, y < 0))
        op = e.op
        if op in ("floordiv", "mod"):
            ta, tb = e.a.ty, e.b.ty
            if not (isinstance(ta, IntT) and isinstance(tb, IntT) and ta.lo >= 0
                    and tb.lo >= 0):
                raise Unsupported("`//` or `%` with a possibly negative operand", e.line)
            r = z3.UDiv(x, y) if op == "floordiv" else z3.URem(x, y)
        elif op == "add":
            r = x + y
        elif op == "sub":
            r = x - y
        elif op == "mul":
            r = x * y
        elif op == "lshift":
            r = x << y
        elif op == "rshift":
            r = x >> y  # arithmetic shift: Python's >> on signed values
        elif op == "and":
            r = x & y
        elif op == "or":
            r = x | y
        elif op == "xor":
            r = x ^ y
        else:
            raise Unsupported(f"operator {op}", e.line)
        return self.fit(r, wr)

    def call(self, e: Call, g: Any) -> Any:
        z3 = self.z3
        args = [self.expr(a, g) for a in e.args]
        if e.fn == "bit":
            x, i = args
            w = max(x.size(), i.size())
            return z3.Extract(0, 0, self.fit(x, w) >> self.fit(i, w)) == 1
        wr = _width(e.ty)
        if e.fn in ("wrap", "swrap"):
            x = args[0]
            low = z3.Extract(e.width - 1, 0, self.fit(x, max(x.size(), e.width)))
            return self.fit(z3.ZeroExt(1, low) if e.fn == "wrap" else low, wr)
        w = max([wr] + [a.size() for a in args])
        xs = [self.fit(a, w) for a in args]
        if e.fn in ("saturate", "ssaturate"):
            assert isinstance(e.ty, IntT)
            x = xs[0]
            r = z3.If(x > e.ty.hi, z3.BitVecVal(e.ty.hi, w),
                      z3.If(x < e.ty.lo, z3.BitVecVal(e.ty.lo, w), x))
        elif e.fn == "abs":
            r = z3.If(xs[0] < 0, -xs[0], xs[0])
        else:
            r = xs[0]
            for x in xs[1:]:
                r = z3.If(x < r, x, r) if e.fn == "min" else z3.If(x > r, x, r)
        return self.fit(r, wr)

    def array(self, a: ArrayExpr, g: Any) -> list[Any]:
        if isinstance(a, ArrayRef):
            return list(self.env[a.slot])
        if isinstance(a, Fill):
            v = self.expr(a.value, g)
            return [v] * a.length
        assert isinstance(a, ArrayLit)
        return [self.expr(x, g) for x in a.items]

    # statements
    def take_violations(self) -> Any:
        z3 = self.z3
        if not self.violations:
            return z3.BoolVal(False)
        v = z3.Or(*self.violations)
        self.violations = []
        self.range_failed = z3.Or(self.range_failed, v)
        return v

    def block(self, stmts: tuple[Stmt, ...], g: Any) -> Any:
        for s in stmts:
            g = self.stmt(s, g)
        return g

    def in_range(self, v: Any, lo: int, hi: int) -> Any:
        w = max(v.size(), IntT(lo, hi).width)
        x = self.fit(v, w)
        return self.z3.And(x >= lo, x <= hi)

    def stmt(self, s: Stmt, g: Any) -> Any:
        z3 = self.z3
        if isinstance(s, Assign):
            if isinstance(s.value, ArrayRef | ArrayLit | Fill):
                new = self.array(s.value, g)
                ok = z3.And(g, z3.Not(self.take_violations()))
                old = self.env[s.slot]
                self.env[s.slot] = new if old is None else [
                    self.merge(ok, n, o) for n, o in zip(new, old, strict=True)]
                return ok
            v = self.expr(s.value, g)
            if s.check is not None:
                self.violations.append(z3.And(g, z3.Not(self.in_range(v, *s.check))))
            ok = z3.And(g, z3.Not(self.take_violations()))
            self.env[s.slot] = self.merge(ok, v, self.env[s.slot])
            return ok
        if isinstance(s, Store):
            idx = self.expr(s.index, g)
            v = self.expr(s.value, g)
            w = max(idx.size(), s.length.bit_length() + 1)
            i = self.fit(idx, w)
            if s.index_check:
                self.violations.append(z3.And(g, z3.Not(z3.And(i >= 0, i <= s.length - 1))))
            if s.check is not None:
                self.violations.append(z3.And(g, z3.Not(self.in_range(v, *s.check))))
            ok = z3.And(g, z3.Not(self.take_violations()))
            elems = self.env[s.slot]
            self.env[s.slot] = [self.merge(z3.And(ok, i == k), v, old)
                                for k, old in enumerate(elems)]
            return ok
        if isinstance(s, If):
            c = self.expr(s.cond, g)
            ok = z3.And(g, z3.Not(self.take_violations()))
            taken_t, taken_f = z3.And(ok, c), z3.And(ok, z3.Not(c))
            for outcome, cond in ((True, taken_t), (False, taken_f)):
                key = (s.site, outcome)
                self.branches[key] = cond if key not in self.branches \
                    else z3.Or(self.branches[key], cond)
            env_before = list(self.env)
            g_then = self.block(s.then, taken_t)
            env_then = self.env
            self.env = env_before
            g_else = self.block(s.orelse, taken_f)
            env_else = self.env
            merged = []
            for a, b in zip(env_then, env_else, strict=True):
                if a is b:
                    merged.append(a)
                elif isinstance(a, list):
                    merged.append([x if x is y else self.merge(taken_t, x, y)
                                   for x, y in zip(a, b, strict=True)])
                elif b is None:
                    merged.append(a)
                elif a is None:
                    merged.append(b)
                else:
                    merged.append(self.merge(taken_t, a, b))
            self.env = merged
            return z3.Or(g_then, g_else)
        if isinstance(s, Return):
            values = []
            for value, check in zip(s.values, s.checks, strict=True):
                if isinstance(value, DontCareValue):
                    values.append(None)
                elif isinstance(value, ArrayRef | ArrayLit | Fill):
                    values.append(self.array(value, g))
                else:
                    v = self.expr(value, g)
                    if check is not None:
                        self.violations.append(z3.And(g, z3.Not(self.in_range(v, *check))))
                    values.append(v)
            ok = z3.And(g, z3.Not(self.take_violations()))
            self.returned = z3.Or(self.returned, ok)
            if not s.emits:  # a bare `return`: control ends here, no output record
                return z3.BoolVal(False)
            self.emitted = z3.Or(self.emitted, ok)
            for k, v in enumerate(values):
                if v is None:  # ANY: no constraint on this output where this return is taken
                    continue
                self.cared[k] = z3.Or(self.cared[k], ok)
                old = self.outputs[k]
                if isinstance(v, list):
                    self.outputs[k] = v if old is None else [
                        self.merge(ok, x, y) for x, y in zip(v, old, strict=True)]
                else:
                    self.outputs[k] = self.merge(ok, v, old)
            return z3.BoolVal(False)
        if isinstance(s, Fail):
            prev = self.declared.get(s.site)
            self.declared[s.site] = g if prev is None else z3.Or(prev, g)
            return z3.BoolVal(False)
        raise TypeError(f"not an IR statement: {s!r}")


def _check_supported(model: BehaviorModel) -> None:
    if model.ir.process.ops > MAX_SYMBOLIC_OPS:
        raise Unsupported(f"a process() of {model.ir.process.ops} IR operations "
                          f"(> {MAX_SYMBOLIC_OPS})")
    for slot in model.ir.slots:
        if slot.length > MAX_SYMBOLIC_ARRAY:
            raise Unsupported(f"array `{slot.name}` of {slot.length} elements "
                              f"(> {MAX_SYMBOLIC_ARRAY})")


def encode_step(model: BehaviorModel, state: Mapping[str, Any],
                inputs: Mapping[str, Any] | None = None) -> StepEncoding:
    """Encode one ``process`` call from the port-typed state terms ``state`` (see
    :func:`state_vars`) and inputs (fresh :func:`input_vars` when omitted)."""
    z3 = _z3()
    _check_supported(model)
    ir = model.ir
    if inputs is None:
        inputs = input_vars(model)
    env: list[Any] = [None] * len(ir.slots)
    for role_slots, values in ((ir.state, state), (ir.inputs, inputs)):
        for s in role_slots:
            slot = ir.slots[s]
            port = slot.declared
            enc = _Encoder(z3, model, env)
            if isinstance(port, ArrayType):
                env[s] = [enc.to_internal(t, port.element) for t in values[slot.name]]
            else:
                assert port is not None
                env[s] = enc.to_internal(values[slot.name], port)
    enc = _Encoder(z3, model, env, range_failed=z3.BoolVal(False),
                   returned=z3.BoolVal(False), emitted=z3.BoolVal(False),
                   outputs=[None] * len(ir.outputs),
                   cared=[z3.BoolVal(False)] * len(ir.outputs))
    enc.block(ir.process.body, z3.BoolVal(True))
    outputs: dict[str, Any] = {}
    for (name, port, ty), term in zip(ir.outputs, enc.outputs, strict=True):
        if term is None:  # no path emits a record: the outputs are never observed
            outputs[name] = _constant(z3, port, _zero(port))
        elif isinstance(port, ArrayType):
            width = None if isinstance(ty, BoolT) else _width(ty)
            outputs[name] = [enc.to_port(t if width is None else enc.fit(t, width), port.element)
                             for t in term]
        else:
            outputs[name] = enc.to_port(term if isinstance(ty, BoolT)
                                        else enc.fit(term, _width(ty)), port)
    next_state: dict[str, Any] = {}
    for s in ir.state:
        slot = ir.slots[s]
        port = slot.declared
        if isinstance(port, ArrayType):
            next_state[slot.name] = [
                enc.to_port(t if isinstance(slot.type, BoolT) else
                            enc.fit(t, _width(slot.type)), port.element)  # type: ignore[arg-type]
                for t in enc.env[s]]
        else:
            assert port is not None
            t = enc.env[s]
            next_state[slot.name] = enc.to_port(
                t if isinstance(slot.type, BoolT) else enc.fit(t, _width(slot.type)),  # type: ignore[arg-type]
                port)
    branches = {(site.id, outcome): enc.branches.get((site.id, outcome), z3.BoolVal(False))
                for site in ir.branches for outcome in (True, False)}
    failed = z3.Or(enc.range_failed, *enc.declared.values()) if enc.declared \
        else enc.range_failed
    cares = {name: z3.simplify(c) for (name, _, _), c in zip(ir.outputs, enc.cared, strict=True)}
    return StepEncoding(outputs, next_state, branches, z3.simplify(failed), dict(enc.declared),
                        z3.simplify(enc.emitted), cares)


def _zero(port: ScalarType | ArrayType) -> Value:
    if isinstance(port, ArrayType):
        return tuple(_zero(port.element) for _ in range(port.length))
    return False if port.kind == "bool" else 0


# ---- goal-directed search ----------------------------------------------------------------

Status = Literal["hit", "unreachable", "unknown", "discarded", "unsupported"]


@dataclass
class SolveResult:
    """The outcome of one goal search. ``hit``: ``inputs`` (one dict per transaction, from the
    start state) reached the goal on the interpreter. ``unreachable``: no sequence of at most
    ``steps`` transactions reaches it (bounded). ``unknown``: a query timed out.
    ``discarded``: the solver's answer did not hit the goal when replayed (a bug; reported).
    ``unsupported``: the model is outside the encoding (``reason`` says why)."""

    status: Status
    goal: tuple[int, bool]
    inputs: list[dict[str, Value]] = field(default_factory=list)
    steps: int = 0
    query_ms: list[float] = field(default_factory=list)
    reason: str = ""


def _value_of(z3: Any, model: Any, term: Any, port: ScalarType) -> Value:
    v = model.eval(term, model_completion=True)
    if port.kind == "bool":
        return bool(z3.is_true(v))
    bits = v.as_long()
    if port.kind == "sint" and bits >> (port.width - 1):
        return bits - (1 << port.width)
    return int(bits)


def _goal_key(model: BehaviorModel, goal: Goal | tuple[int, bool] | str) -> tuple[int, bool]:
    if isinstance(goal, str):
        for g in model.goals():
            if g.name == goal:
                return (g.site, g.outcome)
        raise ValueError(f"no goal named {goal!r}")
    if isinstance(goal, tuple):
        return goal
    return (goal.site, goal.outcome)


def solve_for_branch(model: BehaviorModel, goal: Goal | tuple[int, bool] | str, *,
                     state: Mapping[str, Value] | None = None, steps: int = 1,
                     timeout_ms: int = 1000) -> SolveResult:
    """Ask Z3 for a sequence of at most ``steps`` transactions from ``state`` (default: the
    reset state) whose last one takes branch outcome ``goal``; shortest first, each query
    capped at ``timeout_ms``. An answer counts only if replaying it on the interpreter hits
    the goal."""
    z3 = _z3()
    key = _goal_key(model, goal)
    if not 0 <= key[0] < len(model.ir.branches):
        raise ValueError(f"no branch site {key[0]}")
    if steps < 1:
        raise ValueError("steps must be >= 1")
    start = model.instance()
    if state is not None:
        start.load_state(state)
    start_state = start.state()
    ports = model.state_fields
    current = {name: _constant(z3, ports[name], value) for name, value in start_state.items()}
    solver = z3.Solver()
    result = SolveResult(status="unreachable", goal=key)
    step_inputs: list[dict[str, Any]] = []
    try:
        for k in range(steps):
            ins = input_vars(model, prefix=f"t{k}_")
            for c in domain_constraints(model, ins, model.ir.inputs):
                solver.add(c)
            enc = encode_step(model, current, ins)
            step_inputs.append(ins)
            solver.push()
            solver.add(enc.branches[key])
            solver.set("timeout", int(timeout_ms))
            t0 = time.perf_counter()
            answer = solver.check()
            result.query_ms.append((time.perf_counter() - t0) * 1000.0)
            if answer == z3.sat:
                m = solver.model()
                model_inputs = model.inputs
                sequence = []
                for ins_k in step_inputs:
                    seq_k: dict[str, Value] = {}
                    for name, port in model_inputs.items():
                        if isinstance(port, ArrayType):
                            seq_k[name] = tuple(_value_of(z3, m, t, port.element)
                                                for t in ins_k[name])
                        else:
                            seq_k[name] = _value_of(z3, m, ins_k[name], port)
                    sequence.append(seq_k)
                return _replay(model, key, start_state, sequence, result)
            solver.pop()
            if answer == z3.unknown:
                result.status = "unknown"
                result.reason = f"query {k + 1} timed out ({solver.reason_unknown()})"
                result.steps = k + 1
                return result
            solver.add(z3.Not(enc.failed))  # earlier transactions of a sequence succeed
            current = enc.next_state
    except Unsupported as exc:
        result.status = "unsupported"
        result.reason = str(exc)
        return result
    result.steps = steps
    result.reason = f"no sequence of at most {steps} transaction(s) reaches the goal"
    return result


def _replay(model: BehaviorModel, key: tuple[int, bool], start_state: Mapping[str, Value],
            sequence: list[dict[str, Value]], result: SolveResult) -> SolveResult:
    replay = model.instance()
    replay.load_state(start_state)
    replay.clear_coverage()
    for inputs in sequence[:-1]:
        replay.process(inputs)
    replay.clear_coverage()
    replay.process(sequence[-1])
    result.inputs = sequence
    result.steps = len(sequence)
    if key in replay.hit_goals():
        result.status = "hit"
    else:
        result.status = "discarded"
        result.reason = "the solver's answer did not reach the goal when replayed"
    return result
