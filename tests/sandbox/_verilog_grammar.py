"""Hypothesis grammar of adversarial Verilog preprocessor input, and a lexer for tool output.

Used by ``tests/test_security_fuzz.py`` to compare what the static security gate
(:func:`rtlforge.sandbox.security.check_sources`) lets through with what a tool's own preprocessor
(``iverilog -E``, ``verilator -E``) actually hands to the compiler.

The grammar builds sources out of *gadgets*, each a known way to smuggle a construct past a
checker that looks at the text differently from the tool:

* a forbidden name (``$system``, ``$fopen``, ``$c`` ...) split into fragments that macros,
  token pasting (``````), identity macros and juxtaposition glue back together, with the ``$``
  itself coming from a literal, a macro body or a macro argument;
* ``import``/``export`` ``"DPI-C"`` built the same way (stringification included);
* a backtick directive (```include``, ```systemc_header``, ```verilator_config``) assembled
  from a lone-backtick macro and name pieces;
* escaped identifiers (``\\$fopen ``), which Icarus treats as the system task itself;
* macros that define macros, nested calls, ``ifdef``/``else`` branches on tool macros,
  line continuations, comments next to macro uses, and CR / CRLF / LF line endings;
* a "soup" of raw fragments and macro uses with no structure at all.

Everything is wrapped in ``module m; ... initial begin ... end endmodule`` so that the inputs
mostly preprocess (and parse) cleanly.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field

from hypothesis import strategies as st

# Placeholder for "a line break inside one logical line" (after a ``\`` continuation); replaced
# by the file's line ending when the source is assembled.
BR = "\ue000"

EOLS = ("\n", "\r\n", "\r")
#: Conditions for ``ifdef``: tool-predefined macros, an undefined name, and (at draw time) the
#: source's own macros.
CONDITIONS = ("VERILATOR", "__ICARUS__", "SYNTHESIS", "NOPE")

#: Names a design must not call, and a few it may (noise the gate must keep accepting).
BAD_TASKS = ("system", "fopen", "c", "fwrite", "fdisplay", "readmemh", "dumpfile",
             "writememh", "fscanf", "test$system")
OK_TASKS = ("display", "finish", "clog2", "test$plusargs")
DIRECTIVES = ("include", "systemc_header", "systemc_imp_header", "verilator_config")
INCLUDE_TARGETS = ('"/etc/passwd"', '"secret.vh"', "<secret.vh>", '"../secret.vh"')

#: Raw fragments for macro bodies and statements.
FRAGMENTS = (
    "$", "`", "``", '`"', '`\\`"', "sys", "tem", "system", "fopen", "display", "c", "im", "port",
    "ex", "import", "export", '"DPI-C"', '"DPI"', "DPI", "-C", "/", "*", "(", ")", '"', "\\",
    "\\$", "include", "inc", "lude", '"/etc/passwd"', '"secret.vh"', "systemc_", "header",
    "verilator_config", "readmemh", "finish", ";", ",", "x", "1", "//", "/*", "*/", "/**/",
    " ", "  ", "\t", "function", "int", "string", "s", "begin", "end", "$display", "$finish",
    "8'h", "'", "[", "]", ":", "#", '"""', '""', "(*", "*)",
)

#: Starts of a lexical context (comment, string, macro body, attribute) that one reader may
#: close earlier than another; ``{n}`` is a fresh macro name.
OPENERS = (
    "`define {n} 1 /* x", '`define {n} "x" /* "', '`define {n} """', "`define {n} 1 // x \\",
    '`define {n} 1 "x', "`define {n} /*", "`define {n} 1 /* x */ /* y", '`define {n} "\\"',
    '`define {n} `"', "`define {n} 1 \\", "`define {n} 1 // x", "`define {n}(x) x /*",
    "`define {n}(a=/*) a", "`define {n} (* x", '`define {n} """ /*', '`define {n} 1 // """',
    "// x", "// x \\", "/* x", '$display("""', '$display("x\\', '$display("/*");',
    '(* x = "', "(* x = 1", '`ifdef NOPE /*', "`ifndef NOPE //", "`undef NOPE /*",
    "`timescale 1ns/1ps /*", "`celldefine /*", '`define {n} \\x/* ', "\\x/*", '\\x"',
    '$display("', '$display("x', '`define {n} "',
)
#: Ends of such a context (or nothing), put after the payload.
CLOSERS = ("", "*/", '"""', '"', '""");', '"""" );', "// */", '// """', "*/ `define {n}2",
           "*)", '" *)', "`endif", "`{n}", '`define {n}3 """', "`define {n}3 */")
#: What the context hides: calls, a DPI import, a directive, an escaped name.
PAYLOADS = (
    *(f'${t}("p", "w");' for t in BAD_TASKS[:6]),
    'import "DPI-C" function int system(input string s);', '`include "secret.vh"',
    "`systemc_header", '\\$fopen ("p", "w");', '$display("ok");',
    # for a string left open at the end of the opener's line, in a tool that joins the lines
    '"); $fopen("p", "w"); $display("', '"); $system("x"); //',
)

ARGS = ('("x")', ' ("x")', '("echo pwned")', "()", "", '("/etc/passwd", "w")', "(x)")

_LETTERS = "ABCDEGIJKLNOPQRTUVWXYZ"  # no F/H/M/S (ATTACKS use them), so names never clash


class Names:
    """Fresh macro names for one source, so that no definition can refer to itself.

    Every ``define`` in a generated source gets a name never used before, and its body only
    uses names handed out earlier, so macro expansion always terminates (a recursive macro
    hangs ``iverilog -E`` until the timeout, which would make the run slow, not stronger).
    """

    def __init__(self) -> None:
        self.used: list[str] = []

    def fresh(self) -> str:
        n = len(self.used)
        name = _LETTERS[n % len(_LETTERS)] + (str(n // len(_LETTERS)) if n >= len(_LETTERS)
                                              else "")
        self.used.append(name)
        return name


@dataclass
class Parts:
    """Pieces of one source: file-top lines, module items, statements in ``initial``."""

    top: list[str] = field(default_factory=list)
    items: list[str] = field(default_factory=list)
    stmts: list[str] = field(default_factory=list)

    def __iadd__(self, other: Parts) -> Parts:
        self.top += other.top
        self.items += other.items
        self.stmts += other.stmts
        return self


# ------------------------------------------------------------------------------ building blocks


@st.composite
def split_word(draw: st.DrawFn, word: str) -> list[str]:
    """``word`` cut into 1-3 non-empty pieces."""
    if len(word) < 2:
        return [word]
    cuts = sorted(draw(st.sets(st.integers(1, len(word) - 1), max_size=2)))
    bounds = [0, *cuts, len(word)]
    return [word[a:b] for a, b in itertools.pairwise(bounds)]


def _define(name: str, body: str, params: str = "") -> str:
    return f"`define {name}{params} {body}".rstrip(" ") if body else f"`define {name}{params}"


@st.composite
def spelled(draw: st.DrawFn, names: Names, text: str, in_macro: bool) -> tuple[list[str], str]:
    """(define lines, expression) that spells ``text`` through macro pieces and juxtaposition.

    ``in_macro``: the expression will sit in a macro body, where ``````-pasting is legal.
    """
    defines: list[str] = []
    out: list[str] = []
    pieces = draw(split_word(text))
    for k, piece in enumerate(pieces):
        how = draw(st.sampled_from(("lit", "lit", "obj", "ident", "paste_fn")))
        if how == "obj":
            name = names.fresh()
            defines.append(_define(name, piece))
            frag = f"`{name}"
        elif how == "ident":
            fn = names.fresh()
            defines.append(_define(fn, "x", "(x)"))
            frag = f"`{fn}({piece})"
        elif how == "paste_fn" and k + 1 < len(pieces):
            fn = names.fresh()
            defines.append(_define(fn, "a``b", "(a,b)"))
            frag = f"`{fn}({piece},"
            pieces[k + 1] = pieces[k + 1] + ")"
        else:
            frag = piece
        if out:
            sep = draw(st.sampled_from(("", "", "``" if in_macro else "", "/**/", BR)))
            out.append(sep)
        out.append(frag)
    return defines, "".join(out)


@st.composite
def wrapped(draw: st.DrawFn, names: Names, defines: list[str],
            expr: str) -> tuple[list[str], str]:
    """Optionally move ``expr`` into an object-like macro, a macro-defining macro or a branch."""
    how = draw(st.sampled_from(("plain", "plain", "obj", "cont", "mkmacro", "mkmacro_fn")))
    if how == "plain":
        return defines, expr
    name = names.fresh()
    if how == "obj":
        return [*defines, _define(name, expr)], f"`{name}"
    if how == "cont":  # the body continues on the next physical line
        cut = draw(st.integers(0, len(expr)))
        return [*defines, _define(name, f"{expr[:cut]}\\{BR}{expr[cut:]}")], f"`{name}"
    mk = names.fresh()
    if how == "mkmacro":  # `MK defines the macro that spells the name
        return [*defines, _define(mk, f"`define {name} {expr}"), f"`{mk}"], f"`{name}"
    return [*defines, _define(mk, "`define n v", "(n,v)"), f"`{mk}({name},{expr})"], f"`{name}"


@st.composite
def dollar(draw: st.DrawFn, names: Names) -> tuple[list[str], str, bool]:
    """(defines, text, is_macro_call_form) producing a ``$`` sigil."""
    how = draw(st.sampled_from(("lit", "lit", "obj", "fn", "escaped")))
    if how == "obj":
        name = names.fresh()
        return [_define(name, "$")], f"`{name}", False
    if how == "fn":
        fn = names.fresh()
        return [_define(fn, draw(st.sampled_from(("$x", "$``x"))), "(x)")], f"`{fn}(", True
    if how == "escaped":
        return [], "\\$", False
    return [], "$", False


# ------------------------------------------------------------------------------------- gadgets


@st.composite
def task_gadget(draw: st.DrawFn, names: Names) -> Parts:
    """A system-task call whose name is assembled from pieces."""
    task = draw(st.sampled_from(BAD_TASKS + BAD_TASKS + OK_TASKS))
    in_macro = draw(st.booleans())
    defs, sigil, call_form = draw(dollar(names))
    more, name = draw(spelled(names, task, in_macro))
    glue = draw(st.sampled_from(("", "", "", "``" if in_macro else "", "/**/", BR)))
    expr = f"{sigil}{glue}{name})" if call_form else f"{sigil}{glue}{name}"
    if sigil == "\\$":
        expr += draw(st.sampled_from((" ", "\t", BR)))
    defs, expr = draw(wrapped(names, defs + more, expr))
    stmt = f"{expr}{draw(st.sampled_from(ARGS))};"
    return Parts(top=defs, stmts=[stmt])


@st.composite
def dpi_gadget(draw: st.DrawFn, names: Names) -> Parts:
    """``import``/``export "DPI-C"`` assembled from pieces."""
    kw = draw(st.sampled_from(("import", "export")))
    defs, kw_expr = draw(spelled(names, kw, draw(st.booleans())))
    how = draw(st.sampled_from(("lit", "obj", "stringify", "stringify_paste", "bare")))
    if how == "obj":
        name = names.fresh()
        defs.append(_define(name, '"DPI-C"'))
        lang = f"`{name}"
    elif how == "stringify":
        q = names.fresh()
        defs.append(_define(q, '`"x`"', "(x)"))
        lang = f"`{q}(DPI-C)"
    elif how == "stringify_paste":
        q = names.fresh()
        defs.append(_define(q, '`"D``x`"', "(x)"))
        lang = f"`{q}(PI-C)"
    elif how == "bare":
        lang = '"DPI"'
    else:
        lang = '"DPI-C"'
    sep = draw(st.sampled_from((" ", "", "/**/", "/* c */", BR)))
    head = f"{kw_expr}{sep}{lang}"
    defs, head = draw(wrapped(names, defs, head))
    tail = (" function int system(input string s);" if kw == "import"
            else " function f;")
    items = [f"{head}{tail}"]
    if kw == "export":
        items.append("function int f(); return 0; endfunction")
    return Parts(top=defs, items=items)


@st.composite
def directive_gadget(draw: st.DrawFn, names: Names) -> Parts:
    """A backtick directive assembled from a lone-backtick macro and name pieces."""
    directive = draw(st.sampled_from(DIRECTIVES))
    defs, name = draw(spelled(names, directive, draw(st.booleans())))
    how = draw(st.sampled_from(("lit", "obj", "fn", "paste_fn")))
    if how == "lit":
        tick = "`"
    else:
        bt = names.fresh()
        tick = f"`{bt}" if how == "obj" else f"`{bt}("
        if how == "obj":
            defs.append(_define(bt, "`"))
        else:
            defs.append(_define(bt, "`x" if how == "fn" else "```x", "(x)"))
            name += ")"
    arg = ""
    if directive == "include":
        arg = draw(st.sampled_from(("", " ", "/**/"))) + draw(st.sampled_from(INCLUDE_TARGETS))
    elif directive.startswith("systemc"):
        arg = f"{BR}int pwned = system(\"x\");{BR}`systemc_header_end"
    line = f"{tick}{name}{arg}"
    defs, line = draw(wrapped(names, defs, line))
    return Parts(top=[*defs, line])


@st.composite
def escaped_gadget(draw: st.DrawFn, names: Names) -> Parts:
    """Escaped identifiers naming system tasks, possibly with macro uses glued on."""
    task = draw(st.sampled_from(BAD_TASKS + OK_TASKS))
    pieces = draw(split_word(task))
    defs: list[str] = []
    text = "\\$"
    for piece in pieces:
        if draw(st.booleans()):
            name = names.fresh()
            defs.append(_define(name, piece))
            text += f"`{name}"
        else:
            text += piece
    text += draw(st.sampled_from((" ", "\t", BR)))
    return Parts(top=defs, stmts=[f"{text}{draw(st.sampled_from(ARGS))};"])


@st.composite
def comment_gadget(draw: st.DrawFn, names: Names) -> Parts:
    """A call that a line- or comment-confused view hides behind ``//`` or ``/*``."""
    call = f"${draw(st.sampled_from(BAD_TASKS))}(\"x\");"
    how = draw(st.sampled_from(("line", "block", "macro_comment", "string", "define_tail")))
    if how == "line":  # a later line ending (CR!) decides whether the call is commented out
        return Parts(stmts=["// note", call])
    if how == "block":
        return Parts(stmts=["/* x", "*/" + call])
    if how == "macro_comment":  # a // in a macro body: comment or part of the body?
        name = names.fresh()
        return Parts(top=[_define(name, "1 // x")], stmts=[f"`{name}", call])
    if how == "define_tail":  # the call on the line after a define: body or not?
        name = names.fresh()
        body = draw(st.sampled_from(("1", "1 // x", "1 /* x", "1\\")))
        return Parts(stmts=[_define(name, body), call])
    return Parts(stmts=[f'$display("//");{call}', f'$display("\\"");{call}'])


@st.composite
def hiding_gadget(draw: st.DrawFn, names: Names) -> Parts:
    """A payload between a context opener and closer, on the same or following lines."""
    n = names.fresh()
    opener = draw(st.sampled_from(OPENERS)).replace("{n}", n)
    if draw(st.integers(0, 3)):  # close what the opener opened (for a reader that sees it)
        closer = _matching_closer(opener)
    else:
        closer = draw(st.sampled_from(CLOSERS)).replace("{n}", n)
    payload = draw(st.sampled_from(PAYLOADS))
    sep1 = draw(st.sampled_from((BR, BR, " ", "")))
    sep2 = draw(st.sampled_from((BR, " ", "")))
    text = f"{opener}{sep1}{payload}{sep2}{closer}" if closer else f"{opener}{sep1}{payload}"
    if payload.startswith(("import", "`")) or opener.startswith("(*"):
        return Parts(items=[text])
    return Parts(stmts=[text])


def _matching_closer(opener: str) -> str:
    """What closes every context ``opener`` leaves open, for a reader that sees them all."""
    parts = []
    if '"""' in opener:
        parts.append('"""')
    elif opener.count("/*") > opener.count("*/"):
        parts.append("*/")
    elif (opener.count('"') - opener.count('\\"')) % 2:
        parts.append('"')
    if opener.startswith("$display("):
        parts.append(");")
    if "(*" in opener:
        parts.append("*)")
    if opener.startswith(("`ifdef", "`ifndef")):
        parts.append("`endif")
    return " ".join(parts)


@st.composite
def branch_gadget(draw: st.DrawFn, names: Names) -> Parts:
    """Another gadget inside an ``ifdef``/``ifndef`` ... ``else`` ... ``endif``."""
    inner = draw(simple_gadget(names))
    cond = draw(st.sampled_from(CONDITIONS + tuple(names.used[-2:])))
    kw = draw(st.sampled_from(("ifdef", "ifndef")))
    use_else = draw(st.booleans())
    out = Parts(top=list(inner.top))

    def branch(lines: list[str]) -> list[str]:
        if use_else:
            return [f"`{kw} {cond}", "// benign", "`else", *lines, "`endif"]
        return [f"`{kw} {cond}", *lines, "`endif"]

    if inner.items:
        out.items = branch(inner.items)
    if inner.stmts:
        out.stmts = branch(inner.stmts)
    if not inner.items and not inner.stmts:
        out.top = branch(inner.top)
    return out


@st.composite
def soup_gadget(draw: st.DrawFn, names: Names) -> Parts:
    """Unstructured juxtaposition of fragments and macro uses (no whitespace between)."""
    def atom() -> st.SearchStrategy[str]:
        known = [*names.used, "U"]  # U is never defined
        return st.one_of(
            st.sampled_from(FRAGMENTS),
            st.sampled_from([f"`{n}" for n in known]),
            st.sampled_from([f"`{n}(" for n in known]),
            st.sampled_from((f"\\{BR}", BR)),
        )

    defs = []
    for _ in range(draw(st.integers(0, 3))):
        params = draw(st.sampled_from(("", "", "(x)", "(x,y)")))
        body_atoms = draw(st.lists(st.one_of(atom(), st.sampled_from(("x", "`x", "``x",
                                                                         '`"x`"'))),
                                   max_size=6))
        defs.append(_define(names.fresh(), "".join(body_atoms), params))
    stmt = "".join(draw(st.lists(atom(), min_size=1, max_size=10)))
    where = draw(st.sampled_from(("stmts", "items", "top")))
    parts = Parts(top=defs)
    getattr(parts, where).append(stmt)
    return parts


def simple_gadget(names: Names) -> st.SearchStrategy[Parts]:
    return st.one_of(task_gadget(names), dpi_gadget(names), directive_gadget(names),
                     escaped_gadget(names), comment_gadget(names), soup_gadget(names),
                     hiding_gadget(names), hiding_gadget(names))


# ------------------------------------------------------------------------------------ assembly


@st.composite
def verilog_sources(draw: st.DrawFn) -> str:
    """One adversarial source text (< 2 KB) built from 1-3 gadgets."""
    names = Names()
    parts = Parts()
    for _ in range(draw(st.sampled_from((1, 1, 1, 2, 2, 3)))):
        parts += draw(st.one_of(simple_gadget(names), branch_gadget(names)))
    # Where the defines go: the file top, or just inside the module / initial block.
    placement = draw(st.sampled_from(("top", "items", "stmts")))
    top, items, stmts = [], list(parts.items), list(parts.stmts)
    if placement == "top":
        top = parts.top
    elif placement == "items":
        items = parts.top + items
    else:
        stmts = parts.top + stmts
    lines = [*top, "module m;", *items, "initial begin", *stmts, "end", "endmodule"]
    if draw(st.booleans()):  # everything on as few lines as the preprocessor allows
        lines = _join_non_directives(lines)
    style = draw(st.sampled_from(("\n", "\r\n", "\r", "mixed")))
    out = []
    for line in lines:
        eol = draw(st.sampled_from(EOLS)) if style == "mixed" else style
        out.append(line.replace(BR, eol) + eol)
    return "".join(out)[:2000]


def _join_non_directives(lines: list[str]) -> list[str]:
    """Merge consecutive lines that are not (and do not end) a directive."""
    out: list[str] = []
    for line in lines:
        if out and not out[-1].lstrip().startswith("`") and not line.lstrip().startswith("`") \
                and "//" not in out[-1]:
            out[-1] = f"{out[-1]} {line}"
        else:
            out.append(line)
    return out


# ------------------------------------------------------------------------------ output lexing

_TOKEN_BODY = r"""
    (?P<lcom>//[^\r\n]*)                       # a CR ends a line comment too (stricter)
  | (?P<bcom>/\*.*?(?:\*/|\Z))                 # unterminated: to the end (a tool error)
  | (?P<str>"(?:\\(?:\r\n|.)|[^"\\\r\n])*"?)  # unterminated: to the line end (ditto)
  | (?P<esc>\\[^\s]+)
  | (?P<sys>\$[A-Za-z0-9_$]+)
  | (?P<based>'[sS]?[bBoOdDhH][ \t]*[0-9a-fA-FxXzZ?_]*)
  | (?P<id>[A-Za-z_][A-Za-z0-9_$]*)
  | (?P<num>[0-9][0-9_]*)
  | (?P<dir>`[A-Za-z_][A-Za-z0-9_$]*)
  | (?P<ws>\s+)
  | (?P<other>.)
"""
_TOKEN = re.compile(_TOKEN_BODY, re.S | re.X)
#: SV-2023 triple-quoted strings, which Verilator (5.x) and slang read and Icarus does not.
_TOKEN_TRIPLE = re.compile(r'(?P<str3>""".*?(?:"""|\Z))|' + _TOKEN_BODY, re.S | re.X)

FORBIDDEN_DIRECTIVE = re.compile(r"`(include|systemc_\w*|verilator_config)\b")
INCLUDE_SENTINEL = "rtlforge_include_sentinel"
SENTINEL_FILES = {"secret.vh": f"{INCLUDE_SENTINEL} $system(\"sentinel\");\n"}


@dataclass(frozen=True)
class Token:
    kind: str
    text: str


def lex(text: str, *, triple_quotes: bool = False) -> list[Token]:
    """Significant tokens of preprocessed output (comments and whitespace dropped)."""
    out = []
    for m in (_TOKEN_TRIPLE if triple_quotes else _TOKEN).finditer(text):
        kind = m.lastgroup
        assert kind is not None
        if kind not in ("lcom", "bcom", "ws"):
            out.append(Token(kind, m.group()))
    return out


@dataclass
class Findings:
    tasks: list[str] = field(default_factory=list)  # $names not on the allow-list
    escaped: list[str] = field(default_factory=list)  # \$name escaped identifiers
    dpi: list[str] = field(default_factory=list)  # import/export followed by a string
    directives: list[str] = field(default_factory=list)  # `include/`systemc_*/`verilator_config
    file_reads: list[str] = field(default_factory=list)  # $readmem* (nothing is available)
    included: bool = False  # a file's contents reached the output

    def __bool__(self) -> bool:
        return bool(self.tasks or self.escaped or self.dpi or self.directives or self.file_reads
                    or self.included)


def findings(output: str, allowed: frozenset[str], *, triple_quotes: bool = False) -> Findings:
    """What in a preprocessor's ``output`` a design must never contain.

    ``triple_quotes``: the tool reads ``\"\"\"...\"\"\"`` as one string (Verilator does, Icarus
    does not).
    """
    f = Findings()
    toks = lex(output, triple_quotes=triple_quotes)
    for i, t in enumerate(toks):
        nxt = toks[i + 1] if i + 1 < len(toks) else None
        if t.kind == "sys":
            if t.text not in allowed:
                f.tasks.append(t.text)
            elif (t.text.startswith("$readmem") and nxt is not None and nxt.text == "("
                  and i + 2 < len(toks) and toks[i + 2].kind == "str"):
                f.file_reads.append(t.text)
        elif t.kind == "esc" and re.match(r"\\\$[A-Za-z0-9_$]", t.text):
            f.escaped.append(t.text)
        elif t.kind == "dir" and FORBIDDEN_DIRECTIVE.match(t.text):
            f.directives.append(t.text)
        elif (t.kind == "id" and t.text in ("import", "export") and nxt is not None
              and nxt.kind == "str" and nxt.text.startswith('"DPI')):
            f.dpi.append(f"{t.text} {nxt.text}")
    f.included = INCLUDE_SENTINEL in output or "root:x:0:0" in output
    return f
