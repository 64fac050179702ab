"""Lowering: a checked model AST to the Behavior IR, with typing on the way.

The lowering is where the DSL's meaning is fixed: names resolve (constants, enums, records, the
one Model class, state fields, parameters, locals), every integer expression gets its interval,
``for i in range(CONST)`` is unrolled with ``i`` a constant (so bounds, widths and array indices
stay static), and width rules are decided: an assignment whose value interval lies inside the
target's range needs nothing, one that can never fit is a :class:`ModelError`, and one that may
or may not fit gets a runtime range check (a ``Failure`` of kind ``range``). Definite assignment
is checked on every path (locals before use, every state field in ``reset``, a return or fail at
the end of ``process``).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from rtlforge.behave.model import dsl
from rtlforge.behave.model.checker import MAX_OPS, MAX_RANGE, MAX_WIDTH, ModelError
from rtlforge.behave.model.ir import (
    COMPARE_OPS,
    INT_OPS,
    ArrayExpr,
    ArrayLit,
    ArrayRef,
    Assign,
    BinOp,
    BoolT,
    BranchSite,
    Call,
    Const,
    DontCareValue,
    EnumT,
    Expr,
    ExprType,
    Fail,
    FailSite,
    Fill,
    Function,
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
    width_fn,
)
from rtlforge.behave.types import ArrayType, ScalarType

__all__ = ["lower_module"]

_BIN = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.FloorDiv: "floordiv",
        ast.Mod: "mod", ast.LShift: "lshift", ast.RShift: "rshift", ast.BitAnd: "and",
        ast.BitOr: "or", ast.BitXor: "xor"}
_CMP = {ast.Eq: "eq", ast.NotEq: "ne", ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge"}
_BOOL = BoolT()


def _err(node: ast.AST, construct: str, message: str) -> ModelError:
    return ModelError(getattr(node, "lineno", 1), getattr(node, "col_offset", 0), construct,
                      message)


def _type_name(ty: ExprType) -> str:
    if isinstance(ty, BoolT):
        return "Bool"
    if isinstance(ty, EnumT):
        return ty.name
    return f"an integer in [{ty.lo}, {ty.hi}]"


# ---- declared types ----------------------------------------------------------------------

@dataclass(frozen=True)
class _Scalar:
    ty: ExprType
    port: ScalarType
    text: str


@dataclass(frozen=True)
class _Array:
    elem: _Scalar
    length: int

    @property
    def port(self) -> ArrayType:
        return ArrayType(element=self.elem.port, length=self.length)


@dataclass(frozen=True)
class _Record:
    name: str
    fields: tuple[tuple[str, _Scalar | _Array], ...]


_Decl = _Scalar | _Array | _Record


def _scalar_int(kind: str, width: int) -> _Scalar:
    port = ScalarType(kind=kind, width=width)  # type: ignore[arg-type]
    name = "UInt" if kind == "uint" else "SInt"
    return _Scalar(IntT(port.lo, port.hi), port, f"{name}[{width}]")


# ---- module level ------------------------------------------------------------------------

@dataclass
class _Module:
    constants: dict[str, int] = field(default_factory=dict)
    enums: dict[str, EnumT] = field(default_factory=dict)
    records: dict[str, _Record] = field(default_factory=dict)

    def const(self, node: ast.expr, loop: dict[str, int] | None = None) -> int:
        """A compile-time integer (constants, loop indices, literals, arithmetic) with width
        caps."""
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return node.value
        if isinstance(node, ast.Name) and loop and node.id in loop:
            return loop[node.id]
        if isinstance(node, ast.Name) and node.id in self.constants:
            return self.constants[node.id]
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.Invert):
            v = self.const(node.operand, loop)
            return -v if isinstance(node.op, ast.USub) else ~v
        if isinstance(node, ast.BinOp):
            a, b = self.const(node.left, loop), self.const(node.right, loop)
            if isinstance(node.op, ast.Pow):
                if b < 0 or b * max(1, a.bit_length()) > MAX_WIDTH:
                    raise _err(node, "literal", f"constant wider than {MAX_WIDTH} bits")
                return int(a ** b)
            op = _BIN.get(type(node.op))
            if op is None:
                raise _err(node, "operator", "unsupported operator in a constant")
            if op == "lshift" and not 0 <= b <= MAX_WIDTH:
                raise _err(node, "literal", f"constant shift outside [0, {MAX_WIDTH}]")
            if op == "rshift" and b < 0:
                raise _err(node, "literal", "negative shift count")
            if op in ("floordiv", "mod") and b == 0:
                raise _err(node, "div0", "constant division by zero")
            value = INT_OPS[op](a, b)
            if value.bit_length() > MAX_WIDTH:
                raise _err(node, "literal", f"constant wider than {MAX_WIDTH} bits")
            return value
        raise _err(node, "constant", "expected a constant integer expression")

    def decl(self, node: ast.expr, *, records: bool = True) -> _Decl:
        if isinstance(node, ast.Name):
            if node.id == "Bool":
                return _Scalar(_BOOL, ScalarType(kind="bool", width=1), "Bool")
            if node.id in self.enums:
                enum = self.enums[node.id]
                return _Scalar(enum, ScalarType(kind="uint", width=max(1, enum.hi.bit_length())),
                               enum.name)
            if node.id in self.records and records:
                return self.records[node.id]
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
            ctor = node.value.id
            if ctor in ("UInt", "SInt"):
                width = self.const(node.slice)
                if not 1 <= width <= MAX_WIDTH:
                    raise _err(node, "type", f"{ctor} width must be in [1, {MAX_WIDTH}]")
                return _scalar_int("uint" if ctor == "UInt" else "sint", width)
            if ctor == "Array":
                parts = node.slice
                if not isinstance(parts, ast.Tuple) or len(parts.elts) != 2:
                    raise _err(node, "type", "Array takes [ElementType, LENGTH]")
                elem = self.decl(parts.elts[0], records=False)
                if not isinstance(elem, _Scalar):
                    raise _err(node, "type", "Array elements must be scalars")
                length = self.const(parts.elts[1])
                if not 1 <= length <= 65536:
                    raise _err(node, "type", "Array length must be in [1, 65536]")
                return _Array(elem, length)
        raise _err(node, "type", f"`{ast.unparse(node)}` is not a DSL type "
                   "(UInt[W], SInt[W], Bool, Array[T, N], an Enum or a Record)")


def _base_name(cls: ast.ClassDef) -> str:
    if len(cls.bases) != 1 or not isinstance(cls.bases[0], ast.Name) \
            or cls.bases[0].id not in dsl.BASE_NAMES:
        raise _err(cls, "class", f"class `{cls.name}` must derive from exactly one of "
                   "Model, Record, Enum")
    return cls.bases[0].id


def _body_without_docstring(body: list[ast.stmt]) -> list[ast.stmt]:
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        return body[1:]
    return body


# ---- functions ---------------------------------------------------------------------------

@dataclass(frozen=True)
class _Local:
    slot: int
    ty: ExprType
    length: int = 0  # > 0: an array local of ``ty`` elements


@dataclass
class _Flow:
    """What is known at a program point: bound names and definitely assigned state slots."""

    env: dict[str, _Local | Const]
    assigned: set[int]
    terminated: bool = False

    def copy(self) -> _Flow:
        return _Flow(dict(self.env), set(self.assigned), self.terminated)


def _join_types(a: ExprType, b: ExprType) -> ExprType | None:
    if isinstance(a, IntT) and isinstance(b, IntT):
        return IntT(min(a.lo, b.lo), max(a.hi, b.hi))
    return a if a == b else None


class _Lowering:
    def __init__(self, module: _Module, model: ast.ClassDef) -> None:
        self.module = module
        self.model = model
        self.slots: list[Slot] = []
        self.state_fields: dict[str, _Scalar | _Array | _Record] = {}
        self.state_slots: dict[str, int] = {}  # "field" or "record.field" -> slot
        self.branch_sites: list[BranchSite] = []
        self.fail_sites: list[FailSite] = []
        self.site_of: dict[int, int] = {}
        self.fail_of: dict[int, int] = {}
        self.ops = 0
        self.function = ""
        self.local_slots: dict[str, int] = {}
        self.annotated: dict[str, _Local] = {}
        self.params: set[str] = set()
        self.output_record = _Record("", ())

    @staticmethod
    def loop_indices(flow: _Flow) -> dict[str, int]:
        return {k: int(v.value) for k, v in flow.env.items() if isinstance(v, Const)}

    # slots
    def new_slot(self, name: str, role: str, ty: ExprType | None, length: int = 0,
                 declared: ScalarType | ArrayType | None = None) -> int:
        index = len(self.slots)
        self.slots.append(Slot(index, name, role, ty, length, declared))
        return index

    def count(self, node: ast.AST, n: int = 1) -> None:
        self.ops += n
        if self.ops > MAX_OPS:
            raise _err(node, "size", f"`{self.function}` exceeds {MAX_OPS} operations after "
                       "unrolling loops (the per-call op budget)")

    # expressions
    def int_expr(self, node: ast.expr, flow: _Flow) -> tuple[Expr, IntT]:
        e = self.expr(node, flow)
        if not isinstance(e.ty, IntT):
            raise _err(node, "type", f"expected an integer, got {_type_name(e.ty)}")
        return e, e.ty

    def bool_expr(self, node: ast.expr, flow: _Flow) -> Expr:
        e = self.expr(node, flow)
        if not isinstance(e.ty, BoolT):
            raise _err(node, "type", f"expected a Bool condition, got {_type_name(e.ty)} "
                       "(compare explicitly, e.g. x != 0)")
        return e

    def _checked_width(self, node: ast.AST, ty: IntT) -> IntT:
        if ty.width > MAX_WIDTH + 1:
            raise _err(node, "width", f"the expression may need more than {MAX_WIDTH} bits: "
                       "wrap() or saturate() an operand")
        return ty

    def state_ref(self, node: ast.Attribute, flow: _Flow) -> tuple[int, _Scalar | _Array]:
        """``self.f`` / ``self.rec.f`` -> (slot, declared type)."""
        if isinstance(node.value, ast.Name) and node.value.id == "self":
            key = node.attr
        elif isinstance(node.value, ast.Attribute) and isinstance(node.value.value, ast.Name) \
                and node.value.value.id == "self":
            key = f"{node.value.attr}.{node.attr}"
        else:
            raise _err(node, "attribute", f"`{ast.unparse(node)}`: attribute access is only "
                       "allowed on self.<state>, self.<record>.<field> and Enum.<member>")
        if key not in self.state_slots:
            if key in self.state_fields:
                raise _err(node, "type", f"`self.{key}` is a record: use its fields")
            raise _err(node, "name", f"`self.{key}` is not a declared state field")
        slot = self.state_slots[key]
        s = self.slots[slot]
        assert s.type is not None
        decl: _Scalar | _Array
        if s.length:
            decl = _Array(_Scalar(s.type, s.declared.element, ""), s.length)  # type: ignore[union-attr]
        else:
            decl = _Scalar(s.type, s.declared, "")  # type: ignore[arg-type]
        return slot, decl

    def array_source(self, node: ast.expr, flow: _Flow) -> tuple[int, ExprType, int] | None:
        """(slot, element type, length) when ``node`` names an array, else None."""
        if isinstance(node, ast.Name):
            bound = flow.env.get(node.id)
            if isinstance(bound, _Local) and bound.length:
                return bound.slot, bound.ty, bound.length
            return None
        if isinstance(node, ast.Attribute):
            try:
                slot, decl = self.state_ref(node, flow)
            except ModelError:
                return None
            if isinstance(decl, _Array):
                self.require_assigned(node, slot, flow)
                return slot, decl.elem.ty, decl.length
        return None

    def require_assigned(self, node: ast.AST, slot: int, flow: _Flow) -> None:
        if self.slots[slot].role == "state" and slot not in flow.assigned:
            raise _err(node, "reset", f"`self.{self.slots[slot].name}` is read before reset "
                       "assigns it")

    def expr(self, node: ast.expr, flow: _Flow) -> Expr:
        self.count(node)
        if isinstance(node, ast.Constant):
            if type(node.value) is bool:
                return Const(_BOOL, node.value)
            if type(node.value) is int:
                return Const(IntT(node.value, node.value), node.value)
            raise _err(node, "literal", "only integer and bool literals are expressions")
        if isinstance(node, ast.Name):
            bound = flow.env.get(node.id)
            if isinstance(bound, Const):
                return bound
            if isinstance(bound, _Local):
                if bound.length:
                    raise _err(node, "type", f"`{node.id}` is an array: index it")
                return Var(bound.ty, bound.slot)
            if node.id in self.module.constants:
                v = self.module.constants[node.id]
                return Const(IntT(v, v), v)
            if node.id in self.local_slots:
                raise _err(node, "unassigned", f"`{node.id}` may be used before it is assigned "
                           "(assign it on every path)")
            if node.id == dsl.ANY_NAME:
                raise _err(node, "any", "`ANY` (don't care) is only a field value of the "
                           "returned record, e.g. `return R(data=ANY, ...)`")
            raise _err(node, "name", f"unknown name `{node.id}`")
        if isinstance(node, ast.Attribute):
            if isinstance(node.value, ast.Name) and node.value.id in self.module.enums:
                enum = self.module.enums[node.value.id]
                for member, value in enum.members:
                    if member == node.attr:
                        return Const(enum, value)
                raise _err(node, "name", f"`{node.value.id}` has no member `{node.attr}`")
            slot, decl = self.state_ref(node, flow)
            if isinstance(decl, _Array):
                raise _err(node, "type", f"`{ast.unparse(node)}` is an array: index it")
            self.require_assigned(node, slot, flow)
            return Var(decl.ty, slot)
        if isinstance(node, ast.Subscript):
            source = self.array_source(node.value, flow)
            if source is None:
                raise _err(node, "subscript", "only arrays can be indexed (use bit()/bits() "
                           "for bits of an integer)")
            slot, elem, length = source
            index, ity = self.int_expr(node.slice, flow)
            if ity.hi < 0 or ity.lo > length - 1:
                raise _err(node, "index", f"index range [{ity.lo}, {ity.hi}] is never inside "
                           f"[0, {length - 1}]")
            check = not (ity.lo >= 0 and ity.hi <= length - 1)
            return Index(elem, slot, length, index, check, node.lineno)
        if isinstance(node, ast.UnaryOp):
            if isinstance(node.op, ast.Not):
                a = self.bool_expr(node.operand, flow)
                if isinstance(a, Const):
                    return Const(_BOOL, not a.value)
                return UnOp(_BOOL, "not", a)
            a, t = self.int_expr(node.operand, flow)
            if isinstance(node.op, ast.UAdd):
                return a
            if isinstance(node.op, ast.USub):
                ty, op = IntT(-t.hi, -t.lo), "neg"
            else:
                ty, op = IntT(~t.hi, ~t.lo), "inv"
            if isinstance(a, Const):
                v = -a.value if op == "neg" else ~a.value  # type: ignore[operator]
                return Const(IntT(v, v), v)
            return UnOp(self._checked_width(node, ty), op, a)
        if isinstance(node, ast.BinOp):
            return self.binop(node, flow)
        if isinstance(node, ast.BoolOp):
            op = "land" if isinstance(node.op, ast.And) else "lor"
            result = self.bool_expr(node.values[0], flow)
            for value in node.values[1:]:
                b = self.bool_expr(value, flow)
                result = self._logical(op, result, b)
            return result
        if isinstance(node, ast.Compare):
            return self.compare(node, flow)
        if isinstance(node, ast.IfExp):
            cond = self.bool_expr(node.test, flow)
            a = self.expr(node.body, flow)
            b = self.expr(node.orelse, flow)
            ty = _join_types(a.ty, b.ty)
            if ty is None:
                raise _err(node, "type", f"the branches of `x if c else y` have different "
                           f"types ({_type_name(a.ty)} vs {_type_name(b.ty)})")
            if isinstance(cond, Const):
                return a if cond.value else b
            return IfExp(ty, cond, a, b)
        if isinstance(node, ast.Call):
            return self.call(node, flow)
        if isinstance(node, ast.Tuple):
            raise _err(node, "tuple", "tuples are only allowed as array values")
        raise _err(node, type(node).__name__.lower(),
                   f"`{type(node).__name__}` expressions are not allowed")

    @staticmethod
    def _logical(op: str, a: Expr, b: Expr) -> Expr:
        if isinstance(a, Const):
            return b if (a.value if op == "land" else not a.value) else a
        return BinOp(_BOOL, op, a, b)

    def binop(self, node: ast.BinOp, flow: _Flow) -> Expr:
        if isinstance(node.op, ast.Pow):
            v = self.module.const(node)
            return Const(IntT(v, v), v)
        op = _BIN.get(type(node.op))
        if op is None:
            symbol = {ast.Div: "/", ast.MatMult: "@"}.get(type(node.op), type(node.op).__name__)
            hint = ": use //" if symbol == "/" else ""
            raise _err(node, "operator", f"operator `{symbol}` is not allowed{hint}")
        a, ta = self.int_expr(node.left, flow)
        b, tb = self.int_expr(node.right, flow)
        check = ""
        if op in ("add", "sub", "mul"):
            if op == "add":
                ty = IntT(ta.lo + tb.lo, ta.hi + tb.hi)
            elif op == "sub":
                ty = IntT(ta.lo - tb.hi, ta.hi - tb.lo)
            else:
                products = [x * y for x in (ta.lo, ta.hi) for y in (tb.lo, tb.hi)]
                ty = self._checked_width(node, IntT(min(products), max(products)))
        elif op in ("floordiv", "mod"):
            if tb.lo == tb.hi == 0:
                raise _err(node, "div0", "division by zero")
            if tb.lo <= 0 <= tb.hi:
                check = "div0"
            if op == "floordiv":
                divisors = [d for d in (tb.lo, -1, 1, tb.hi) if d != 0 and tb.lo <= d <= tb.hi]
                quotients = [x // d for x in (ta.lo, ta.hi) for d in divisors]
                ty = IntT(min(quotients), max(quotients))
            elif tb.lo > 0:
                ty = IntT(0, tb.hi - 1) if ta.lo < 0 else IntT(0, min(ta.hi, tb.hi - 1))
            elif tb.hi < 0:
                ty = IntT(tb.lo + 1, 0)
            else:
                ty = IntT(min(tb.lo + 1, 0), max(tb.hi - 1, 0))
        elif op in ("lshift", "rshift"):
            if tb.hi < 0:
                raise _err(node, "shift", "the shift count is always negative")
            if tb.lo < 0:
                check = "shift"
            lo_count = max(tb.lo, 0)
            if op == "lshift":
                if tb.hi > MAX_WIDTH:
                    raise _err(node, "width", f"shift count may exceed {MAX_WIDTH}: wrap() it")
                cands = [x << c for x in (ta.lo, ta.hi) for c in (lo_count, tb.hi)]
                ty = self._checked_width(node, IntT(min(cands), max(cands)))
            else:
                top = min(tb.hi, MAX_WIDTH + 2)
                cands = [x >> c for x in (ta.lo, ta.hi) for c in (lo_count, top)]
                ty = IntT(min(cands), max(cands))
        else:
            if ta.lo >= 0 and tb.lo >= 0:
                if op == "and":
                    ty = IntT(0, min(ta.hi, tb.hi))
                else:
                    ty = IntT(0, (1 << max(ta.hi.bit_length(), tb.hi.bit_length())) - 1)
            else:
                n = max(ta.width, tb.width) - 1
                ty = IntT(-(1 << n), (1 << n) - 1)
        if isinstance(a, Const) and isinstance(b, Const):
            v = INT_OPS[op](a.value, b.value)
            return Const(IntT(v, v), v)
        return BinOp(ty, op, a, b, check, node.lineno)

    def compare(self, node: ast.Compare, flow: _Flow) -> Expr:
        left = self.expr(node.left, flow)
        result: Expr | None = None
        for op_node, right_node in zip(node.ops, node.comparators, strict=True):
            op = _CMP.get(type(op_node))
            if op is None:
                raise _err(node, "operator", f"`{type(op_node).__name__}` comparisons are not "
                           "allowed (==, !=, <, <=, >, >=)")
            right = self.expr(right_node, flow)
            if isinstance(left.ty, IntT) != isinstance(right.ty, IntT) or (
                    not isinstance(left.ty, IntT) and left.ty != right.ty):
                raise _err(node, "type", f"cannot compare {_type_name(left.ty)} with "
                           f"{_type_name(right.ty)}")
            if not isinstance(left.ty, IntT) and op not in ("eq", "ne"):
                raise _err(node, "type", f"{_type_name(left.ty)} values only compare with == "
                           "and !=")
            if isinstance(left, Const) and isinstance(right, Const):
                part: Expr = Const(_BOOL, COMPARE_OPS[op](left.value, right.value))
            else:
                part = BinOp(_BOOL, op, left, right)
            result = part if result is None else self._logical("land", result, part)
            left = right
        assert result is not None
        return result

    def call(self, node: ast.Call, flow: _Flow) -> Expr:
        if not isinstance(node.func, ast.Name):
            text = ast.unparse(node.func)
            raise _err(node, "call", f"`{text}(...)`: calls to methods are not allowed (no "
                       "recursion; helper functions are not part of the DSL)")
        fn = node.func.id
        if node.keywords:
            raise _err(node, "call", f"`{fn}()` takes no keyword arguments")
        if fn in ("fail", "fill", "range"):
            raise _err(node, fn, f"`{fn}()` is not an expression here")
        if fn not in dsl.FUNCTION_NAMES:
            if fn in self.module.records:
                raise _err(node, "record", f"a `{fn}(...)` record is only a return value")
            raise _err(node, "call", f"calls to `{fn}` are not allowed (DSL functions: "
                       f"{', '.join(sorted(dsl.FUNCTION_NAMES))})")
        args = node.args
        if fn in ("wrap", "swrap", "saturate", "ssaturate", "sext", "zext"):
            if len(args) != 2:
                raise _err(node, fn, f"`{fn}(x, WIDTH)` takes two arguments")
            x, tx = self.int_expr(args[0], flow)
            width = self.module.const(args[1], self.loop_indices(flow))
            if not 1 <= width <= MAX_WIDTH:
                raise _err(node, fn, f"`{fn}` width must be in [1, {MAX_WIDTH}]")
            base = {"sext": "swrap", "zext": "wrap"}.get(fn, fn)
            return self.width_call(base, x, tx, width)
        if fn == "bits":
            if len(args) != 3:
                raise _err(node, fn, "`bits(x, HIGH, LOW)` takes three arguments")
            x, tx = self.int_expr(args[0], flow)
            loop = self.loop_indices(flow)
            high, low = self.module.const(args[1], loop), self.module.const(args[2], loop)
            if not 0 <= low <= high < MAX_WIDTH:
                raise _err(node, fn, "bits(x, HIGH, LOW) needs 0 <= LOW <= HIGH")
            shifted: Expr = x
            if low:
                ty = IntT(tx.lo >> low, tx.hi >> low)
                shifted = Const(ty, x.value >> low) if isinstance(x, Const) else \
                    BinOp(ty, "rshift", x, Const(IntT(low, low), low))  # type: ignore[operator]
                tx = ty
            return self.width_call("wrap", shifted, tx, high - low + 1)
        if fn == "bit":
            if len(args) != 2:
                raise _err(node, fn, "`bit(x, INDEX)` takes two arguments")
            x, tx = self.int_expr(args[0], flow)
            i, ti = self.int_expr(args[1], flow)
            if ti.lo < 0 or ti.hi > MAX_WIDTH:
                raise _err(node, fn, f"the bit index must be in [0, {MAX_WIDTH}]")
            if isinstance(x, Const) and isinstance(i, Const):
                return Const(_BOOL, bool((x.value >> i.value) & 1))  # type: ignore[operator]
            return Call(_BOOL, "bit", (x, i))
        if fn in ("min", "max"):
            if len(args) < 2:
                raise _err(node, fn, f"`{fn}` takes two or more integers")
            operands = [self.int_expr(a, flow) for a in args]
            lows = [t.lo for _, t in operands]
            highs = [t.hi for _, t in operands]
            pick = min if fn == "min" else max
            ty = IntT(pick(lows), pick(highs))
            exprs = tuple(e for e, _ in operands)
            if all(isinstance(e, Const) for e in exprs):
                v = pick(e.value for e in exprs)  # type: ignore[union-attr,type-var]
                return Const(IntT(v, v), v)
            return Call(ty, fn, exprs)
        # abs
        if len(args) != 1:
            raise _err(node, fn, "`abs(x)` takes one integer")
        x, tx = self.int_expr(args[0], flow)
        if isinstance(x, Const):
            v = abs(x.value)  # type: ignore[arg-type]
            return Const(IntT(v, v), v)
        lo = 0 if tx.lo <= 0 <= tx.hi else min(abs(tx.lo), abs(tx.hi))
        return Call(IntT(lo, max(abs(tx.lo), abs(tx.hi))), "abs", (x,))

    @staticmethod
    def width_call(fn: str, x: Expr, tx: IntT, width: int) -> Expr:
        if fn in ("wrap", "saturate"):
            ty = IntT(0, (1 << width) - 1)
        else:
            ty = IntT(-(1 << (width - 1)), (1 << (width - 1)) - 1)
        if isinstance(x, Const):
            v = width_fn(fn, x.value, width)  # type: ignore[arg-type]
            return Const(IntT(v, v), v)
        if ty.lo <= tx.lo and tx.hi <= ty.hi:
            return x  # already in range: every width function is the identity here
        return Call(ty, fn, (x,), width)

    # assignments
    def fit(self, node: ast.AST, value: Expr, target: ExprType, what: str
            ) -> tuple[int, int] | None:
        """The runtime range check an assignment of ``value`` to ``target`` needs."""
        if isinstance(target, IntT):
            if not isinstance(value.ty, IntT):
                raise _err(node, "type", f"cannot assign {_type_name(value.ty)} to {what}")
            if value.ty.lo >= target.lo and value.ty.hi <= target.hi:
                return None
            if value.ty.hi < target.lo or value.ty.lo > target.hi:
                raise _err(node, "width", f"the value range [{value.ty.lo}, {value.ty.hi}] "
                           f"never fits {what} [{target.lo}, {target.hi}]: use wrap() or "
                           "saturate()")
            return (target.lo, target.hi)
        if value.ty != target:
            raise _err(node, "type", f"cannot assign {_type_name(value.ty)} to {what} "
                       f"({_type_name(target)})")
        return None

    def array_value(self, node: ast.expr, elem: ExprType, length: int, flow: _Flow,
                    what: str) -> ArrayExpr:
        if isinstance(node, ast.Tuple):
            if len(node.elts) != length:
                raise _err(node, "array", f"{what} needs {length} elements, got "
                           f"{len(node.elts)}")
            items = []
            for item in node.elts:
                e = self.expr(item, flow)
                if self.fit(item, e, elem, f"an element of {what}") is not None:
                    raise _err(item, "width", f"an element of {what} may not fit: wrap() or "
                               "saturate() it")
                items.append(e)
            return ArrayLit(tuple(items))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id == "fill":
            if len(node.args) != 1 or node.keywords:
                raise _err(node, "fill", "`fill(value)` takes one argument")
            e = self.expr(node.args[0], flow)
            if self.fit(node, e, elem, f"an element of {what}") is not None:
                raise _err(node, "width", f"fill value may not fit {what}: wrap() it")
            return Fill(e, length)
        source = self.array_source(node, flow)
        if source is None:
            raise _err(node, "array", f"{what} is an array: assign an array, a tuple or "
                       "fill(v)")
        slot, src_elem, src_length = source
        if src_length != length:
            raise _err(node, "array", f"array length {src_length} does not match {what} "
                       f"({length})")
        if src_elem != elem and not (
                isinstance(src_elem, IntT) and isinstance(elem, IntT)
                and elem.lo <= src_elem.lo and src_elem.hi <= elem.hi):
            raise _err(node, "type", f"array element types differ for {what}")
        return ArrayRef(slot)

    def assign_local(self, node: ast.stmt, name: str, value_node: ast.expr,
                     annotation: ast.expr | None, flow: _Flow) -> Stmt:
        if name in ("self", dsl.ANY_NAME) or name in self.module.constants \
                or name in self.module.enums or name in self.params:
            raise _err(node, "name", f"cannot assign to `{name}`")
        if isinstance(flow.env.get(name), Const):
            raise _err(node, "name", f"cannot assign to the loop index `{name}`")
        if annotation is not None:
            decl = self.module.decl(annotation, records=False)
            assert not isinstance(decl, _Record)
            length = decl.length if isinstance(decl, _Array) else 0
            ty = decl.elem.ty if isinstance(decl, _Array) else decl.ty
            known = self.annotated.get(name)
            if known is not None and (known.ty != ty or known.length != length):
                raise _err(node, "type", f"`{name}` is re-declared with another type")
            if known is None:
                if name in self.local_slots:
                    raise _err(node, "type", f"`{name}` is annotated after an unannotated use")
                slot = self.new_slot(name, "local", ty, length)
                self.local_slots[name] = slot
                self.annotated[name] = _Local(slot, ty, length)
        target = self.annotated.get(name)
        if target is not None:
            if target.length:
                array = self.array_value(value_node, target.ty, target.length, flow,
                                         f"`{name}`")
                flow.env[name] = target
                return Assign(target.slot, array, None, name, node.lineno)
            value = self.expr(value_node, flow)
            check = self.fit(node, value, target.ty, f"`{name}`")
            flow.env[name] = target
            return Assign(target.slot, value, check, name, node.lineno)
        if self.array_source(value_node, flow) is not None:
            raise _err(node, "array", f"annotate the array local: `{name}: Array[...] = ...`")
        value = self.expr(value_node, flow)
        slot = self.local_slots.get(name)
        if slot is None:
            slot = self.new_slot(name, "local", None)
            self.local_slots[name] = slot
        flow.env[name] = _Local(slot, value.ty)
        return Assign(slot, value, None, name, node.lineno)

    def assign(self, node: ast.stmt, target: ast.expr, value_node: ast.expr,
               annotation: ast.expr | None, flow: _Flow) -> Stmt:
        if isinstance(target, ast.Name):
            return self.assign_local(node, target.id, value_node, annotation, flow)
        if annotation is not None:
            raise _err(node, "annotation", "only local names can be annotated")
        if isinstance(target, ast.Attribute):
            slot, decl = self.state_ref(target, flow)
            what = f"`self.{self.slots[slot].name}`"
            if isinstance(decl, _Array):
                array = self.array_value(value_node, decl.elem.ty, decl.length, flow, what)
                flow.assigned.add(slot)
                return Assign(slot, array, None, what, node.lineno)
            value = self.expr(value_node, flow)
            check = self.fit(node, value, decl.ty, what)
            flow.assigned.add(slot)
            return Assign(slot, value, check, what, node.lineno)
        if isinstance(target, ast.Subscript):
            source = self.array_source(target.value, flow)
            if source is None:
                raise _err(node, "subscript", "only array elements can be assigned by index")
            slot, elem, length = source
            index, ity = self.int_expr(target.slice, flow)
            if ity.hi < 0 or ity.lo > length - 1:
                raise _err(node, "index", f"index range [{ity.lo}, {ity.hi}] is never inside "
                           f"[0, {length - 1}]")
            value = self.expr(value_node, flow)
            what = f"an element of `{self.slots[slot].name}`"
            check = self.fit(node, value, elem, what)
            return Store(slot, length, index, value, check,
                         not (ity.lo >= 0 and ity.hi <= length - 1), what, node.lineno)
        raise _err(node, "assign", "assign to one name, self.<field> or array[index] at a time")

    # statements
    def block(self, body: list[ast.stmt], flow: _Flow) -> list[Stmt]:
        out: list[Stmt] = []
        for stmt in body:
            if flow.terminated:
                raise _err(stmt, "unreachable", "unreachable code after return/fail")
            out.extend(self.statement(stmt, flow))
        return out

    def statement(self, node: ast.stmt, flow: _Flow) -> list[Stmt]:
        self.count(node)
        if isinstance(node, ast.Pass):
            return []
        if isinstance(node, ast.Expr):
            call = node.value
            if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) \
                    and call.func.id == "fail":
                if len(call.args) != 1 or not isinstance(call.args[0], ast.Constant) \
                        or not isinstance(call.args[0].value, str) or call.keywords:
                    raise _err(node, "fail", 'fail() takes one string literal: fail("reason")')
                if self.function != "process":
                    raise _err(node, "fail", "fail() is only allowed in process()")
                flow.terminated = True
                return [Fail(self.fail_of[id(node)], call.args[0].value, node.lineno)]
            if isinstance(call, ast.Constant) and isinstance(call.value, str):
                return []
            raise _err(node, "expression", "an expression statement has no effect")
        if isinstance(node, ast.Assign):
            if len(node.targets) != 1:
                raise _err(node, "assign", "chained assignment is not allowed")
            return [self.assign(node, node.targets[0], node.value, None, flow)]
        if isinstance(node, ast.AnnAssign):
            if node.value is None:
                raise _err(node, "annotation", "a local declaration needs a value")
            return [self.assign(node, node.target, node.value, node.annotation, flow)]
        if isinstance(node, ast.AugAssign):
            value = ast.BinOp(left=_load(node.target), op=node.op, right=node.value)
            ast.copy_location(value, node)
            return [self.assign(node, node.target, value, None, flow)]
        if isinstance(node, ast.If):
            return self.if_statement(node, flow)
        if isinstance(node, ast.For):
            return self.for_statement(node, flow)
        if isinstance(node, ast.Return):
            return [self.return_statement(node, flow)]
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            raise _err(node, "def", "nested functions and classes are not allowed")
        raise _err(node, type(node).__name__.lower(),
                   f"`{type(node).__name__}` statements are not allowed")

    def if_statement(self, node: ast.If, flow: _Flow) -> list[Stmt]:
        cond = self.bool_expr(node.test, flow)
        site = self.site_of[id(node)]
        then_flow, else_flow = flow.copy(), flow.copy()
        then = self.block(node.body, then_flow)
        orelse = self.block(node.orelse, else_flow)
        self._merge(node, flow, then_flow, else_flow)
        return [If(site, cond, tuple(then), tuple(orelse))]

    def _merge(self, node: ast.AST, flow: _Flow, a: _Flow, b: _Flow) -> None:
        if a.terminated and b.terminated:
            flow.env, flow.assigned, flow.terminated = a.env, a.assigned, True
            return
        if a.terminated or b.terminated:
            live = b if a.terminated else a
            flow.env, flow.assigned = live.env, live.assigned
            return
        env: dict[str, _Local | Const] = {}
        for name, x in a.env.items():
            y = b.env.get(name)
            if y is None:
                continue
            if isinstance(x, Const) or isinstance(y, Const):
                if x == y:
                    env[name] = x
                continue
            ty = _join_types(x.ty, y.ty)
            if ty is None or x.slot != y.slot:
                raise _err(node, "type", f"`{name}` has different types after the branches of "
                           "this if")
            env[name] = _Local(x.slot, ty, x.length)
        flow.env, flow.assigned = env, a.assigned & b.assigned

    def for_statement(self, node: ast.For, flow: _Flow) -> list[Stmt]:
        if not isinstance(node.target, ast.Name):
            raise _err(node, "for", "the loop target must be one name")
        it = node.iter
        if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name)
                and it.func.id == "range" and 1 <= len(it.args) <= 3 and not it.keywords):
            raise _err(node, "for", "loops are only `for i in range(CONST[, CONST[, CONST]])`")
        if node.orelse:
            raise _err(node, "for", "`for ... else` is not allowed")
        bounds = [self.module.const(a, self.loop_indices(flow)) for a in it.args]
        if len(bounds) == 3 and bounds[2] == 0:
            raise _err(node, "range", "range() step must not be zero")
        values = range(*bounds)
        if len(values) > MAX_RANGE:
            raise _err(node, "range", f"range() of {len(values)} iterations exceeds "
                       f"{MAX_RANGE}")
        name = node.target.id
        if name in flow.env or name in self.local_slots:
            raise _err(node, "for", f"the loop index `{name}` shadows a local")
        out: list[Stmt] = []
        for value in values:
            flow.env[name] = Const(IntT(value, value), value)
            out.extend(self.block(node.body, flow))
            if flow.terminated:
                break
        flow.env.pop(name, None)
        return out

    def return_statement(self, node: ast.Return, flow: _Flow) -> Stmt:
        if self.function != "process":
            raise _err(node, "return", "reset() does not return a value")
        value = node.value
        record = self.output_record
        if value is None:  # a bare `return`: no output record this transaction
            flow.terminated = True
            return Return((), (), node.lineno, emits=False)
        if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Name)
                and value.func.id == record.name and not value.args):
            raise _err(node, "return", f"process() returns `{record.name}(field=..., ...)` "
                       "with keyword arguments, or a bare `return` for no output")
        given = {kw.arg: kw.value for kw in value.keywords}
        expected = [name for name, _ in record.fields]
        if None in given or set(given) != set(expected):
            raise _err(node, "return", f"`{record.name}(...)` needs exactly the fields "
                       f"{', '.join(expected)}")
        values: list[Expr | ArrayExpr | DontCareValue] = []
        checks: list[tuple[int, int] | None] = []
        for name, decl in record.fields:
            what = f"output `{name}`"
            field_value = given[name]
            if isinstance(field_value, ast.Name) and field_value.id == dsl.ANY_NAME:
                self.count(field_value)
                values.append(DontCareValue())
                checks.append(None)
            elif isinstance(decl, _Array):
                values.append(self.array_value(given[name], decl.elem.ty, decl.length, flow,
                                               what))
                checks.append(None)
            else:
                e = self.expr(given[name], flow)  # type: ignore[arg-type]
                checks.append(self.fit(node, e, decl.ty, what))  # type: ignore[union-attr]
                values.append(e)
        flow.terminated = True
        return Return(tuple(values), tuple(checks), node.lineno)

    # the model
    def function_body(self, fn: ast.FunctionDef, flow: _Flow) -> Function:
        self.function = fn.name
        self.ops = 0
        self.local_slots, self.annotated = {}, {}
        body = self.block(_body_without_docstring(fn.body), flow)
        return Function(fn.name, tuple(body), self.ops)

    def lower(self, name: str) -> ModelIR:
        fields: list[ast.AnnAssign] = []
        functions: dict[str, ast.FunctionDef] = {}
        for item in _body_without_docstring(self.model.body):
            if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name) \
                    and item.value is None:
                fields.append(item)
            elif isinstance(item, ast.FunctionDef) and item.name in ("reset", "process"):
                if item.name in functions:
                    raise _err(item, "def", f"`{item.name}` is defined twice")
                functions[item.name] = item
            elif isinstance(item, ast.FunctionDef):
                raise _err(item, "def", f"`def {item.name}`: a Model defines only reset() and "
                           "process(...) (no helper methods)")
            else:
                raise _err(item, "class body", "a Model body holds state declarations "
                           "(`name: Type`) and reset()/process()")
        for required in ("reset", "process"):
            if required not in functions:
                raise _err(self.model, "def", f"the model must define {required}()")
        # state
        state: list[int] = []
        for item in fields:
            fname = item.target.id  # type: ignore[union-attr]
            if fname in self.state_fields:
                raise _err(item, "state", f"state field `{fname}` declared twice")
            decl = self.module.decl(item.annotation)
            self.state_fields[fname] = decl
            members = decl.fields if isinstance(decl, _Record) else ((None, decl),)
            for sub, d in members:
                key = fname if sub is None else f"{fname}.{sub}"
                if isinstance(d, _Record):
                    raise _err(item, "type", "records cannot nest")
                if isinstance(d, _Array):
                    slot = self.new_slot(key, "state", d.elem.ty, d.length, d.port)
                else:
                    slot = self.new_slot(key, "state", d.ty, 0, d.port)
                self.state_slots[key] = slot
                state.append(slot)
        # sites, in source order: stable goal ids
        for fname in ("reset", "process"):
            ifs = sorted((n for n in ast.walk(functions[fname]) if isinstance(n, ast.If)),
                         key=lambda n: (n.lineno, n.col_offset))
            for n in ifs:
                self.site_of[id(n)] = len(self.branch_sites)
                self.branch_sites.append(BranchSite(len(self.branch_sites), fname, n.lineno,
                                                    n.col_offset))
            fails = sorted((n for n in ast.walk(functions[fname]) if isinstance(n, ast.Expr)
                            and isinstance(n.value, ast.Call)
                            and isinstance(n.value.func, ast.Name)
                            and n.value.func.id == "fail"), key=lambda n: n.lineno)
            for n in fails:
                reason = n.value.args[0].value if n.value.args and isinstance(  # type: ignore[attr-defined]
                    n.value.args[0], ast.Constant) else ""  # type: ignore[attr-defined]
                self.fail_of[id(n)] = len(self.fail_sites)
                self.fail_sites.append(FailSite(len(self.fail_sites), str(reason), n.lineno))
        # reset
        reset = functions["reset"]
        self._check_signature(reset, params=False)
        reset_flow = _Flow({}, set())
        reset_ir = self.function_body(reset, reset_flow)
        missing = [self.slots[s].name for s in state if s not in reset_flow.assigned]
        if missing:
            raise _err(reset, "reset", f"reset() must assign every state field on every path "
                       f"(missing: {', '.join(missing)})")
        # process
        process = functions["process"]
        self._check_signature(process, params=True)
        ret = process.returns
        if not (isinstance(ret, ast.Name) and ret.id in self.module.records):
            raise _err(process, "return", "process() must be annotated `-> RecordName` (the "
                       "outputs)")
        self.output_record = self.module.records[ret.id]
        env: dict[str, _Local | Const] = {}
        inputs: list[int] = []
        for arg in process.args.args[1:]:
            if arg.annotation is None:
                raise _err(arg, "type", f"parameter `{arg.arg}` needs a type annotation")
            decl = self.module.decl(arg.annotation, records=False)
            assert not isinstance(decl, _Record)
            if arg.arg in env or arg.arg in ("self", dsl.ANY_NAME):
                raise _err(arg, "name", f"duplicate parameter `{arg.arg}`")
            if isinstance(decl, _Array):
                slot = self.new_slot(arg.arg, "input", decl.elem.ty, decl.length, decl.port)
                env[arg.arg] = _Local(slot, decl.elem.ty, decl.length)
            else:
                slot = self.new_slot(arg.arg, "input", decl.ty, 0, decl.port)
                env[arg.arg] = _Local(slot, decl.ty)
            inputs.append(slot)
            self.params.add(arg.arg)
        process_flow = _Flow(env, set(state))
        process_ir = self.function_body(process, process_flow)
        if not process_flow.terminated:
            raise _err(process, "return", "process() must end every path with return or "
                       "fail()")
        outputs = []
        for fname, d in self.output_record.fields:
            if isinstance(d, _Array):
                outputs.append((fname, d.port, d.elem.ty))
            else:
                outputs.append((fname, d.port, d.ty))  # type: ignore[union-attr]
        return ModelIR(name=name, slots=tuple(self.slots), state=tuple(state),
                       inputs=tuple(inputs), outputs=tuple(outputs),
                       output_record=self.output_record.name, reset=reset_ir,
                       process=process_ir, branches=tuple(self.branch_sites),
                       fails=tuple(self.fail_sites), enums=dict(self.module.enums))

    @staticmethod
    def _check_signature(fn: ast.FunctionDef, *, params: bool) -> None:
        a = fn.args
        if a.posonlyargs or a.vararg or a.kwonlyargs or a.kwarg or a.defaults \
                or not a.args or a.args[0].arg != "self":
            raise _err(fn, "def", f"`{fn.name}(self{', ...' if params else ''})`: plain "
                       "parameters only (no defaults, *args, keyword-only)")
        if not params and (len(a.args) != 1 or fn.returns is not None):
            raise _err(fn, "def", "`reset(self)` takes no parameters and returns nothing")


def _load(target: ast.expr) -> ast.expr:
    """The read form of an augmented assignment's target."""
    node = ast.parse(ast.unparse(target), mode="eval").body
    for child in ast.walk(node):  # errors inside point at the statement's line
        ast.copy_location(child, target)
    return node


def lower_module(tree: ast.Module, name: str) -> ModelIR:
    """Lower a module that passed :func:`~.checker.parse_checked`."""
    module = _Module()
    model: ast.ClassDef | None = None
    for item in _body_without_docstring(tree.body):
        if isinstance(item, ast.ImportFrom):
            continue  # the checker admitted only the DSL import
        if isinstance(item, ast.Assign) and len(item.targets) == 1 \
                and isinstance(item.targets[0], ast.Name):
            cname = item.targets[0].id
            if not cname.isupper():
                raise _err(item, "global", f"module-level `{cname}`: only UPPER_CASE integer "
                           "constants are allowed (no globals)")
            if cname in module.constants:
                raise _err(item, "global", f"constant `{cname}` is assigned twice")
            if cname == dsl.ANY_NAME:
                raise _err(item, "global", "`ANY` is the DSL's don't-care value, not a constant")
            module.constants[cname] = module.const(item.value)
            continue
        if isinstance(item, ast.ClassDef):
            base = _base_name(item)
            if item.name in module.records or item.name in module.enums \
                    or item.name in dsl.TYPE_NAMES:
                raise _err(item, "class", f"`{item.name}` is defined twice")
            if base == "Model":
                if model is not None:
                    raise _err(item, "class", "a file holds one Model class")
                model = item
            elif base == "Enum":
                members: list[tuple[str, int]] = []
                for m in _body_without_docstring(item.body):
                    if not (isinstance(m, ast.Assign) and len(m.targets) == 1
                            and isinstance(m.targets[0], ast.Name)):
                        raise _err(m, "enum", "an Enum body holds `MEMBER = INTEGER` lines")
                    value = module.const(m.value)
                    if not 0 <= value < (1 << 64):
                        raise _err(m, "enum", "enum values must be in [0, 2**64)")
                    if any(n == m.targets[0].id or v == value for n, v in members):
                        raise _err(m, "enum", "enum members and values must be distinct")
                    members.append((m.targets[0].id, value))
                if not members:
                    raise _err(item, "enum", f"Enum `{item.name}` has no members")
                module.enums[item.name] = EnumT(item.name, tuple(members))
            else:
                fields: list[tuple[str, _Scalar | _Array]] = []
                for f in _body_without_docstring(item.body):
                    if not (isinstance(f, ast.AnnAssign) and isinstance(f.target, ast.Name)
                            and f.value is None):
                        raise _err(f, "record", "a Record body holds `field: Type` lines")
                    decl = module.decl(f.annotation, records=False)
                    assert not isinstance(decl, _Record)
                    if any(n == f.target.id for n, _ in fields):
                        raise _err(f, "record", f"field `{f.target.id}` declared twice")
                    fields.append((f.target.id, decl))
                if not fields:
                    raise _err(item, "record", f"Record `{item.name}` has no fields")
                module.records[item.name] = _Record(item.name, tuple(fields))
            continue
        if isinstance(item, ast.FunctionDef):
            raise _err(item, "def", f"`def {item.name}` at module level: functions are not "
                       "part of the DSL")
        raise _err(item, "module", "a model file holds constants, Enum/Record classes and one "
                   "Model class")
    if model is None:
        raise ModelError(1, 0, "class", "no `class ...(Model)` in the file")
    return _Lowering(module, model).lower(name)
