"""The concrete interpreter: the IR compiled once to nested Python closures over a frame list.

No model text is ever executed: each IR node becomes a small closure built here (constants and
slot numbers are the only things taken from the model), so a transaction is a handful of
closure calls over a list (state, inputs, locals in fixed slots). Coverage is a ``bytearray``
with one cell per branch outcome, set by the ``If`` closure (one store per branch taken).
Runtime range checks exist only where the lowering could not prove a width; a failed one ends
the transaction with ``Failure(kind="range")``. State updates made before a failure are kept
(as in hardware: the transaction ran up to that point).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from typing import Any

from rtlforge.behave.base import DONT_CARE, Failure, Outputs
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
    Fail,
    Fill,
    If,
    IfExp,
    Index,
    IntT,
    ModelIR,
    Return,
    Slot,
    Stmt,
    Store,
    UnOp,
    Var,
)
from rtlforge.behave.types import Value

__all__ = ["Instance"]

Frame = list[Any]
_Run = Callable[[Frame], Any]

_INT_FNS: dict[str, Callable[[Any, Any], Any]] = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul,
    "floordiv": operator.floordiv, "mod": operator.mod, "lshift": operator.lshift,
    "rshift": operator.rshift, "and": operator.and_, "or": operator.or_, "xor": operator.xor,
    "eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le,
    "gt": operator.gt, "ge": operator.ge,
}


class _Fault(Exception):
    """A runtime range failure inside an expression (raised, caught by ``process``)."""


def _expr(e: Expr) -> _Run:
    if isinstance(e, Const):
        value = e.value
        return lambda f: value
    if isinstance(e, Var):
        return operator.itemgetter(e.slot)
    if isinstance(e, UnOp):
        a = _expr(e.a)
        if e.op == "not":
            return lambda f: not a(f)
        fn = operator.neg if e.op == "neg" else operator.invert
        return lambda f: fn(a(f))
    if isinstance(e, BinOp):
        return _binop(e)
    if isinstance(e, IfExp):
        c, a, b = _expr(e.cond), _expr(e.a), _expr(e.b)
        return lambda f: a(f) if c(f) else b(f)
    if isinstance(e, Call):
        return _call(e)
    if isinstance(e, Index):
        slot, length, i = e.slot, e.length, _expr(e.index)
        if not e.check:
            return lambda f: f[slot][i(f)]
        message = f"line {e.line}: index out of range [0, {length - 1}]"

        def checked_index(f: Frame) -> Any:
            k = i(f)
            if 0 <= k < length:
                return f[slot][k]
            raise _Fault(f"{message}: {k}")
        return checked_index
    raise TypeError(f"not an IR expression: {e!r}")


def _binop(e: BinOp) -> _Run:
    a = _expr(e.a)
    if e.op == "land":
        b = _expr(e.b)
        return lambda f: a(f) and b(f)
    if e.op == "lor":
        b = _expr(e.b)
        return lambda f: a(f) or b(f)
    fn = _INT_FNS[e.op]
    if e.check:
        b = _expr(e.b)
        what = "division by zero" if e.check == "div0" else "negative shift count"
        message = f"line {e.line}: {what}"
        bad = (lambda d: d == 0) if e.check == "div0" else (lambda d: d < 0)

        def checked(f: Frame) -> Any:
            x, d = a(f), b(f)
            if bad(d):
                raise _Fault(message)
            return fn(x, d)
        return checked
    if isinstance(e.b, Const):
        c = e.b.value
        if isinstance(e.a, Var):
            slot = e.a.slot
            return lambda f: fn(f[slot], c)
        return lambda f: fn(a(f), c)
    b = _expr(e.b)
    if isinstance(e.a, Var) and isinstance(e.b, Var):
        sa, sb = e.a.slot, e.b.slot
        return lambda f: fn(f[sa], f[sb])
    return lambda f: fn(a(f), b(f))


def _call(e: Call) -> _Run:
    args = [_expr(x) for x in e.args]
    if e.fn == "wrap":
        x, mask = args[0], (1 << e.width) - 1
        return lambda f: x(f) & mask
    if e.fn == "swrap":
        x, mask, sign, full = args[0], (1 << e.width) - 1, 1 << (e.width - 1), 1 << e.width

        def swrap(f: Frame) -> int:
            v = x(f) & mask
            return v - full if v & sign else v
        return swrap
    if e.fn in ("saturate", "ssaturate"):
        x = args[0]
        assert isinstance(e.ty, IntT)
        lo, hi = e.ty.lo, e.ty.hi
        return lambda f: min(max(x(f), lo), hi)
    if e.fn == "bit":
        x, i = args
        return lambda f: bool((x(f) >> i(f)) & 1)
    if e.fn == "abs":
        x = args[0]
        return lambda f: abs(x(f))
    pick = min if e.fn == "min" else max
    if len(args) == 2:
        p, q = args
        return lambda f: pick(p(f), q(f))
    return lambda f: pick([g(f) for g in args])


def _array(a: ArrayExpr) -> _Run:
    """An array value as a fresh list (arrays are copied on assignment)."""
    if isinstance(a, ArrayRef):
        slot = a.slot
        return lambda f: list(f[slot])
    if isinstance(a, Fill):
        v, n = _expr(a.value), a.length
        return lambda f: [v(f)] * n
    items = [_expr(x) for x in a.items]
    return lambda f: [g(f) for g in items]


def _range_failure(line: int, what: str, lo: int, hi: int, value: Any) -> Failure:
    return Failure(reason=f"line {line}: {value} does not fit {what} [{lo}, {hi}] (use wrap() "
                   "or saturate())", kind="range")


class _Compiler:
    def __init__(self, ir: ModelIR, coverage: bytearray) -> None:
        self.ir = ir
        self.coverage = coverage
        self.failures = [Failure(reason=site.reason) for site in ir.fails]

    def block(self, stmts: tuple[Stmt, ...]) -> _Run:
        runs = [self.stmt(s) for s in stmts]
        if not runs:
            return lambda f: None
        if len(runs) == 1:
            return runs[0]

        def run(f: Frame) -> Any:
            for r in runs:
                out = r(f)
                if out is not None:
                    return out
            return None
        return run

    def stmt(self, s: Stmt) -> _Run:
        if isinstance(s, Assign):
            slot = s.slot
            if isinstance(s.value, ArrayRef | ArrayLit | Fill):
                arr = _array(s.value)

                def assign_array(f: Frame) -> None:
                    f[slot] = arr(f)
                return assign_array
            value = _expr(s.value)
            if s.check is None:
                def assign(f: Frame) -> None:
                    f[slot] = value(f)
                return assign
            lo, hi = s.check
            line, what = s.line, s.what

            def assign_checked(f: Frame) -> Failure | None:
                v = value(f)
                if lo <= v <= hi:
                    f[slot] = v
                    return None
                return _range_failure(line, what, lo, hi, v)
            return assign_checked
        if isinstance(s, Store):
            slot, length, index, value = s.slot, s.length, _expr(s.index), _expr(s.value)
            check, index_check, line, what = s.check, s.index_check, s.line, s.what

            def store(f: Frame) -> Failure | None:
                k, v = index(f), value(f)
                if index_check and not 0 <= k < length:
                    return Failure(reason=f"line {line}: index {k} out of range "
                                   f"[0, {length - 1}]", kind="range")
                if check is not None and not check[0] <= v <= check[1]:
                    return _range_failure(line, what, check[0], check[1], v)
                f[slot][k] = v
                return None
            return store
        if isinstance(s, If):
            cond, then, orelse = _expr(s.cond), self.block(s.then), self.block(s.orelse)
            cov, t, e = self.coverage, 2 * s.site + 1, 2 * s.site

            def branch(f: Frame) -> Any:
                if cond(f):
                    cov[t] = 1
                    return then(f)
                cov[e] = 1
                return orelse(f)
            return branch
        if isinstance(s, Return):
            return self.ret(s)
        if isinstance(s, Fail):
            failure = self.failures[s.site]
            return lambda f: failure
        raise TypeError(f"not an IR statement: {s!r}")

    def ret(self, s: Return) -> _Run:
        if not s.emits:
            return lambda f: {}  # a fresh empty mapping: no output this transaction
        names = [name for name, _, _ in self.ir.outputs]
        values: list[_Run] = []
        for v in s.values:
            if isinstance(v, DontCareValue):
                values.append(lambda f: DONT_CARE)
            elif isinstance(v, ArrayRef | ArrayLit | Fill):
                arr = _array(v)
                values.append(lambda f, arr=arr: tuple(arr(f)))
            else:
                values.append(_expr(v))
        checks = list(s.checks)
        line = s.line
        if all(c is None for c in checks):
            pairs = list(zip(names, values, strict=True))
            return lambda f: {n: g(f) for n, g in pairs}

        def ret_checked(f: Frame) -> Any:
            out: dict[str, Any] = {}
            for n, g, c in zip(names, values, checks, strict=True):
                v = g(f)
                if c is not None and not c[0] <= v <= c[1]:
                    return _range_failure(line, f"output `{n}`", c[0], c[1], v)
                out[n] = v
            return out
        return ret_checked


def _input_check(slot: Slot) -> Callable[[Any], bool]:
    """A cheap validity test for one input value (a caller bug if it fails)."""
    ty = slot.type
    if isinstance(ty, BoolT):
        scalar: Callable[[Any], bool] = lambda v: type(v) is bool  # noqa: E731
    else:
        assert isinstance(ty, IntT | EnumT)
        lo, hi = ty.lo, ty.hi
        members = {v for _, v in ty.members} if isinstance(ty, EnumT) else None
        if members is None:
            scalar = lambda v: type(v) is int and lo <= v <= hi  # noqa: E731
        else:
            scalar = lambda v: type(v) is int and v in members  # noqa: E731
    if not slot.length:
        return scalar
    n = slot.length
    return lambda v: type(v) is tuple and len(v) == n and all(scalar(x) for x in v)


class Instance:
    """A running behaviour model: :class:`~rtlforge.behave.base.ModelInstance` plus coverage
    and state snapshots (what the Z3 replay and the simulator need)."""

    def __init__(self, ir: ModelIR) -> None:
        self.ir = ir
        self.coverage = bytearray(2 * len(ir.branches))
        compiler = _Compiler(ir, self.coverage)
        self._reset = compiler.block(ir.reset.body)
        self._process = compiler.block(ir.process.body)
        self._inputs = [(ir.slots[s].name, s, bool(ir.slots[s].length),
                         _input_check(ir.slots[s])) for s in ir.inputs]
        self._state_checks = {ir.slots[s].name: (s, _input_check(ir.slots[s]))
                              for s in ir.state}
        self._frame: Frame = [None] * len(ir.slots)
        self.reset()

    def reset(self) -> None:
        self._frame = [None] * len(self.ir.slots)
        self._reset(self._frame)

    def process(self, inputs: Mapping[str, Value]) -> Outputs | Failure:
        f = self._frame
        if len(inputs) != len(self._inputs):
            raise ValueError(f"expected inputs {[n for n, *_ in self._inputs]}, got "
                             f"{sorted(inputs)}")
        for name, slot, is_array, valid in self._inputs:
            try:
                v = inputs[name]
            except KeyError:
                raise ValueError(f"missing input {name!r}") from None
            if not valid(v):
                raise ValueError(f"input {name!r}: {v!r} is not a value of its type")
            f[slot] = list(v) if is_array else v  # type: ignore[arg-type]
        try:
            out = self._process(f)
        except _Fault as fault:
            return Failure(reason=str(fault), kind="range")
        return out  # type: ignore[no-any-return]

    def state(self) -> dict[str, Value]:
        """The current state fields (arrays as tuples), e.g. to start a solver query from."""
        return {self.ir.slots[s].name: (tuple(self._frame[s]) if self.ir.slots[s].length
                                        else self._frame[s]) for s in self.ir.state}

    def load_state(self, state: Mapping[str, Value]) -> None:
        """Set every state field (the inverse of :meth:`state`)."""
        if set(state) != set(self._state_checks):
            raise ValueError(f"expected state fields {sorted(self._state_checks)}")
        for name, (slot, valid) in self._state_checks.items():
            v = state[name]
            if not valid(v):
                raise ValueError(f"state {name!r}: {v!r} is not a value of its type")
            self._frame[slot] = list(v) if self.ir.slots[slot].length else v  # type: ignore[arg-type]

    def hit_goals(self) -> set[tuple[int, bool]]:
        """Branch outcomes taken since construction (or :meth:`clear_coverage`)."""
        return {(i // 2, bool(i % 2)) for i, hit in enumerate(self.coverage) if hit}

    def clear_coverage(self) -> None:
        self.coverage[:] = bytes(len(self.coverage))
