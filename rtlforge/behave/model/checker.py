"""The syntactic gate in front of the lowering: parse with ``ast`` (never execute), bound the
input, reject every construct outside the DSL with its line and name.

Behaviour models are untrusted (agents write them), so the gate is bounded before anything
recursive touches the tree: the source size is capped before parsing, parser failures
(``RecursionError``/``MemoryError`` on hostile nesting) become :class:`ModelError`, and the node
count and nesting depth are measured with an explicit stack. After this gate the recursive
lowering is safe: its recursion depth is bounded by :data:`MAX_DEPTH`. Typing errors (widths,
unknown names, missing assignments) are raised by :mod:`.lower` with the same error type.
"""

from __future__ import annotations

import ast

from rtlforge.behave.model.dsl import DSL_MODULE

__all__ = [
    "MAX_DEPTH",
    "MAX_NODES",
    "MAX_OPS",
    "MAX_RANGE",
    "MAX_SOURCE_BYTES",
    "MAX_WIDTH",
    "ModelError",
    "parse_checked",
]

MAX_SOURCE_BYTES = 64_000
MAX_NODES = 20_000
MAX_DEPTH = 60
#: Widest integer an expression or declaration may need (bits).
MAX_WIDTH = 4096
#: Largest trip count of one ``for i in range(...)``.
MAX_RANGE = 4096
#: Most IR operations a function may have after loops are unrolled: the per-call op budget.
MAX_OPS = 100_000

#: Builtins that mean I/O or dynamic code: named in the error so the author sees why.
_FORBIDDEN_CALLS = frozenset({
    "eval", "exec", "compile", "open", "input", "print", "getattr", "setattr", "delattr",
    "hasattr", "globals", "locals", "vars", "dir", "type", "object", "super", "id", "breakpoint",
    "memoryview", "bytearray", "bytes", "__import__", "help", "exit", "quit", "iter", "next",
})

_REJECTED: dict[type[ast.AST], tuple[str, str]] = {
    ast.While: ("while", "`while` loops are not allowed: use for i in range(N)"),
    ast.AsyncFunctionDef: ("async", "`async` functions are not allowed"),
    ast.AsyncFor: ("async", "`async for` is not allowed"),
    ast.AsyncWith: ("async", "`async with` is not allowed"),
    ast.Await: ("await", "`await` is not allowed"),
    ast.Lambda: ("lambda", "`lambda` is not allowed"),
    ast.Try: ("try", "`try`/`except` is not allowed: use fail(reason) for declared failures"),
    ast.With: ("with", "`with` is not allowed (no I/O)"),
    ast.Yield: ("yield", "`yield` is not allowed"),
    ast.YieldFrom: ("yield", "`yield from` is not allowed"),
    ast.Global: ("global", "`global` is not allowed: state lives in declared fields"),
    ast.Nonlocal: ("nonlocal", "`nonlocal` is not allowed"),
    ast.ListComp: ("comprehension", "comprehensions are not allowed: use for i in range(N)"),
    ast.SetComp: ("comprehension", "comprehensions are not allowed: use for i in range(N)"),
    ast.DictComp: ("comprehension", "comprehensions are not allowed: use for i in range(N)"),
    ast.GeneratorExp: ("comprehension", "generator expressions are not allowed"),
    ast.Raise: ("raise", "`raise` is not allowed: use fail(reason)"),
    ast.Assert: ("assert", "`assert` is not allowed: use if ...: fail(reason)"),
    ast.Delete: ("del", "`del` is not allowed"),
    ast.NamedExpr: ("walrus", "`:=` is not allowed"),
    ast.Starred: ("starred", "`*args` unpacking is not allowed"),
    ast.JoinedStr: ("f-string", "f-strings are not allowed: strings only as fail() reasons"),
    ast.Dict: ("dict", "dict literals are not allowed: return a Record"),
    ast.Set: ("set", "set literals are not allowed"),
    ast.List: ("list", "list literals are not allowed: use Array state and fill()/tuples"),
    ast.Slice: ("slice", "slices are not allowed: use bits(x, high, low)"),
    ast.Match: ("match", "`match` is not allowed: use if/elif/else"),
    ast.Break: ("break", "`break` is not allowed: loops run their full constant range"),
    ast.Continue: ("continue", "`continue` is not allowed: use if"),
}
if hasattr(ast, "TryStar"):
    _REJECTED[ast.TryStar] = ("try", "`try`/`except*` is not allowed")


class ModelError(Exception):
    """A model outside the DSL (or ill-typed): where, which construct, why."""

    def __init__(self, line: int, col: int, construct: str, message: str) -> None:
        super().__init__(f"line {line}: {message}")
        self.line = line
        self.col = col
        self.construct = construct
        self.message = message


def _at(node: ast.AST, construct: str, message: str) -> ModelError:
    return ModelError(getattr(node, "lineno", 1), getattr(node, "col_offset", 0), construct,
                      message)


def _measure(tree: ast.AST) -> None:
    """Node count and nesting depth, iteratively (a hostile tree must not recurse us)."""
    count = 0
    stack: list[tuple[ast.AST, int]] = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        count += 1
        if count > MAX_NODES:
            raise _at(node, "size", f"the model has more than {MAX_NODES} syntax nodes")
        if depth > MAX_DEPTH:
            raise _at(node, "nesting", f"nesting deeper than {MAX_DEPTH} levels")
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))


def _allowed_strings(tree: ast.Module) -> set[int]:
    """ids of the string constants the DSL permits: docstrings and fail() reasons."""
    allowed: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef) and body:
            first = body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                    and isinstance(first.value.value, str):
                allowed.add(id(first.value))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id == "fail" and len(node.args) == 1 \
                and isinstance(node.args[0], ast.Constant):
            allowed.add(id(node.args[0]))
    return allowed


def _is_dunder(name: str) -> bool:
    return name.startswith("__") or name.endswith("__")


def _check_node(node: ast.AST, strings: set[int]) -> None:
    rejected = _REJECTED.get(type(node))
    if rejected is not None:
        raise _at(node, *rejected)
    if isinstance(node, ast.Import | ast.ImportFrom):
        ok = (isinstance(node, ast.ImportFrom) and node.module == DSL_MODULE
              and node.level == 0 and all(a.name == "*" for a in node.names))
        if not ok:
            names = ", ".join(a.name for a in node.names)
            where = node.module if isinstance(node, ast.ImportFrom) else names
            raise _at(node, "import", f"`import {where}`: imports are not allowed "
                      f"(only `from {DSL_MODULE} import *`)")
    elif isinstance(node, ast.Name):
        if _is_dunder(node.id):
            raise _at(node, "dunder", f"`{node.id}`: dunder names are not allowed")
        if node.id in _FORBIDDEN_CALLS and isinstance(node.ctx, ast.Load):
            raise _at(node, node.id, f"`{node.id}` is not allowed (no I/O, no dynamic code)")
    elif isinstance(node, ast.Attribute):
        if _is_dunder(node.attr):
            raise _at(node, "dunder", f"`.{node.attr}`: dunder names are not allowed")
        base = node.value
        if isinstance(base, ast.Attribute):
            base = base.value
        if not isinstance(base, ast.Name):
            raise _at(node, "attribute", f"`.{node.attr}`: attribute access is only allowed "
                      "on self.<state>, self.<record>.<field> and Enum.<member>")
    elif isinstance(node, ast.Constant):
        value = node.value
        if isinstance(value, str):
            if id(node) not in strings:
                raise _at(node, "string", "strings are only allowed as fail() reasons and "
                          "docstrings")
        elif isinstance(value, bool) or value is None:
            if value is None:
                raise _at(node, "None", "`None` is not allowed (a bare `return` in process() "
                          "means no output this transaction)")
        elif isinstance(value, int):
            if value.bit_length() > MAX_WIDTH:
                raise _at(node, "literal", f"integer literal wider than {MAX_WIDTH} bits")
        else:
            raise _at(node, type(value).__name__,
                      f"{type(value).__name__} literals are not allowed (integers and bools)")
    elif isinstance(node, ast.FunctionDef):
        if node.decorator_list:
            raise _at(node, "decorator", "decorators are not allowed")
        if _is_dunder(node.name):
            raise _at(node, "dunder", f"`{node.name}`: dunder names are not allowed")
    elif isinstance(node, ast.ClassDef):
        if node.decorator_list or node.keywords:
            raise _at(node, "decorator", "class decorators and keywords are not allowed")
        if _is_dunder(node.name):
            raise _at(node, "dunder", f"`{node.name}`: dunder names are not allowed")
    elif isinstance(node, ast.arg) and _is_dunder(node.arg):
        raise _at(node, "dunder", f"`{node.arg}`: dunder names are not allowed")


def parse_checked(source: str) -> ast.Module:
    """Parse ``source`` and reject anything outside the DSL's syntax (not yet its typing)."""
    if len(source.encode("utf-8", "surrogatepass")) > MAX_SOURCE_BYTES:
        raise ModelError(1, 0, "size", f"the model source exceeds {MAX_SOURCE_BYTES} bytes")
    try:
        tree = ast.parse(source, mode="exec")
    except SyntaxError as exc:
        raise ModelError(exc.lineno or 1, (exc.offset or 1) - 1, "syntax",
                         f"syntax error: {exc.msg}") from None
    except (RecursionError, MemoryError):
        raise ModelError(1, 0, "nesting", "the model is nested too deeply to parse") from None
    except ValueError as exc:  # e.g. null bytes, int literal too long to convert
        raise ModelError(1, 0, "syntax", f"unparseable model: {exc}") from None
    _measure(tree)
    strings = _allowed_strings(tree)
    for node in ast.walk(tree):
        _check_node(node, strings)
    return tree
