"""The Behavior IR: what a checked model lowers to, what the interpreter runs and Z3 encodes.

Shape: per function a tree of statements over *frame slots* (state fields, inputs, locals),
loops already unrolled, so a body is straight-line code with structured ``If`` branches and
early ``Return``/``Fail`` exits. Every integer expression carries a static interval
``[lo, hi]`` computed by the lowering; it serves three purposes: deciding width errors
statically, placing runtime range checks only where the interval does not prove them, and
giving the Z3 encoding an exact bit-vector width for every node (no overflow is possible, so
bit-vector arithmetic equals the interpreter's unbounded integers). Nodes are frozen dataclasses
(no behaviour of their own): :mod:`.interp` compiles them to closures, :mod:`.z3enc` to terms.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rtlforge.behave.types import ArrayType, ScalarType

__all__ = [
    "ArrayExpr", "ArrayLit", "ArrayRef", "Assign", "BinOp", "BoolT", "BranchSite", "Call",
    "Const", "DontCareValue", "EnumT", "Expr", "ExprType", "Fail", "FailSite", "Fill",
    "Function", "If", "IfExp", "Index", "IntT", "ModelIR", "Return", "Slot", "Stmt", "Store",
    "UnOp", "Var",
    "signed_width",
]


def signed_width(lo: int, hi: int) -> int:
    """Bits of the narrowest two's complement word holding every value in [lo, hi]."""
    magnitude = max(hi.bit_length() if hi > 0 else 0, (~lo).bit_length() if lo < 0 else 0)
    return magnitude + 1


@dataclass(frozen=True)
class IntT:
    lo: int
    hi: int

    @property
    def width(self) -> int:
        return signed_width(self.lo, self.hi)


@dataclass(frozen=True)
class BoolT:
    pass


@dataclass(frozen=True)
class EnumT:
    """An enumeration value (an integer among ``values``; compared only within its enum)."""

    name: str
    members: tuple[tuple[str, int], ...]

    @property
    def lo(self) -> int:
        return min(v for _, v in self.members)

    @property
    def hi(self) -> int:
        return max(v for _, v in self.members)

    @property
    def width(self) -> int:
        return signed_width(self.lo, self.hi)


ExprType = IntT | BoolT | EnumT


@dataclass(frozen=True)
class Slot:
    """A frame position: a state field, an input or a local. Arrays hold a list there."""

    index: int
    name: str
    role: str  # "state" | "input" | "local"
    type: ExprType | None  # scalar declared type (None: a local typed per assignment)
    length: int = 0  # > 0: an array of ``length`` elements of ``type``
    declared: ScalarType | ArrayType | None = None  # the port type (state/input)


# ---- expressions -------------------------------------------------------------------------

@dataclass(frozen=True)
class Const:
    ty: ExprType
    value: int | bool


@dataclass(frozen=True)
class Var:
    ty: ExprType
    slot: int


@dataclass(frozen=True)
class UnOp:
    ty: ExprType
    op: str  # "neg" | "inv" | "not"
    a: Expr


@dataclass(frozen=True)
class BinOp:
    """Arithmetic, bitwise, comparison and logical operators (``and``/``or`` short-circuit).

    ``check`` is a runtime guard the interval could not prove: "div0" (divisor may be 0),
    "shift" (shift count may be negative)."""

    ty: ExprType
    op: str
    a: Expr
    b: Expr
    check: str = ""
    line: int = 0


@dataclass(frozen=True)
class IfExp:
    ty: ExprType
    cond: Expr
    a: Expr
    b: Expr


@dataclass(frozen=True)
class Call:
    """A DSL width function: wrap/swrap/saturate/ssaturate (``width``), min/max/abs, bit."""

    ty: ExprType
    fn: str
    args: tuple[Expr, ...]
    width: int = 0


@dataclass(frozen=True)
class Index:
    """``array[i]``; ``check`` when ``i``'s interval is not inside [0, length-1]."""

    ty: ExprType
    slot: int
    length: int
    index: Expr
    check: bool = False
    line: int = 0


Expr = Const | Var | UnOp | BinOp | IfExp | Call | Index


# ---- array values (only assigned whole, never computed with) -------------------------------

@dataclass(frozen=True)
class ArrayRef:
    slot: int


@dataclass(frozen=True)
class ArrayLit:
    items: tuple[Expr, ...]


@dataclass(frozen=True)
class Fill:
    value: Expr
    length: int


ArrayExpr = ArrayRef | ArrayLit | Fill


# ---- statements --------------------------------------------------------------------------

@dataclass(frozen=True)
class Assign:
    """``slot = value`` (a scalar, or a whole array); ``check`` = the target range when the
    value's interval does not prove it (a runtime range failure otherwise)."""

    slot: int
    value: Expr | ArrayExpr
    check: tuple[int, int] | None = None
    what: str = ""
    line: int = 0


@dataclass(frozen=True)
class Store:
    """``slot[index] = value`` for an array slot."""

    slot: int
    length: int
    index: Expr
    value: Expr
    check: tuple[int, int] | None = None
    index_check: bool = False
    what: str = ""
    line: int = 0


@dataclass(frozen=True)
class If:
    site: int
    cond: Expr
    then: tuple[Stmt, ...]
    orelse: tuple[Stmt, ...]


@dataclass(frozen=True)
class DontCareValue:
    """An output field returned as ``ANY``: not specified in this transaction."""


@dataclass(frozen=True)
class Return:
    """The outputs in :attr:`ModelIR.outputs` order, each an Expr or an ArrayExpr;
    ``checks`` the per-output range to verify at runtime (None: proven).

    ``emits=False`` is a bare ``return``: the transaction ends with no output record at all
    (``values`` and ``checks`` are empty), e.g. an accumulator that emits one sum per four
    inputs. A record is all or nothing: a model cannot emit some fields and not others, but a
    field may be :class:`DontCareValue` (``ANY``: emitted, not checked)."""

    values: tuple[Expr | ArrayExpr | DontCareValue, ...]
    checks: tuple[tuple[int, int] | None, ...]
    line: int = 0
    emits: bool = True


@dataclass(frozen=True)
class Fail:
    site: int
    reason: str
    line: int = 0


Stmt = Assign | Store | If | Return | Fail


# ---- the model ---------------------------------------------------------------------------

@dataclass(frozen=True)
class BranchSite:
    """An ``if`` in the source: its two outcomes are coverage goals (stable ids: source order)."""

    id: int
    function: str
    line: int
    col: int

    def goal_name(self, outcome: bool) -> str:
        return f"{self.function}:L{self.line}:{'T' if outcome else 'F'}"


@dataclass(frozen=True)
class FailSite:
    id: int
    reason: str
    line: int


@dataclass(frozen=True)
class Function:
    name: str
    body: tuple[Stmt, ...]
    ops: int  # IR nodes after unrolling: the static op budget of one call


@dataclass(frozen=True)
class ModelIR:
    name: str
    slots: tuple[Slot, ...]
    state: tuple[int, ...]  # slot indices of the state fields (declaration order)
    inputs: tuple[int, ...]  # slot indices of process()'s parameters
    outputs: tuple[tuple[str, ScalarType | ArrayType, ExprType], ...]
    output_record: str
    reset: Function
    process: Function
    branches: tuple[BranchSite, ...]
    fails: tuple[FailSite, ...]
    enums: dict[str, EnumT] = field(default_factory=dict)


def _floordiv(a: int, b: int) -> int:
    return a // b


def _mod(a: int, b: int) -> int:
    return a % b


#: Python semantics of the integer operators (unbounded integers; floor division).
INT_OPS = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "floordiv": _floordiv,
    "mod": _mod,
    "lshift": lambda a, b: a << b,
    "rshift": lambda a, b: a >> b,
    "and": lambda a, b: a & b,
    "or": lambda a, b: a | b,
    "xor": lambda a, b: a ^ b,
}
COMPARE_OPS = {
    "eq": lambda a, b: a == b,
    "ne": lambda a, b: a != b,
    "lt": lambda a, b: a < b,
    "le": lambda a, b: a <= b,
    "gt": lambda a, b: a > b,
    "ge": lambda a, b: a >= b,
}


def width_fn(fn: str, x: int, width: int) -> int:
    """wrap / swrap / saturate / ssaturate: the DSL's explicit width conversions."""
    if fn == "wrap":
        return x & ((1 << width) - 1)
    if fn == "swrap":
        x &= (1 << width) - 1
        return x - (1 << width) if x >> (width - 1) else x
    if fn == "saturate":
        return min(max(x, 0), (1 << width) - 1)
    if fn == "ssaturate":
        return min(max(x, -(1 << (width - 1))), (1 << (width - 1)) - 1)
    raise ValueError(fn)
