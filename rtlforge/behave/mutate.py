"""Single-edit mutants of a Verilog design, found on slang's syntax tree.

A mutation study needs real, small bugs: each mutant here is exactly one textual edit of the
original source (one operator, one literal, one condition, one pair of branches, one output
driver), with a stable id, the operator, the line and a readable description, so a report can
say which bug a testbench missed and anyone can re-create it.

Edits are placed from the syntax tree, not from regexes over the text: that is what tells the
``<=`` of a non-blocking assignment from the ``<=`` comparison (only the latter is a
``LessThanEqualExpression``), keeps comments and strings out of reach (they are trivia and
string tokens, never expression nodes) and reads sized literals such as ``8'hFF`` as one value.
Every mutant is parsed again and dropped if slang reports an error.

The input is a trusted design (a benchmark's golden): slang's preprocessor runs on it, which is
not bounded for hostile text (see :mod:`rtlforge.eda.modules`). Edits whose tokens do not sit
verbatim in the text (macro expansions) are skipped.

Operators:

- ``op_swap``: ``+``/``-``, ``&``/``|``, ``^``/``~^``, ``&&``/``||``, ``==``/``!=``,
  ``===``/``!==``, ``<<``/``>>``, ``<<<``/``>>>``, ``<``/``>``, ``<=``/``>=`` (comparisons);
- ``cmp_off_by_one``: a comparison's boundary moves (``<``/``<=``, ``>``/``>=``);
- ``const_inc``/``const_dec`` (+1/-1, wrapping at a sized literal's width),
  ``const_flip_lsb``/``const_flip_msb`` (sized literals only): integer literals in expressions,
  not in declared dimensions, parameter port lists or delays (those change the interface or
  nothing at all);
- ``cond_invert``: ``if (c)`` becomes ``if (!(c))``;
- ``branch_swap``: the bodies of an ``if``/``else`` trade places; ``ternary_swap``: the arms
  of ``?:`` do;
- ``stuck_at_0``/``stuck_at_1``: a continuous assignment to an output port drives ``0`` or
  ``~0`` (all ones at any width) instead.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict

__all__ = [
    "OPERATORS",
    "Mutant",
    "mutants",
    "parses",
    "sample_mutants",
]

OPERATORS = (
    "op_swap", "cmp_off_by_one", "const_inc", "const_dec", "const_flip_lsb", "const_flip_msb",
    "cond_invert", "branch_swap", "ternary_swap", "stuck_at_0", "stuck_at_1",
)

#: Binary operator token text -> its swap partner (``op_swap``).
_SWAPS = {
    "+": "-", "-": "+", "&": "|", "|": "&", "^": "~^", "~^": "^", "^~": "^",
    "&&": "||", "||": "&&", "==": "!=", "!=": "==", "===": "!==", "!==": "===",
    "<<": ">>", ">>": "<<", "<<<": ">>>", ">>>": "<<<",
    "<": ">", ">": "<", "<=": ">=", ">=": "<=",
}
#: Comparison -> the same comparison with its boundary moved by one (``cmp_off_by_one``).
_BOUNDARY = {"<": "<=", "<=": "<", ">": ">=", ">=": ">"}
#: Syntax kinds of binary expressions whose operator may be swapped (assignments are not).
_BINARY_KINDS = frozenset({
    "AddExpression", "SubtractExpression", "BinaryAndExpression", "BinaryOrExpression",
    "BinaryXorExpression", "BinaryXnorExpression", "LogicalAndExpression",
    "LogicalOrExpression", "EqualityExpression", "InequalityExpression",
    "CaseEqualityExpression", "CaseInequalityExpression", "LogicalShiftLeftExpression",
    "LogicalShiftRightExpression", "ArithmeticShiftLeftExpression",
    "ArithmeticShiftRightExpression", "LessThanExpression", "LessThanEqualExpression",
    "GreaterThanExpression", "GreaterThanEqualExpression",
})
#: A literal or operator under one of these is part of a declaration's shape, not of logic.
_SHAPE_KINDS = frozenset({
    "VariableDimension", "ParameterPortList", "DelayControl", "Delay3", "OneStepDelay",
    "CycleDelay", "TimeUnitsDeclaration", "TimescaleDirective",
})
_DIGITS = re.compile(r"[0-9a-fA-F_]+")
_BASES = {"b": 2, "o": 8, "d": 10, "h": 16}


class Mutant(BaseModel):
    """One single-edit variant of a source text."""

    model_config = ConfigDict(frozen=True)

    id: str  # operator@line:column, with #n when one place has several variants
    operator: str
    line: int  # 1-based, of the edit's start
    column: int  # 1-based
    start: int  # character offsets of the replaced text in the original
    end: int
    original: str
    replacement: str
    description: str
    source: str  # the whole mutated text

    @property
    def digest(self) -> str:
        """Content hash of the mutated text (what a result cache is keyed by)."""
        return hashlib.sha256(self.source.encode()).hexdigest()


@dataclass(frozen=True)
class _Edit:
    operator: str
    start: int
    end: int
    replacement: str
    description: str


def _syntax() -> Any:
    from pyslang import syntax  # lazy: slang is heavy and only mutation needs it here

    return syntax


def parses(text: str) -> bool:
    """Whether slang parses ``text`` without an error (warnings are fine)."""
    tree = _syntax().SyntaxTree.fromText(text)
    return not any(d.isError() for d in tree.diagnostics)


def _span(node: Any) -> tuple[int, int]:
    r = node.sourceRange
    return r.start.offset, r.end.offset


def _nodes(root: Any) -> list[Any]:
    syntax = _syntax()
    out: list[Any] = []
    root.visit(lambda n: out.append(n) if isinstance(n, syntax.SyntaxNode) else None)
    return out


def _in_shape(node: Any) -> bool:
    parent = node.parent
    while parent is not None:
        if parent.kind.name in _SHAPE_KINDS:
            return True
        parent = parent.parent
    return False


def _literal_variants(size: int | None, base: str, digits: str) -> Iterator[tuple[str, str, str]]:
    """(operator, new literal, description) for a literal ``[size]'base digits`` or a decimal."""
    clean = digits.replace("_", "")
    radix = _BASES[base[-1].lower()] if base else 10
    try:
        value = int(clean, radix)
    except ValueError:  # x/z/? digits: not a number to change
        return
    width = size if size is not None else None
    modulus = 1 << width if width else None

    def text(v: int) -> str:
        if not base:
            return str(v)
        body = {2: "b", 8: "o", 10: "d", 16: "x"}[radix]
        shown = format(v, body)
        if radix != 10:
            shown = shown.rjust(len(clean), "0")
            if any(c.isalpha() for c in clean) and clean == clean.upper():
                shown = shown.upper()
        return f"{size if size is not None else ''}{base}{shown}"

    inc = value + 1 if modulus is None else (value + 1) % modulus
    yield "const_inc", text(inc), f"{value} -> {inc}"
    if value > 0 or modulus is not None:
        dec = value - 1 if modulus is None else (value - 1) % modulus
        yield "const_dec", text(dec), f"{value} -> {dec}"
    if width:
        yield "const_flip_lsb", text(value ^ 1), f"bit 0 flipped: {value} -> {value ^ 1}"
        if width > 1:
            top = value ^ (1 << (width - 1))
            yield "const_flip_msb", text(top), f"bit {width - 1} flipped: {value} -> {top}"


def _output_ports(nodes: Sequence[Any]) -> set[str]:
    """Names declared as outputs: in an ANSI port list (where a port without a direction
    continues the previous one: ``output a, b``) or in ``output`` declarations."""
    outputs: set[str] = set()
    for node in nodes:
        kind = node.kind.name
        if kind == "PortDeclaration":
            direction = getattr(node.header, "direction", None)
            if direction is not None and direction.rawText == "output":
                # the list holds the separating commas too
                outputs.update(d.name.rawText for d in node.declarators
                               if isinstance(d, _syntax().SyntaxNode))
        elif kind == "AnsiPortList":
            current = None
            for port in node.ports:
                if port.kind.name != "ImplicitAnsiPort":
                    continue
                direction = getattr(port.header, "direction", None)
                if direction is not None and direction.rawText:
                    current = direction.rawText
                if current == "output":
                    outputs.add(port.declarator.name.rawText)
    return outputs


def _base_name(expr: Any) -> str | None:
    kind = expr.kind.name
    if kind in ("IdentifierName", "IdentifierSelectName"):
        return str(expr.identifier.rawText)
    return None


def _edits(text: str) -> list[_Edit]:
    syntax = _syntax()
    tree = syntax.SyntaxTree.fromText(text)
    nodes = _nodes(tree.root)
    edits: list[_Edit] = []

    def verbatim(start: int, end: int, expect: str | None = None) -> bool:
        return 0 <= start <= end <= len(text) and (expect is None or text[start:end] == expect)

    outputs = _output_ports(nodes)
    for node in nodes:
        kind = node.kind.name
        if kind in _BINARY_KINDS and not _in_shape(node):
            tok = node.operatorToken
            op = tok.rawText
            start = tok.location.offset
            end = start + len(op)
            if not verbatim(start, end, op):
                continue
            if op in _SWAPS:
                edits.append(_Edit("op_swap", start, end, _SWAPS[op], f"{op} -> {_SWAPS[op]}"))
            if op in _BOUNDARY:
                edits.append(_Edit("cmp_off_by_one", start, end, _BOUNDARY[op],
                                   f"{op} -> {_BOUNDARY[op]}"))
        elif kind in ("IntegerLiteralExpression", "IntegerVectorExpression") \
                and not _in_shape(node):
            start, end = _span(node)
            if not verbatim(start, end) or node.parent.kind.name == "IntegerVectorExpression":
                continue
            if kind == "IntegerLiteralExpression":
                raw = node.literal.rawText
                if node.literal.kind.name != "IntegerLiteral" or not raw.isdigit():
                    continue
                variants = _literal_variants(None, "", raw)
            else:
                size = node.size.rawText if node.size is not None else ""
                base, digits = node.base.rawText, node.value.rawText
                if not base or not _DIGITS.fullmatch(digits) or (size and not size.isdigit()):
                    continue
                variants = _literal_variants(int(size) if size else None, base, digits)
            for operator, new, description in variants:
                edits.append(_Edit(operator, start, end, new, f"constant {description}"))
        elif kind == "ConditionalStatement":
            preds = node.predicate
            start, end = _span(preds)
            if not verbatim(start, end):
                continue
            cond = text[start:end]
            edits.append(_Edit("cond_invert", start, end, f"!({cond})",
                               f"condition ({cond}) inverted"))
            if node.elseClause is not None:
                s0, s1 = _span(node.statement)
                e0, e1 = _span(node.elseClause.clause)
                if verbatim(s0, e1) and s1 <= e0:
                    then_text, else_text = text[s0:s1], text[e0:e1]
                    middle = text[s1:e0]  # " else " with its whitespace and comments
                    edits.append(_Edit("branch_swap", s0, e1, else_text + middle + then_text,
                                       f"if ({cond}): then and else bodies swapped"))
        elif kind == "ConditionalExpression":
            a0, a1 = _span(node.left)
            b0, b1 = _span(node.right)
            if verbatim(a0, b1) and a1 <= b0:
                middle = text[a1:b0]
                edits.append(_Edit("ternary_swap", a0, b1, text[b0:b1] + middle + text[a0:a1],
                                   "?: arms swapped"))
        elif kind == "ContinuousAssign":
            for assignment in node.assignments:
                if assignment.kind.name != "AssignmentExpression":
                    continue
                name = _base_name(assignment.left)
                if name is None or name not in outputs:
                    continue
                start, end = _span(assignment.right)
                if not verbatim(start, end):
                    continue
                edits.append(_Edit("stuck_at_0", start, end, "0", f"output {name} stuck at 0"))
                edits.append(_Edit("stuck_at_1", start, end, "~0",
                                   f"output {name} stuck at 1 (all ones)"))
    return edits


def _line_col(text: str, offset: int) -> tuple[int, int]:
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


def mutants(text: str) -> list[Mutant]:
    """Every single-edit mutant of ``text`` that still parses, in source order.

    Deterministic: the same text gives the same mutants, ids and order. Edits that change
    nothing, or give a text another edit already gave, are dropped.
    """
    out: list[Mutant] = []
    seen: set[str] = {text}
    ids: dict[str, int] = {}
    for edit in sorted(_edits(text), key=lambda e: (e.start, OPERATORS.index(e.operator),
                                                    e.end, e.replacement)):
        source = text[:edit.start] + edit.replacement + text[edit.end:]
        if source in seen or not parses(source):
            continue
        seen.add(source)
        line, column = _line_col(text, edit.start)
        base = f"{edit.operator}@{line}:{column}"
        ids[base] = ids.get(base, 0) + 1
        out.append(Mutant(
            id=base if ids[base] == 1 else f"{base}#{ids[base]}", operator=edit.operator,
            line=line, column=column, start=edit.start, end=edit.end,
            original=text[edit.start:edit.end], replacement=edit.replacement,
            description=edit.description, source=source,
        ))
    return out


def sample_mutants(found: Sequence[Mutant], cap: int, *, seed: str) -> list[Mutant]:
    """At most ``cap`` of ``found``, drawn with a generator seeded by ``seed`` (e.g. the design
    name), returned in source order: the same inputs always give the same sample."""
    if len(found) <= cap:
        return list(found)
    rng = random.Random(int.from_bytes(hashlib.sha256(seed.encode()).digest()[:8], "big"))
    keep = set(rng.sample(range(len(found)), cap))
    return [m for i, m in enumerate(found) if i in keep]
