"""Exact two-level logic for Karnaugh-map and truth-table specs, without a language model.

A spec that is really a table does not need sampling: parse the table, minimise it exactly
(Quine–McCluskey prime implicants, Petrick's method for the cover, parity detection for XOR
forms), emit Verilog with the task's own port names and check the emitted expression against
every specified cell. Parsing is strict on purpose: whenever the meaning of a table is in doubt,
:class:`Decline` is raised, because a confidently wrong circuit costs more than no answer.

Entry points: :func:`solve` (raises :class:`Decline`) and :func:`try_solve` (returns None).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from rtlforge.core.models import Port

#: Inputs of a truth table beyond this are declined: exact minimisation stops being cheap.
MAX_INPUTS = 8
#: Petrick products kept at once; beyond it the cover problem is declined, not approximated.
PETRICK_LIMIT = 20000


#: Why a spec was declined, for reports and tests (the message gives the details):
#: ``no_table`` nothing the solver reads; ``malformed`` a table that does not parse as drawn;
#: ``ambiguous`` more than one reading (tables, names, orientations); ``interface`` the ports
#: do not fit the table; ``unsupported`` a recognised kind of spec outside what is solved
#: exactly; ``too_large`` beyond the exact-minimisation limits; ``internal`` a self-check failed.
DeclineReason = Literal["no_table", "malformed", "ambiguous", "interface", "unsupported",
                        "too_large", "internal"]


class Decline(ValueError):
    """The spec is not something the solver understands with certainty (the message says why).

    ``reason`` types the failure so callers can count declines by cause without parsing text.
    """

    def __init__(self, message: str, reason: DeclineReason = "unsupported") -> None:
        super().__init__(message)
        self.reason: DeclineReason = reason


# ============================================================================================
# Boolean functions and their minimisation
# ============================================================================================


@dataclass(frozen=True)
class Function:
    """An incompletely specified function of ``n`` ordered variables.

    Variable ``i`` is bit ``n-1-i`` of a minterm (the first variable is the most significant),
    which is how K-map labels and truth-table columns read. Minterms in neither set are free.
    """

    n: int
    ones: frozenset[int]
    zeros: frozenset[int]

    def __post_init__(self) -> None:
        if self.ones & self.zeros:
            raise ValueError("a minterm cannot be both 0 and 1")
        if any(m < 0 or m >= 1 << self.n for m in self.ones | self.zeros):
            raise ValueError("minterm out of range")

    @property
    def dont_cares(self) -> frozenset[int]:
        return frozenset(range(1 << self.n)) - self.ones - self.zeros


@dataclass(frozen=True, order=True)
class Implicant:
    """A product term: ``mask`` marks eliminated variables, ``value`` the fixed bits elsewhere."""

    value: int
    mask: int

    def covers(self, minterm: int) -> bool:
        return minterm & ~self.mask == self.value

    def literals(self, n: int) -> int:
        return n - self.mask.bit_count()


def prime_implicants(f: Function) -> list[Implicant]:
    """Quine–McCluskey: merge cubes differing in one fixed bit until nothing merges.

    Don't-cares take part in merging (they make larger cubes possible) but are never required.
    """
    cubes = {Implicant(m, 0) for m in f.ones | f.dont_cares}
    primes: set[Implicant] = set()
    while cubes:
        merged: set[Implicant] = set()
        bigger: set[Implicant] = set()
        for cube in cubes:
            for bit in range(f.n):
                b = 1 << bit
                if cube.mask & b or cube.value & b:
                    continue
                partner = Implicant(cube.value | b, cube.mask)
                if partner in cubes:
                    bigger.add(Implicant(cube.value, cube.mask | b))
                    merged.update((cube, partner))
        primes |= cubes - merged
        cubes = bigger
    return sorted(primes)


def _absorb(products: Iterable[frozenset[int]]) -> set[frozenset[int]]:
    """Drop every product that contains another one (X + XY = X)."""
    kept: list[frozenset[int]] = []
    for p in sorted(set(products), key=len):
        if not any(k <= p for k in kept):
            kept.append(p)
    return set(kept)


def minimum_cover(f: Function) -> list[Implicant]:
    """A minimum sum of products: fewest terms, then fewest literals (exact, Petrick's method).

    Essential primes are taken first; the remaining chart is expanded as a product of sums with
    absorption, so every minimal cover is seen and the cheapest one (deterministic tie-break)
    is returned.
    """
    if not f.ones:
        return []
    primes = [p for p in prime_implicants(f) if any(p.covers(m) for m in f.ones)]
    chart = {m: frozenset(i for i, p in enumerate(primes) if p.covers(m)) for m in f.ones}
    essential = {next(iter(c)) for c in chart.values() if len(c) == 1}
    open_clauses = {c for c in chart.values() if not c & essential}
    clauses = [c for c in open_clauses if not any(o < c for o in open_clauses)]
    products: set[frozenset[int]] = {frozenset()}
    for clause in sorted(clauses, key=lambda c: (len(c), sorted(c))):
        grown = set()
        for p in products:
            if p & clause:
                grown.add(p)
            else:
                grown.update(p | {i} for i in clause)
        products = _absorb(grown)
        if len(products) > PETRICK_LIMIT:
            raise Decline("the cover problem is too large for an exact solution", "too_large")

    def cost(p: frozenset[int]) -> tuple[int, int, list[Implicant]]:
        chosen = sorted(primes[i] for i in p | essential)
        return len(chosen), sum(c.literals(f.n) for c in chosen), chosen

    return cost(min(products, key=cost))[2]


def parity_form(f: Function) -> tuple[int, bool] | None:
    """The smallest support (≥ 2 variables) whose XOR (or XNOR) matches ``f``, if any.

    Returns ``(support, inverted)`` with ``support`` a minterm bit mask; don't-cares are free.
    """
    full = (1 << f.n) - 1
    for support in sorted(range(1, full + 1), key=lambda s: (s.bit_count(), s)):
        if support.bit_count() < 2:
            continue
        for inverted in (False, True):
            want = 0 if inverted else 1
            if all((m & support).bit_count() & 1 == want for m in f.ones) and all(
                (m & support).bit_count() & 1 != want for m in f.zeros
            ):
                return support, inverted
    return None


@dataclass(frozen=True)
class Expression:
    """A Verilog expression for one output and what it costs."""

    text: str
    form: Literal["const", "sop", "pos", "xor", "xnor"]
    terms: int
    literals: int


def _term_text(imp: Implicant, names: Sequence[str]) -> tuple[str, int]:
    n = len(names)
    lits = [
        names[i] if imp.value >> (n - 1 - i) & 1 else f"~{names[i]}"
        for i in range(n)
        if not imp.mask >> (n - 1 - i) & 1
    ]
    return " & ".join(lits) or "1'b1", len(lits)


def minimise(f: Function, names: Sequence[str]) -> Expression:
    """The cheapest expression of ``f`` over the Verilog operands ``names``.

    Cost is (product terms, literals); a parity form counts as one term of its support size, so
    checkerboard maps become ``a ^ b ^ ...`` while anything an SOP does as cheaply stays an SOP.
    """
    if len(names) != f.n:
        raise ValueError("one name per variable")
    if not f.ones:
        return Expression("1'b0", "const", 0, 0)
    if not f.zeros:
        return Expression("1'b1", "const", 1, 0)
    def reading_order(imp: Implicant) -> tuple[int, ...]:
        bit = [f.n - 1 - i for i in range(f.n)]
        return tuple(2 if imp.mask >> b & 1 else 1 - (imp.value >> b & 1) for b in bit)

    cover = sorted(minimum_cover(f), key=reading_order)
    parts = [_term_text(c, names) for c in cover]
    if len(parts) == 1:
        text = parts[0][0]
    else:
        text = " | ".join(f"({t})" if k > 1 else t for t, k in parts)
    sop = Expression(text, "sop", len(parts), sum(k for _, k in parts))
    parity = parity_form(f)
    if parity is not None:
        support, inverted = parity
        vars_ = [names[i] for i in range(f.n) if support >> (f.n - 1 - i) & 1]
        xor_text = " ^ ".join(vars_)
        xor = Expression(f"~({xor_text})" if inverted else xor_text,
                         "xnor" if inverted else "xor", 1, len(vars_))
        if (xor.terms, xor.literals) < (sop.terms, sop.literals):
            return xor
    return sop


# --------------------------------------------------------------------------------------------
# An independent evaluator for the emitted expressions (the verification step)
# --------------------------------------------------------------------------------------------

_EXPR_TOKEN = re.compile(r"\s*(1'b[01]|[A-Za-z_]\w*(?:\[\d+\])?|[~&|^()])")


def evaluate(expr: str, env: Mapping[str, int]) -> int:
    """Evaluate an emitted expression (``~ & ^ |``, parentheses, bit selects, ``1'b0/1``).

    Deliberately separate from the code that renders expressions, so verification checks the
    text that is actually emitted. Precedence is Verilog's: ``~`` > ``&`` > ``^`` > ``|``.
    """
    tokens: list[str] = []
    pos = 0
    while pos < len(expr):
        if expr[pos:].strip() == "":
            break
        m = _EXPR_TOKEN.match(expr, pos)
        if m is None:
            raise ValueError(f"cannot evaluate {expr!r} at {pos}")
        tokens.append(m.group(1))
        pos = m.end()
    at = 0

    def peek() -> str | None:
        return tokens[at] if at < len(tokens) else None

    def take() -> str:
        nonlocal at
        if at >= len(tokens):
            raise ValueError(f"truncated expression {expr!r}")
        at += 1
        return tokens[at - 1]

    def binary(level: int) -> int:
        ops = "|^&"
        if level == len(ops):
            return unary()
        value = binary(level + 1)
        while peek() == ops[level]:
            take()
            rhs = binary(level + 1)
            value = {"|": value | rhs, "^": value ^ rhs, "&": value & rhs}[ops[level]]
        return value

    def unary() -> int:
        tok = take()
        if tok == "~":
            return 1 - unary()
        if tok == "(":
            value = binary(0)
            if take() != ")":
                raise ValueError(f"unbalanced parentheses in {expr!r}")
            return value
        if tok.startswith("1'b"):
            return int(tok[-1])
        if tok in "&|^)":
            raise ValueError(f"unexpected {tok!r} in {expr!r}")
        return env[tok] & 1

    result = binary(0)
    if at != len(tokens):
        raise ValueError(f"trailing tokens in {expr!r}")
    return result


def matches(expr: str, names: Sequence[str], f: Function) -> bool:
    """Whether ``expr`` agrees with ``f`` on every specified minterm (don't-cares are free)."""
    for m in sorted(f.ones | f.zeros):
        env = {name: m >> (f.n - 1 - i) & 1 for i, name in enumerate(names)}
        if evaluate(expr, env) != (m in f.ones):
            return False
    return True


# ============================================================================================
# Interfaces: module headers, bullet lists, task ports
# ============================================================================================


@dataclass(frozen=True)
class PortDecl:
    """A port with its declared range (``msb``/``lsb`` None for a scalar)."""

    name: str
    direction: str
    msb: int | None = None
    lsb: int | None = None

    @property
    def width(self) -> int:
        if self.msb is None or self.lsb is None:
            return 1
        return abs(self.msb - self.lsb) + 1

    @property
    def indices(self) -> list[int]:
        if self.msb is None or self.lsb is None:
            return []
        step = -1 if self.msb >= self.lsb else 1
        return list(range(self.msb, self.lsb + step, step))

    def bits(self) -> list[str]:
        """Verilog operands of every bit, most significant (left) first."""
        return [f"{self.name}[{i}]" for i in self.indices] if self.indices else [self.name]

    def declaration(self) -> str:
        rng = f" [{self.msb}:{self.lsb}]" if self.msb is not None else ""
        return f"{self.direction}{rng} {self.name}"


@dataclass(frozen=True)
class Interface:
    top: str
    ports: tuple[PortDecl, ...]

    def bits(self, direction: str) -> list[str]:
        return [b for p in self.ports if p.direction == direction for b in p.bits()]


_HEADER_START = re.compile(r"\bmodule\s+([A-Za-z_]\w*)\s*(?=#|\()")
_BULLET = re.compile(
    r"^[-*•]\s*(input|output|inout)\s+(?:(?:wire|logic|reg)\s+)?"
    r"(?:\[\s*(\d+)\s*:\s*(\d+)\s*\]\s*)?([A-Za-z_]\w*)\s*(?:\(\s*(\d+)\s*bits?\s*\))?\s*[,;.]?$"
)
_MODULE_NAMED = re.compile(r"\bmodule\s+named\s+`?([A-Za-z_]\w*)")


def _header_spans(text: str) -> list[tuple[int, int, str]]:
    """``module NAME ( ... );`` spans: from the keyword to the first ``;`` outside parentheses."""
    spans = []
    for m in _HEADER_START.finditer(text):
        depth, pos = 0, m.end()
        while pos < len(text):
            ch = text[pos]
            depth += {"(": 1, ")": -1}.get(ch, 0)
            if ch == ";" and depth == 0:
                spans.append((m.start(), pos + 1, m.group(1)))
                break
            pos += 1
    return spans


def _pyslang_ports(header: str, name: str) -> tuple[PortDecl, ...]:
    from pyslang import ast, syntax  # local: only header parsing needs it

    compilation = ast.Compilation()
    compilation.addSyntaxTree(syntax.SyntaxTree.fromText(header + "\nendmodule\n", "spec.v"))
    if any(d.isError() for d in compilation.getAllDiagnostics()):
        raise Decline(f"the module header of {name!r} does not parse")
    directions = {ast.ArgumentDirection.In: "input", ast.ArgumentDirection.Out: "output",
                  ast.ArgumentDirection.InOut: "inout"}
    for inst in compilation.getRoot().topInstances:
        if inst.name != name:
            continue
        if any(True for _ in inst.body.parameters):
            raise Decline(f"module {name!r} is parameterised; widths would be frozen")
        ports = []
        for port in inst.body.portList:
            direction = directions.get(getattr(port, "direction", None))
            ptype = getattr(port, "type", None)
            if direction is None or ptype is None or not ptype.isIntegral:
                raise Decline(f"port {port.name!r} is not a plain integral port")
            rng = getattr(ptype, "range", None)
            if rng is None and ptype.bitWidth != 1:
                raise Decline(f"port {port.name!r} has no declared range")
            if rng is None:
                ports.append(PortDecl(port.name, direction))
            else:
                ports.append(PortDecl(port.name, direction, int(rng.left), int(rng.right)))
        return tuple(ports)
    raise Decline(f"module {name!r} did not elaborate")


def _signature(ports: Sequence[PortDecl]) -> list[tuple[str, str, int]]:
    return [(p.name, p.direction, p.width) for p in ports]


def find_interface(
    text: str, *, top: str | None = None, ports: Sequence[Port] = ()
) -> tuple[Interface, str]:
    """The interface to implement, and ``text`` with the module header blanked out.

    Sources, in order: a Verilog module header in the spec (parsed by pyslang), a VerilogEval
    style bullet list (``- input x (4 bits)``), then ``ports``. Sources that are present must
    agree, and so must the module names.
    """
    spans = _header_spans(text)
    if top is not None and any(name == top for *_, name in spans):
        spans = [s for s in spans if s[2] == top]
    if len(spans) > 1:
        raise Decline("the spec holds several module headers")
    found: list[tuple[str | None, tuple[PortDecl, ...]]] = []
    if spans:
        start, end, name = spans[0]
        found.append((name, _pyslang_ports(text[start:end], name)))
        text = text[:start] + re.sub(r"[^\n]", " ", text[start:end]) + text[end:]
    bullets = []
    for raw in text.splitlines():
        m = _BULLET.match(_strip_comment(raw).strip())
        if m is None:
            continue
        direction, msb, lsb, pname, bits = m.groups()
        if msb is not None and bits is not None:
            raise Decline(f"port {pname!r} gives both a range and a bit count")
        if msb is not None:
            bullets.append(PortDecl(pname, direction, int(msb), int(lsb)))
        elif bits is not None and int(bits) > 1:
            bullets.append(PortDecl(pname, direction, int(bits) - 1, 0))
        else:
            bullets.append(PortDecl(pname, direction))
    if bullets:
        named = _MODULE_NAMED.search(text)
        found.append((named.group(1) if named else None, tuple(bullets)))
    if ports:
        found.append((None, tuple(
            PortDecl(p.name, p.direction, p.width - 1, 0) if p.width > 1
            else PortDecl(p.name, p.direction) for p in ports
        )))
    if not found:
        raise Decline("no module header, interface list or task ports to implement",
                      "interface")
    chosen = found[0][1]
    if any(sorted(_signature(other)) != sorted(_signature(chosen)) for _, other in found[1:]):
        raise Decline("the interface sources of the spec disagree", "interface")
    names = {n for n, _ in found if n is not None} | ({top} if top else set())
    if len(names) != 1:
        raise Decline("cannot tell the module name" if not names else
                      f"conflicting module names: {sorted(names)}")
    if len({p.name for p in chosen}) != len(chosen):
        raise Decline("duplicate port names")
    if any(p.direction == "inout" for p in chosen):
        raise Decline("inout ports are not a combinational table")
    return Interface(names.pop(), chosen), text


# ============================================================================================
# Tables
# ============================================================================================


@dataclass(frozen=True)
class KMap:
    """A parsed Karnaugh map: variable specs as written and cells keyed by binary labels."""

    row_spec: str
    col_spec: str
    row_bits: int
    col_bits: int
    cells: tuple[tuple[str, str, int | None], ...]  # (row label, column label, 0/1/None)
    line: int


@dataclass(frozen=True)
class TruthTable:
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    line: int


Table = KMap | TruthTable

_BIN = re.compile(r"[01]+")
_CELLS: dict[str, int | None] = {"0": 0, "1": 1, "d": None, "D": None, "x": None, "X": None,
                                 "-": None}
_CORNER = re.compile(r"[A-Za-z_\\][\w\[\]\\]*")
_VARLINE = re.compile(r"[A-Za-z_][\w\[\]\\]*")
_HEAD = re.compile(r"#|[A-Za-z_]\w*(?:\[\d+(?::\d+)?\])?")
_VALUE = re.compile(r"[01xXdD-]+|\d+(?:\.\d+)?[A-Za-z]*")
_RULE = re.compile(r"[\s|:+=-]*[-=][\s|:+=-]*")
_INDEX_NAMES = {"#", "row", "index", "idx", "minterm", "no", "n", "m"}
_TIME_NAMES = {"time", "t", "cycle", "cycles"}


def _strip_comment(line: str) -> str:
    line = line.strip()
    line = re.sub(r"^(?://+|/\*+)", "", line)
    return re.sub(r"\*+/$", "", line)


def _clean_lines(text: str) -> list[str]:
    """Lines with comment markers and code fences removed (VerilogEval puts maps in ``//``)."""
    out = []
    for raw in text.splitlines():
        line = _strip_comment(raw)
        out.append("" if line.lstrip().startswith("```") else line.strip())
    return out


def _tokens(line: str) -> list[str]:
    """Cells of one line: pipe-separated (empty cells kept) or whitespace-separated."""
    line = re.sub(r"\s*\\\s*", r"\\", line)
    if "|" not in line:
        return line.split()
    parts = line.split("|")
    if line.startswith("|"):
        parts = parts[1:]
    if line.endswith("|"):
        parts = parts[:-1]
    out: list[str] = []
    for part in parts:
        out.extend(part.split() or [""])
    return out


def _is_rule(line: str) -> bool:
    return bool(line) and _RULE.fullmatch(line) is not None


def _looks_tabular(line: str, toks: Sequence[str]) -> bool:
    """Whether a line that failed to parse as a row was meant as one (then: decline)."""
    if "|" in line:
        return True
    return bool(toks) and (_BIN.fullmatch(toks[0]) is not None or all(len(t) <= 2 for t in toks))


def _label_split(toks: Sequence[str]) -> tuple[list[str], list[str]] | None:
    """Split a K-map header line into corner tokens and column labels (uniform-width binary)."""
    k = len(toks)
    while k > 0 and _BIN.fullmatch(toks[k - 1]):
        k -= 1
    corner, labels = list(toks[:k]), list(toks[k:])
    # the longest suffix of one width is the label row; a wider token before it is no corner
    while labels and len({len(lab) for lab in labels}) > 1:
        corner.append(labels.pop(0))
    if len(labels) < 2 or any(t and not _CORNER.fullmatch(t) for t in corner):
        return None
    return [t for t in corner if t], labels


def _kmap_at(lines: list[str], i: int) -> tuple[KMap, int] | None:
    split = _label_split(_tokens(lines[i]))
    if split is None:
        return None
    corner, labels = split
    width, ncols = len(labels[0]), len(labels)
    rows: list[tuple[str, list[str]]] = []
    prefix: list[str] = []
    j = i + 1
    problem: str | None = None
    while j < len(lines) and lines[j]:
        if _is_rule(lines[j]):
            j += 1
            continue
        toks = _tokens(lines[j])
        extra = len(toks) - ncols - 1
        if (extra == 0 or (extra > 0 and not rows and all(
                _CORNER.fullmatch(t) for t in toks[:extra]))) and _BIN.fullmatch(toks[extra]):
            if extra:
                prefix = toks[:extra]
            rows.append((toks[extra], toks[extra + 1:]))
        elif _looks_tabular(lines[j], toks):
            problem = f"line {j + 1}: row {lines[j]!r} does not fit the K-map's {ncols} columns"
            break
        else:
            break
        j += 1
    plausible = ncols == 1 << width or any("\\" in c for c in corner)
    if problem and plausible:
        raise Decline(problem, "malformed")
    if not rows:
        if any("\\" in c for c in corner):
            raise Decline(f"line {i + 1}: K-map header without rows")
        return None
    where = f"K-map at line {i + 1}"
    if problem:
        raise Decline(problem, "malformed")
    if ncols != 1 << width or len(set(labels)) != ncols:
        raise Decline(f"{where}: column labels {labels} are not all {width}-bit values once")
    row_labels = [r for r, _ in rows]
    rbits = len(row_labels[0])
    if any(len(r) != rbits for r in row_labels) or len(rows) != 1 << rbits \
            or len(set(row_labels)) != len(rows):
        raise Decline(f"{where}: row labels {row_labels} are not all {rbits}-bit values once")
    if width > 2 or rbits > 2:
        raise Decline(f"{where}: only maps of up to 4 variables (2 per axis) are supported")
    cells = []
    for rlab, values in rows:
        for clab, value in zip(labels, values, strict=True):
            if value not in _CELLS:
                raise Decline(f"{where}: unknown cell symbol {value!r}")
            cells.append((rlab, clab, _CELLS[value]))
    row_spec, col_spec = _axis_specs(lines, i, corner, prefix, where)
    return KMap(row_spec, col_spec, rbits, width, tuple(cells), i + 1), j


def _axis_specs(
    lines: list[str], i: int, corner: list[str], prefix: list[str], where: str
) -> tuple[str, str]:
    """Which variables label the rows and which the columns.

    ``rows\\cols`` in the corner (or alone on the line above); otherwise the corner or the first
    row's leading name gives the rows and the line above the header gives the columns.
    """
    above = ""
    if i > 0 and lines[i - 1] and not _is_rule(lines[i - 1]):
        toks = [t for t in _tokens(lines[i - 1]) if t]
        if toks and all(_VARLINE.fullmatch(t) for t in toks):
            above = " ".join(toks)
    text = " ".join(corner)
    if text and prefix:
        raise Decline(f"{where}: row variables given twice")
    text = text or " ".join(prefix)
    if "\\" not in text and "\\" in above:
        if text:
            raise Decline(f"{where}: conflicting axis labels")
        text, above = above, ""
    if "\\" in text:
        if text.count("\\") != 1:
            raise Decline(f"{where}: cannot read the corner {text!r}")
        rows, cols = text.split("\\")
        return rows, cols  # a line above is prose or a repeat: the corner is explicit
    if not text or not above:
        raise Decline(f"{where}: cannot tell which variables label the rows and the columns")
    return text, above


def _truth_table_at(lines: list[str], i: int) -> tuple[TruthTable, int] | None:
    head = [t for t in _tokens(lines[i]) if t]
    if len(head) < 2 or not all(_HEAD.fullmatch(t) for t in head):
        return None
    rows: list[tuple[str, ...]] = []
    j = i + 1
    while j < len(lines) and lines[j]:
        if _is_rule(lines[j]):
            j += 1
            continue
        toks = _tokens(lines[j])
        if len(toks) == len(head) and all(_VALUE.fullmatch(t) for t in toks):
            rows.append(tuple(toks))
        elif not rows:
            return None
        elif _looks_tabular(lines[j], toks):
            raise Decline(f"line {j + 1}: row {lines[j]!r} does not fit the truth table",
                          "malformed")
        else:
            break
        j += 1
    if not rows:
        return None
    return TruthTable(tuple(head), tuple(rows), i + 1), j


def find_tables(text: str) -> list[Table]:
    """Every K-map and truth table in ``text``; malformed ones raise :class:`Decline`."""
    lines = _clean_lines(text)
    tables: list[Table] = []
    i = 0
    while i < len(lines):
        found = (_truth_table_at(lines, i) or _kmap_at(lines, i)) if lines[i] else None
        if found is None:
            i += 1
            continue
        tables.append(found[0])
        i = found[1]
    return tables


# ============================================================================================
# Names in tables -> port bits
# ============================================================================================

_BRACKET = re.compile(r"([A-Za-z_]\w*)\[(\d+)\]")
_SUFFIX = re.compile(r"([A-Za-z]+)_?(\d+)")
_ALIAS = re.compile(
    r"\b([A-Za-z]\w*)\s*(?:=|:|->|→|\bis\b|\bdenotes\b|\bmaps to\b|\bcorresponds to\b)\s*"
    r"([A-Za-z_]\w*\[\d+\])"
)


def _var_splits(spec: str, count: int) -> list[tuple[str, ...]]:
    """Ways to read ``spec`` (``ab``, ``x[1]x[2]``, ``x_3x_4``, ``a, b``) as ``count`` names."""
    spec = spec.strip()
    out: list[tuple[str, ...]] = []
    for pattern in (r"[A-Za-z_]\w*\[\d+\]|[A-Za-z_]\w*",
                    r"[A-Za-z_]\w*?\[\d+\]|[A-Za-z]_?\d+|[A-Za-z]"):
        names = tuple(re.findall(pattern, spec))
        leftover = re.sub(pattern, "", spec)
        if len(names) == count and not re.sub(r"[\s,;]", "", leftover) and names not in out:
            out.append(names)
    return out


def _bit_ref(name: str) -> tuple[str, int] | None:
    m = _BRACKET.fullmatch(name) or _SUFFIX.fullmatch(name)
    return (m.group(1), int(m.group(2))) if m else None


def resolve_names(
    names: Sequence[str], ports: Sequence[PortDecl], spec: str = ""
) -> list[list[str]] | None:
    """Map table names to port bits, or None when no reading is certain.

    Tried in order, each for all names at once: exact (a port, ``x[3]``, ``x3``/``x_3`` for a
    vector bit), case-insensitive, a uniform index shift of one vector (labels ``x[1..4]`` for
    ``x[3:0]``), then ``a = x[3]`` statements in the prose. A whole-port name stands for all its
    bits, most significant first.
    """
    by_name = {p.name: p for p in ports}
    folded: dict[str, list[PortDecl]] = {}
    for p in ports:
        folded.setdefault(p.name.lower(), []).append(p)

    def lookup(name: str, fold: bool) -> PortDecl | None:
        if not fold:
            return by_name.get(name)
        hits = folded.get(name.lower(), [])
        return hits[0] if len(hits) == 1 else None

    def exact(name: str, fold: bool = False, shift: Mapping[str, int] | None = None
              ) -> list[str] | None:
        port = lookup(name, fold)
        if port is not None:
            return port.bits()
        ref = _bit_ref(name)
        if ref is None:
            return None
        port = lookup(ref[0], fold)
        if port is None or not port.indices:
            return None
        index = ref[1] + (shift or {}).get(ref[0].lower() if fold else ref[0], 0)
        return [f"{port.name}[{index}]"] if index in port.indices else None

    def attempt(fn: Callable[[str], list[str] | None]) -> list[list[str]] | None:
        got = [fn(n) for n in names]
        return [g for g in got if g is not None] if all(g is not None for g in got) else None

    for fold in (False, True):
        got = attempt(lambda n, fold=fold: exact(n, fold))
        if got is not None:
            return got
    # one uniform shift per vector base: the only order-preserving reading of off-by-one labels
    for fold in (False, True):
        groups: dict[str, set[int]] = {}
        for n in names:
            if lookup(n, fold) is None and (ref := _bit_ref(n)) is not None:
                groups.setdefault(ref[0].lower() if fold else ref[0], set()).add(ref[1])
        shift: dict[str, int] = {}
        for base, seen in groups.items():
            port = lookup(base, fold)
            if port is None or not port.indices:
                break
            fits = [s for s in (-1, 1) if {i + s for i in seen} == set(port.indices)]
            if len(fits) != 1:
                break
            shift[base] = fits[0]
        else:
            if shift:
                got = attempt(lambda n, fold=fold, shift=shift: exact(n, fold, shift))
                if got is not None:
                    return got
    aliases: dict[str, set[str]] = {}
    for m in _ALIAS.finditer(spec):
        aliases.setdefault(m.group(1), set()).add(m.group(2))
    if aliases:
        def via_alias(n: str) -> list[str] | None:
            targets = aliases.get(n)
            if targets is None:
                return exact(n)
            return exact(next(iter(targets))) if len(targets) == 1 else None

        return attempt(via_alias)
    return None


# ============================================================================================
# Solving
# ============================================================================================


@dataclass(frozen=True)
class OutputSolution:
    """One output bit: the function over ``inputs`` (Verilog operands) and its expression."""

    target: str
    inputs: tuple[str, ...]
    function: Function
    expression: Expression


#: What was solved: a K-map (``kmap_mux``: a K-map split over mux data inputs), a truth table,
#: a combinational waveform, minterm lists in prose, a flip-flop table, a rule table.
SolutionKind = Literal["kmap", "kmap_mux", "truth_table", "waveform", "minterms", "flipflop",
                       "automaton"]


@dataclass(frozen=True)
class Solution:
    top: str
    ports: tuple[PortDecl, ...]
    kind: SolutionKind
    outputs: tuple[OutputSolution, ...]
    verilog: str


_MUX_LINK = re.compile(r"\b([A-Za-z_]\w*)\s*=\s*([01]+)\s+is\s+connected\s+to\s+"
                       r"([A-Za-z_]\w*)\[(\d+)\]")


def _kmap_mux_functions(table: KMap, iface: Interface, spec: str
                        ) -> list[tuple[str, list[str], Function]]:
    """A K-map realised as a mux: selector variables (not ports) pick ``out[k]`` of a vector.

    Only when the prose states the links (``ab = 00 is connected to mux_in[0]``), every stated
    link is the binary index of its selector code, and the remaining map variables are exactly
    the inputs; then ``out[k]`` is the map's column/row slice where the selectors equal ``k``.
    """
    outs = [p for p in iface.ports if p.direction == "output"]
    links = _MUX_LINK.findall(spec)
    if len(outs) != 1 or outs[0].width < 2 or not links:
        raise Decline(f"a single K-map cannot drive outputs {iface.bits('output')}", "interface")
    out = outs[0]
    sel_specs = {spec_ for spec_, *_ in links}
    if len(sel_specs) != 1 or {o for *_, o, _ in links} != {out.name}:
        raise Decline("mux K-map: the selector links name more than one selector or output",
                      "ambiguous")
    codes = {code for _, code, _, _ in links}
    width = {len(c) for c in codes}
    if len(width) != 1 or 1 << width.pop() != out.width or len(links) < 2:
        raise Decline("mux K-map: the selector codes do not index the output vector",
                      "interface")
    for _, code, _, index in links:
        if int(code, 2) != int(index) or int(index) not in out.indices:
            raise Decline(f"mux K-map: code {code} is linked to {out.name}[{index}], not its "
                          "binary index", "ambiguous")
    sel_spec = sel_specs.pop()
    inputs = [p for p in iface.ports if p.direction == "input"]
    readings = set()
    for rows, cols in itertools.product(_var_splits(table.row_spec, table.row_bits),
                                        _var_splits(table.col_spec, table.col_bits)):
        names = rows + cols
        for sel in _var_splits(sel_spec, len(next(iter(codes)))):
            if not set(sel) <= set(names) or len(set(names)) != len(names):
                continue
            data = [nm for nm in names if nm not in sel]
            if any(resolve_names([s], inputs, spec) is not None for s in sel):
                continue
            got = resolve_names(data, inputs, spec)
            if got is not None and all(len(g) == 1 for g in got):
                readings.add((names, sel, tuple(g[0] for g in got)))
    if len(readings) != 1:
        raise Decline("mux K-map: cannot tell the selector and data variables apart",
                      "ambiguous" if readings else "interface")
    names, sel, data_bits = readings.pop()
    if sorted(data_bits) != sorted(iface.bits("input")) or len(set(data_bits)) != len(data_bits):
        raise Decline("mux K-map: the data variables do not cover the inputs exactly once",
                      "interface")
    n = len(names)
    sel_pos = [names.index(s) for s in sel]
    data_pos = [k for k in range(n) if names[k] not in sel]
    functions = []
    for index in out.indices:
        ones, zeros = set(), set()
        for rlab, clab, value in table.cells:
            bits = rlab + clab
            if int("".join(bits[k] for k in sel_pos), 2) != index or value is None:
                continue
            m = int("".join(bits[k] for k in data_pos), 2)
            (ones if value == 1 else zeros).add(m)
        functions.append((f"{out.name}[{index}]", list(data_bits),
                          Function(len(data_pos), frozenset(ones), frozenset(zeros))))
    return functions


def _kmap_functions(table: KMap, iface: Interface, spec: str) -> list[tuple[str, list[str],
                                                                            Function]]:
    outputs = iface.bits("output")
    if len(outputs) != 1:
        return _kmap_mux_functions(table, iface, spec)
    readings: set[tuple[str, ...]] = set()
    inputs = [p for p in iface.ports if p.direction == "input"]
    row_opts = _var_splits(table.row_spec, table.row_bits)
    col_opts = _var_splits(table.col_spec, table.col_bits)
    if not row_opts or not col_opts:
        raise Decline(f"K-map variables {table.row_spec!r}/{table.col_spec!r} do not match "
                      f"its {table.row_bits}+{table.col_bits} label bits")
    for rows, cols in itertools.product(row_opts, col_opts):
        got = resolve_names(rows + cols, inputs, spec)
        if got is not None and all(len(g) == 1 for g in got):
            readings.add(tuple(g[0] for g in got))
    if len(readings) != 1:
        raise Decline("cannot map the K-map variables to the input ports" if not readings
                      else "the K-map variables map to the ports in more than one way",
                      "interface" if not readings else "ambiguous")
    names = list(readings.pop())
    if len(set(names)) != len(names) or set(names) != set(iface.bits("input")):
        raise Decline(f"K-map variables {names} do not cover the inputs exactly once")
    ones, zeros = set(), set()
    for rlab, clab, value in table.cells:
        m = int(rlab + clab, 2)
        if value == 1:
            ones.add(m)
        elif value == 0:
            zeros.add(m)
    return [(outputs[0], names, Function(len(names), frozenset(ones), frozenset(zeros)))]


def _tt_functions(
    table: TruthTable, iface: Interface, spec: str
) -> tuple[list[tuple[str, list[str], Function]], bool]:
    ports_by = {p.name: p for p in iface.ports}
    skip = set()
    waveform = False
    for k, head in enumerate(table.header):
        low = head.lower()
        if head in ports_by or low not in _INDEX_NAMES | _TIME_NAMES:
            continue
        if k != 0:
            raise Decline(f"column {head!r} is neither a port nor a leading index/time column")
        skip.add(k)
        waveform = low in _TIME_NAMES
    cols = [k for k in range(len(table.header)) if k not in skip]
    resolved = resolve_names([table.header[k] for k in cols], iface.ports, spec)
    if resolved is None:
        raise Decline(f"cannot map truth-table columns {list(table.header)} to ports")
    inputs_set, outputs_set = set(iface.bits("input")), set(iface.bits("output"))
    in_cols: list[tuple[int, list[str]]] = []
    out_cols: list[tuple[int, list[str]]] = []
    for k, bits in zip(cols, resolved, strict=True):
        if set(bits) <= inputs_set:
            in_cols.append((k, bits))
        elif set(bits) <= outputs_set:
            out_cols.append((k, bits))
        else:
            raise Decline(f"column {table.header[k]!r} mixes inputs and outputs")
    in_bits = [b for _, bits in in_cols for b in bits]
    out_bits = [b for _, bits in out_cols for b in bits]
    if sorted(in_bits) != sorted(inputs_set) or len(set(in_bits)) != len(in_bits):
        raise Decline("the truth table's input columns do not cover the inputs exactly once")
    if sorted(out_bits) != sorted(outputs_set) or len(set(out_bits)) != len(out_bits):
        raise Decline("the truth table's output columns do not cover the outputs exactly once")
    if len(in_bits) > MAX_INPUTS:
        raise Decline(f"more than {MAX_INPUTS} inputs", "too_large")
    if waveform and (not re.search(r"\bcombinational\b", spec, re.I)
                     or re.search(r"\b(?:sequential|flip-?flops?|latch|registers?)\b", spec, re.I)
                     or any(re.search(r"cl(?:oc)?k", b, re.I) for b in in_bits)):
        raise Decline("a waveform is only read as a table of a circuit said to be combinational")
    n = len(in_bits)
    seen: dict[int, tuple[int | None, ...]] = {}
    for row in table.rows:
        for k in skip:
            if not re.fullmatch(r"\d+(?:\.\d+)?[A-Za-z]*", row[k]):
                raise Decline(f"index/time value {row[k]!r} is not a number")
        pattern = ""
        for k, bits in in_cols:
            value = row[k]
            if len(value) != len(bits) or not set(value) <= set("01" if waveform else "01xX-"):
                raise Decline(f"input value {value!r} does not fit column {table.header[k]!r}")
            pattern += value
        outs: list[int | None] = []
        for k, bits in out_cols:
            value = row[k]
            allowed = "01" if waveform else "01xXdD-"
            if len(value) != len(bits) or not set(value) <= set(allowed):
                raise Decline(f"output value {value!r} does not fit column {table.header[k]!r}")
            outs.extend(int(c) if c in "01" else None for c in value)
        free = [p for p, c in enumerate(pattern) if c not in "01"]
        for fill in itertools.product("01", repeat=len(free)):
            chars = list(pattern)
            for p, c in zip(free, fill, strict=True):
                chars[p] = c
            m = int("".join(chars), 2) if chars else 0
            if m in seen and (not waveform or seen[m] != tuple(outs)):
                raise Decline(f"input combination {''.join(chars)} appears twice")
            seen[m] = tuple(outs)
    if len(seen) != 1 << n:
        raise Decline(f"the table gives {len(seen)} of {1 << n} input combinations")
    functions = []
    for j, target in enumerate(out_bits):
        ones = frozenset(m for m, v in seen.items() if v[j] == 1)
        zeros = frozenset(m for m, v in seen.items() if v[j] == 0)
        functions.append((target, in_bits, Function(n, ones, zeros)))
    return functions, waveform


def _reorder(f: Function, names: Sequence[str], order: Sequence[str]
             ) -> tuple[list[str], Function]:
    """``f`` with its variables in port order, so expressions read like the module header."""
    where = [list(names).index(b) for b in order]
    n = f.n

    def move(m: int) -> int:
        return sum(1 << (n - 1 - j) for j, i in enumerate(where) if m >> (n - 1 - i) & 1)

    return list(order), Function(n, frozenset(map(move, f.ones)), frozenset(map(move, f.zeros)))


def emit_verilog(iface: Interface, assigns: Sequence[tuple[str, str]]) -> str:
    """A Verilog-2001 module with the interface's exact names and ranges, one assign per bit."""
    decls = ",\n".join(f"    {p.declaration()}" for p in iface.ports)
    body = "".join(f"    assign {target} = {expr};\n" for target, expr in assigns)
    return f"module {iface.top} (\n{decls}\n);\n{body}endmodule\n"


def _parses(verilog: str, top: str) -> bool:
    from pyslang import ast, syntax

    compilation = ast.Compilation()
    compilation.addSyntaxTree(syntax.SyntaxTree.fromText(verilog, "solution.v"))
    return not any(d.isError() for d in compilation.getAllDiagnostics()) and any(
        inst.name == top for inst in compilation.getRoot().topInstances
    )


def solve(spec: str, *, top: str | None = None, ports: Sequence[Port] = ()) -> Solution:
    """Solve the one K-map or truth table in ``spec``; raise :class:`Decline` when unsure.

    ``top``/``ports`` come from the task; a module header or interface list in the spec is
    preferred and must agree with them. Every emitted expression is checked against every
    specified minterm before it is returned, and the module must parse.
    """
    iface, body = find_interface(spec, top=top, ports=ports)
    tables = find_tables(body)
    if not tables:
        return _solve_without_table(body, iface)
    if len(tables) > 1:
        raise Decline(f"{len(tables)} tables found (lines {[t.line for t in tables]}); "
                      "cannot tell which one is meant", "ambiguous")
    table = tables[0]
    kind: SolutionKind
    if isinstance(table, KMap):
        functions = _kmap_functions(table, iface, spec)
        kind = "kmap" if len(iface.bits("output")) == 1 else "kmap_mux"
    else:
        functions, waveform = _tt_functions(table, iface, spec)
        kind = "waveform" if waveform else "truth_table"
    outputs = []
    for target, table_names, table_f in functions:
        names, f = _reorder(table_f, table_names, iface.bits("input"))
        expr = minimise(f, names)
        if not matches(expr.text, names, f):  # never expected; the last line of defence
            raise Decline(f"internal check failed for {target}", "internal")
        outputs.append(OutputSolution(target, tuple(names), f, expr))
    order = {b: k for k, b in enumerate(iface.bits("output"))}
    outputs.sort(key=lambda o: order[o.target])
    verilog = emit_verilog(iface, [(o.target, o.expression.text) for o in outputs])
    if not _parses(verilog, iface.top):
        raise Decline("internal check failed: the emitted module does not parse", "internal")
    return Solution(iface.top, iface.ports, kind, tuple(outputs), verilog)


def _solve_without_table(body: str, iface: Interface) -> Solution:
    """Specs with no plain K-map or truth table: clocked tables, then minterm lists."""
    from rtlforge.plugins.generators.symbolic import prose, sequential  # they import this

    for clocked in (sequential.solve_flipflop, sequential.solve_automaton):
        got = clocked(body, iface)
        if got is not None:
            out = OutputSolution(got.target, got.inputs, got.function, got.expression)
            if not _parses(got.verilog, iface.top):
                raise Decline("internal check failed: the emitted module does not parse",
                              "internal")
            kind: SolutionKind = "flipflop" if got.kind == "flipflop" else "automaton"
            return Solution(iface.top, iface.ports, kind, (out,), got.verilog)
    minterms = prose.solve_minterms(body, iface)
    if minterms is None:
        raise Decline("no Karnaugh map or truth table found", "no_table")
    outputs = []
    for target, names, f, expr in minterms:
        if not matches(expr.text, names, f):
            raise Decline(f"internal check failed for {target}", "internal")
        outputs.append(OutputSolution(target, tuple(names), f, expr))
    verilog = emit_verilog(iface, [(o.target, o.expression.text) for o in outputs])
    if not _parses(verilog, iface.top):
        raise Decline("internal check failed: the emitted module does not parse", "internal")
    return Solution(iface.top, iface.ports, "minterms", tuple(outputs), verilog)


def try_solve(spec: str, *, top: str | None = None, ports: Sequence[Port] = ()
              ) -> Solution | None:
    """:func:`solve`, with None instead of :class:`Decline`."""
    try:
        return solve(spec, top=top, ports=ports)
    except Decline:
        return None
