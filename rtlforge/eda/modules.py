"""Module names in Verilog text, read by one bounded scanner instead of six regexes.

The text is untrusted (candidates, task files, LLM outputs) and this runs in the host process,
so it must be linear in the input and unable to crash: no macro is ever expanded (pyslang's
preprocessor, run here, exhausts memory on an exponential macro and overflows the C stack on a
deeply nested one; those are the gate's to judge, in its bounded jailed workers), no file is
opened for an ```include``, and nothing recurses. What it reads, it reads like a tokenizer:

- comments, strings, attributes ``(* ... *)`` and ```define`` bodies are skipped, so
  ``module x`` inside them is no declaration;
- ```ifdef``/```ifndef``/```elsif``/```else``/```endif`` are followed, with names from
  ```define``/```undef`` earlier in the same text, so a disabled branch declares nothing;
- ``module``/``macromodule`` (with an optional ``automatic``/``static``) then a name, plain or
  escaped (``\\name``), is a declaration; ``endmodule`` closes it (nested modules nest);
- inside a module, ``type [#(...)] name (`` or ``type name [`` is an instantiation of ``type``.

A declaration written by a macro (```MAKE(name)``) is not seen: finding it would need the
expansion this module refuses to do. Scans are cached per text (keyed by its digest).
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

__all__ = [
    "MAX_SOURCE_CHARS",
    "VERILOG_KEYWORDS",
    "ModuleDecl",
    "ModuleScan",
    "declared_modules",
    "instantiated_modules",
    "rename_module",
    "scan_modules",
    "top_modules",
]

#: Texts longer than this are not scanned (a design this large is not a candidate).
MAX_SOURCE_CHARS = 4_000_000

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*")
_ESCAPED = re.compile(r"\\\S+")
_SPACE = re.compile(r"\s+")
_DIRECTIVE = re.compile(r"`[A-Za-z_][A-Za-z0-9_$]*")
_DEFINE_NAME = re.compile(r"[ \t]*([A-Za-z_][A-Za-z0-9_$]*)")
#: Keywords after which ``name #(`` or ``name name (`` declares something rather than
#: instantiating a module (``class c #(...)``, ``function automatic f(...)``).
_DECLARES = frozenset({
    "class", "interface", "program", "package", "function", "task", "typedef", "property",
    "sequence", "covergroup", "checker", "config", "primitive", "module", "macromodule",
    "automatic", "static", "virtual", "extends", "implements", "import", "export", "bind",
})
#: Verilog/SystemVerilog keywords: never a module type at the start of an instantiation.
_KEYWORDS = frozenset("""
always always_comb always_ff always_latch and assert assign assume automatic before begin bind
bins binsof bit break buf bufif0 bufif1 byte case casex casez cell chandle checker class clocking
cmos config const constraint context continue cover covergroup coverpoint cross deassign default
defparam design disable dist do edge else end endcase endchecker endclass endclocking endconfig
endfunction endgenerate endgroup endinterface endmodule endpackage endprimitive endprogram
endproperty endspecify endsequence endtable endtask enum event eventually expect export extends
extern final first_match for force foreach forever fork forkjoin function generate genvar global
highz0 highz1 if iff ifnone ignore_bins illegal_bins implements implies import incdir include
initial inout input inside instance int integer interconnect interface intersect join join_any
join_none large let liblist library local localparam logic longint macromodule matches medium
modport module nand negedge nettype new nexttime nmos nor noshowcancelled not notif0 notif1 null
or output package packed parameter pmos posedge primitive priority program property protected
pull0 pull1 pulldown pullup pulsestyle_ondetect pulsestyle_onevent pure rand randc randcase
randsequence rcmos real realtime ref reg reject_on release repeat restrict return rnmos rpmos
rtran rtranif0 rtranif1 s_always s_eventually s_nexttime s_until s_until_with scalared sequence
shortint shortreal showcancelled signed small soft solve specify specparam static string strong
strong0 strong1 struct super supply0 supply1 sync_accept_on sync_reject_on table tagged task this
throughout time timeprecision timeunit tran tranif0 tranif1 tri tri0 tri1 triand trior trireg
type typedef union unique unique0 unsigned until until_with untyped use uwire var vectored
virtual void wait wait_order wand weak weak0 weak1 while wildcard wire with within wor xnor xor
""".split())  # noqa: SIM905 - 250 words read better as text than as a list literal
#: The reserved words, for callers that check a name a model chose (never a module name).
VERILOG_KEYWORDS = _KEYWORDS


@dataclass(frozen=True)
class ModuleDecl:
    """One module declaration; ``start``/``end`` delimit its name in the text (for renaming)."""

    name: str
    start: int | None
    end: int | None
    instantiates: frozenset[str]


@dataclass(frozen=True)
class ModuleScan:
    """The module declarations of one text, in order; ``ok`` is False when it was not scanned."""

    modules: tuple[ModuleDecl, ...] = ()
    ok: bool = True

    @property
    def declared(self) -> list[str]:
        return [m.name for m in self.modules]

    @property
    def instantiated(self) -> frozenset[str]:
        return frozenset(n for m in self.modules for n in m.instantiates)


def scan_modules(text: str) -> ModuleScan:
    """Declarations (nested ones included) and what each instantiates; cached per text."""
    if len(text) > MAX_SOURCE_CHARS:
        return ModuleScan(ok=False)
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    return _scan(digest, text)


@functools.lru_cache(maxsize=2048)
def _scan(digest: str, text: str) -> ModuleScan:
    del digest  # the cache key; text rides along so a hit never re-hashes a long string twice
    try:
        return _parse(text)
    except Exception:  # noqa: BLE001 - untrusted text: a scanner bug must not become a crash
        return ModuleScan(ok=False)


# ------------------------------------------------------------------------------ tokenizer

#: (kind, text, start, end); kind is "id" (identifier or escaped name, text without the
#: backslash), "dir" (a compiler directive such as ```ifdef``) or "op" (one character).
_Token = tuple[str, str, int, int]


def _skip_to(text: str, start: int, stop: str) -> int:
    """Index just past the next ``stop`` at or after ``start`` (end of text when absent)."""
    at = text.find(stop, start)
    return len(text) if at < 0 else at + len(stop)


def _skip_string(text: str, start: int) -> int:
    """Index just past the string opened at ``start`` (escapes honoured; a newline ends it)."""
    i, n = start + 1, len(text)
    while i < n:
        ch = text[i]
        if ch == "\\":
            i += 2
        elif ch == '"' or ch == "\n":
            return i + 1
        else:
            i += 1
    return n


def _skip_define(text: str, start: int) -> int:
    """Index of the end of a ```define`` line, backslash continuations included."""
    i, n = start, len(text)
    while i < n:
        end = text.find("\n", i)
        if end < 0:
            return n
        if text[end - 1:end] == "\\" or text[end - 2:end] == "\\\r":
            i = end + 1
            continue
        return end
    return n


def _tokens(text: str) -> Iterator[_Token]:
    """The tokens of ``text`` that matter for module structure, in one linear pass."""
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch.isspace():
            i = _SPACE.match(text, i).end()  # type: ignore[union-attr]
        elif text.startswith("//", i):
            i = _skip_to(text, i, "\n")
        elif text.startswith("/*", i):
            i = _skip_to(text, i + 2, "*/")
        elif text.startswith("(*", i) and not text.startswith("(*)", i):
            i = _skip_to(text, i + 2, "*)")
        elif ch == '"':
            i = _skip_string(text, i)
        elif ch == "`":
            m = _DIRECTIVE.match(text, i)
            if m is None:
                i += 1
                continue
            yield ("dir", m.group()[1:], i, m.end())
            i = m.end()
            if m.group() == "`define":  # its name counts for `ifdef; its body is never read
                name = _DEFINE_NAME.match(text, i)
                if name is not None:
                    yield ("id", name.group(1), name.start(1), name.end(1))
                    i = name.end()
                i = _skip_define(text, i)
        elif ch == "\\":
            m = _ESCAPED.match(text, i)
            if m is None:
                i += 1
                continue
            yield ("id", m.group()[1:], i, m.end())
            i = m.end()
        elif ch.isalpha() or ch == "_":
            m = _IDENT.match(text, i)
            yield ("id", m.group(), i, m.end())  # type: ignore[union-attr]
            i = m.end()  # type: ignore[union-attr]
        elif ch.isdigit() or ch == "'":
            # numbers and sized literals (8'hFF, 'b0): never names; keep their letters out
            j = i + 1
            while j < n and (text[j].isalnum() or text[j] in "_'?"):
                j += 1
            i = j
        elif ch == "$":
            m = _IDENT.match(text, i + 1)
            i = m.end() if m else i + 1  # a system task or function name
        else:
            yield ("op", ch, i, i + 1)
            i += 1


def _active(tokens: Iterator[_Token]) -> Iterator[_Token]:
    """The tokens of the branches ```ifdef`` and friends select (defines from this text)."""
    defined: set[str] = set()
    stack: list[tuple[bool, bool]] = []  # (this branch active, some branch already taken)
    dead = 0  # entries of ``stack`` whose branch is inactive: live code needs none
    pending: str | None = None  # a directive waiting for its macro name

    def set_top(active: bool, taken: bool) -> None:
        nonlocal dead
        dead += (not active) - (not stack[-1][0])
        stack[-1] = (active, taken)

    for token in tokens:
        kind, value = token[0], token[1]
        if pending is not None:
            name = value if kind == "id" else ""
            if pending in ("ifdef", "ifndef"):
                hit = (name in defined) == (pending == "ifdef")
                stack.append((hit, hit))
                dead += not hit
            elif pending == "elsif" and stack:
                taken = stack[-1][1]
                hit = not taken and name in defined
                set_top(hit, taken or hit)
            elif pending == "define" and not dead and name:
                defined.add(name)
            elif pending == "undef" and not dead:
                defined.discard(name)
            pending = None
            if kind == "id":
                continue
        if kind == "dir":
            if value in ("ifdef", "ifndef", "elsif", "define", "undef"):
                pending = value
            elif value == "else" and stack:
                set_top(not stack[-1][1], True)
            elif value == "endif" and stack:
                dead -= not stack.pop()[0]
            continue
        if not dead:
            yield token


# ------------------------------------------------------------------------------ structure


def _parse(text: str) -> ModuleScan:
    tokens = list(_active(_tokens(text)))
    modules: list[ModuleDecl] = []
    open_modules: list[tuple[str, int, int, set[str]]] = []  # name, start, end, instances
    depth = 0  # parentheses inside the current module (instantiations sit at depth 0)
    i, n = 0, len(tokens)
    while i < n:
        kind, value = tokens[i][0], tokens[i][1]
        if kind == "id" and value in ("module", "macromodule"):
            j = i + 1
            if j < n and tokens[j][1] in ("automatic", "static") and tokens[j][0] == "id":
                j += 1
            if j < n and tokens[j][0] == "id" and tokens[j][1] not in _KEYWORDS:
                _, name, n_start, n_end = tokens[j]
                modules.append(ModuleDecl(name, n_start, n_end, frozenset()))
                open_modules.append((name, len(modules) - 1, n_end, set()))
                depth = 0
                i = j + 1
                continue
        elif kind == "id" and value == "endmodule" and open_modules:
            name, index, _, used = open_modules.pop()
            decl = modules[index]
            modules[index] = ModuleDecl(decl.name, decl.start, decl.end, frozenset(used))
        elif kind == "op" and value == "(":
            depth += 1
        elif kind == "op" and value == ")":
            depth = max(0, depth - 1)
        elif open_modules and depth == 0 and _instantiates(tokens, i):
            open_modules[-1][3].add(value)
        i += 1
    for _name, index, _, used in open_modules:  # unterminated: keep what was seen
        decl = modules[index]
        modules[index] = ModuleDecl(decl.name, decl.start, decl.end, frozenset(used))
    return ModuleScan(tuple(modules))


def _instantiates(tokens: list[_Token], i: int) -> bool:
    """Whether ``tokens[i]`` is the module type of an instantiation (``type [#(..)] name (``)."""
    kind, value = tokens[i][0], tokens[i][1]
    if kind != "id" or value in _KEYWORDS:
        return False
    if i > 0 and (tokens[i - 1][1] in (".", "::", ":") or tokens[i - 1][1] in _DECLARES):
        return False
    nxt = tokens[i + 1] if i + 1 < len(tokens) else None
    if nxt is None:
        return False
    if nxt[1] == "#" and nxt[0] == "op":
        return True
    if nxt[0] != "id" or nxt[1] in _KEYWORDS:
        return False
    j = i + 2
    if j < len(tokens) and tokens[j][1] == "[":  # an array of instances: type name [n:0] (
        j = _past_brackets(tokens, j)
    return j < len(tokens) and tokens[j][0] == "op" and tokens[j][1] == "("


#: How far an instance's ``[...]`` range is followed before giving up (keeps the scan linear).
_RANGE_LOOKAHEAD = 64


def _past_brackets(tokens: list[_Token], j: int) -> int:
    """Index after the ``[...]`` groups starting at ``j`` (len(tokens) when not closed soon)."""
    depth, limit = 0, min(len(tokens), j + _RANGE_LOOKAHEAD)
    while j < limit:
        value = tokens[j][1]
        if value == "[":
            depth += 1
        elif value == "]":
            depth -= 1
            if depth == 0 and not (j + 1 < limit and tokens[j + 1][1] == "["):
                return j + 1
        j += 1
    return len(tokens)


# ------------------------------------------------------------------------------ queries


def declared_modules(text: str) -> list[str]:
    """Names of the modules ``text`` declares, in order ([] when it cannot be scanned)."""
    return scan_modules(text).declared


def instantiated_modules(text: str) -> frozenset[str]:
    """Names of the modules instantiated inside the declarations of ``text``."""
    return scan_modules(text).instantiated


def top_modules(texts: Sequence[str]) -> list[str]:
    """Declared modules no declaration of ``texts`` instantiates, in declaration order."""
    scans = [scan_modules(t) for t in texts]
    used = frozenset().union(*(s.instantiated for s in scans))
    return [name for s in scans for name in s.declared if name not in used]


def rename_module(text: str, old: str, new: str) -> str | None:
    """``text`` with the declaration of ``old`` renamed to ``new`` (nothing else touched).

    None when ``old`` is not declared in the text.
    """
    for decl in scan_modules(text).modules:
        if decl.name == old and decl.start is not None and decl.end is not None:
            raw = text[decl.start:decl.end]
            prefix = "\\" if raw.startswith("\\") else ""
            return text[:decl.start] + prefix + new + text[decl.end:]
    return None
