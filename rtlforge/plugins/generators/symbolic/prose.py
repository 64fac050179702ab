"""Truth tables given as minterm lists in prose ("a logic-1 when 2, 7, or 15 appears ...").

The ECE241-style wording names the inputs in order, the numbers that give 1, the numbers that
give 0 and the numbers that never occur (don't-cares). The variable order must be stated (an
``(a,b,c,d)`` list equal to the inputs as declared) and, where the spec gives a worked example
("7 corresponds to a,b,c,d being set to 0,1,1,1"), the example must agree with it. Every number
must be classified exactly once; each output then implements the same function, in sum-of-
products form unless the prose asks for that output in product-of-sums form.
"""

from __future__ import annotations

import re

from rtlforge.plugins.generators.symbolic.logic_min import (
    Decline,
    Expression,
    Function,
    Implicant,
    Interface,
    _term_text,
    minimise,
    minimum_cover,
)

_NUMBERS = r"(\d+(?:\s*,\s*(?:or\s+|and\s+)?\d+)*(?:\s*,?\s*(?:or|and)\s+\d+)?)"
_ONES = re.compile(rf"\blogic[- ]?1\s+when\s+{_NUMBERS}\s+appears?", re.I)
_ZEROS = re.compile(rf"\blogic[- ]?0\s+when\s+{_NUMBERS}\s+appears?", re.I)
_FREE = re.compile(rf"\b(?:numbers?|values?)\s+{_NUMBERS}\s+(?:never|do(?:es)?\s+not)\s+occur",
                   re.I)
_ORDER = re.compile(r"\binputs?\s*\(\s*([A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)+)\s*\)")
_EXAMPLE = re.compile(r"\b(\d+)\s+corresponds\s+to\s+([A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)+)"
                      r"\s+being\s+set\s+to\s+([01](?:\s*,\s*[01])+)", re.I)


def _numbers(text: str) -> list[int]:
    return [int(t) for t in re.findall(r"\d+", text)]


def _pos(f: Function, names: list[str]) -> Expression:
    """Minimum product of sums: the minimum SOP of the complement, De Morgan'd."""
    if not f.ones or not f.zeros:
        return minimise(f, names)
    complement = Function(f.n, f.zeros, f.ones)
    clauses: list[tuple[str, int]] = []
    for imp in minimum_cover(complement):
        flipped = Implicant(~imp.value & ~imp.mask & ((1 << f.n) - 1), imp.mask)
        text, k = _term_text(flipped, names)
        clauses.append((text.replace(" & ", " | "), k))
    text = " & ".join(f"({t})" if k > 1 else t for t, k in clauses)
    return Expression(text, "pos", len(clauses), sum(k for _, k in clauses))


def solve_minterms(spec: str, iface: Interface) -> list[tuple[str, list[str], Function,
                                                              Expression]] | None:
    """Outputs for a minterm-list spec, None when the spec has no such wording."""
    ones_m, zeros_m = _ONES.findall(spec), _ZEROS.findall(spec)
    if not ones_m and not zeros_m:
        return None
    if len(ones_m) != 1 or len(zeros_m) != 1:
        raise Decline("minterm lists: need exactly one logic-1 list and one logic-0 list",
                      "ambiguous")
    inputs = iface.bits("input")
    order = _ORDER.findall(spec)
    if len(order) != 1:
        raise Decline("minterm lists: the order of the input variables is not stated",
                      "ambiguous")
    names = [n.strip() for n in order[0].split(",")]
    if names != inputs:
        raise Decline(f"minterm lists: variables {names} are not the inputs {inputs} in "
                      "declared order", "interface")
    n = len(names)
    for number, who, bits in _EXAMPLE.findall(spec):
        who_names = [w.strip() for w in who.split(",")]
        values = "".join(b.strip() for b in bits.split(","))
        if who_names != names or len(values) != n or int(values, 2) != int(number):
            raise Decline("minterm lists: the worked example contradicts the variable order",
                          "ambiguous")
    ones, zeros = set(_numbers(ones_m[0])), set(_numbers(zeros_m[0]))
    free: set[int] = set()
    for m in _FREE.findall(spec):
        free |= set(_numbers(m))
    everything = ones | zeros | free
    if ones & zeros or ones & free or zeros & free or everything != set(range(1 << n)):
        raise Decline("minterm lists: the numbers do not classify every input combination "
                      "exactly once", "malformed")
    outputs = iface.bits("output")
    if len(outputs) > 1 and not all(
            re.search(rf"\boutput\s+{re.escape(o)}\s+in\s+(?:a\s+)?minimum\s+"
                      r"(?:sum-of-products|product-of-sums)", spec, re.I) for o in outputs):
        raise Decline("minterm lists: several outputs, not each tied to a form of the one "
                      "function", "ambiguous")
    f = Function(n, frozenset(ones), frozenset(zeros))
    solved = []
    for out in outputs:
        wants_pos = re.search(rf"\boutput\s+{re.escape(out)}\s+in\s+(?:a\s+)?minimum\s+"
                              r"product-of-sums", spec, re.I)
        expr = _pos(f, names) if wants_pos else minimise(f, names)
        solved.append((out, names, f, expr))
    return solved
