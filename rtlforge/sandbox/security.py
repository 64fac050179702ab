"""Static security check for untrusted Verilog, run before any tool reads a file.

Simulators execute what they are given: Verilator runs ``$system``, DPI imports of libc and
``$c``/``\\`systemc_*`` blocks as real C++, and every simulator opens whatever path ``$fopen``,
``$readmemh`` or ``\\`include`` names. The jail (:mod:`rtlforge.sandbox.jail`) contains the
damage on its own; this check refuses such designs outright, with the file, line and construct,
so the refusal is useful feedback, and it is the only line against forged passes
(:func:`check_contained`). It runs in a bounded worker process (:mod:`rtlforge.sandbox.gate`).

slang is only a model of what the tools read: Icarus, Verilator and yosys preprocess as text and
re-lex, so anything on which the two views could differ is refused rather than modelled (macro
text that fuses with its neighbours, directives in macro bodies, comments and strings that end
differently, escaped system names). ``tests/test_security_fuzz.py`` checks the result against
``iverilog -E`` and ``verilator -E``.

The check runs in three phases over the same inputs:

1. a raw pass with slang's *lexer* (no preprocessing, so nothing is ever opened) validates every
   ``\\`include``, rejects directives that hand code to a C++ compiler or could synthesise an
   include from macro pieces, and the constructs the views disagree on;
2. slang then preprocesses all files as one compilation unit from in-memory buffers with
   ``maxIncludeDepth=0`` (so it cannot open a file whatever the text says), and the expanded token
   stream is checked, which catches names built by macro pasting;
3. the raw findings that need no preprocessing are reported last: they cover code slang never
   expands (inactive ``\\`ifdef VERILATOR`` branches, unused macro bodies), which another tool
   with other predefined macros would compile.

Everything is an allow-list: a system task that is not listed is refused.
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Literal, NamedTuple, Protocol

import pyslang
from pyslang import parsing, syntax

from rtlforge.core.errors import SecurityViolation


class Source(Protocol):
    """What a check reads of a file: a :class:`~rtlforge.core.models.Source` or a
    :class:`Text` (the gate's worker builds those: pydantic and the models are most of its
    start-up, paid once per validation by a one-shot command)."""

    @property
    def name(self) -> str: ...

    @property
    def content(self) -> str: ...


class Text(NamedTuple):
    name: str
    content: str

__all__ = ["check_contained", "check_sources", "needs_variants"]

TK = parsing.TokenKind

_MATH = (
    "$ln $log10 $exp $sqrt $pow $floor $ceil $sin $cos $tan $asin $acos $atan $atan2 $hypot "
    "$sinh $cosh $tanh $asinh $acosh $atanh $itor $rtoi $realtobits $bitstoreal "
    "$shortrealtobits $bitstoshortreal"
)
_DISPLAY = " ".join(
    f"${base}{suffix}" for base in ("display", "write", "strobe", "monitor")
    for suffix in ("", "b", "h", "o")
)

#: System tasks and functions a design may call: pure computation, console output, assertions.
DESIGN_SYSTEM_TASKS: frozenset[str] = frozenset((
    f"{_DISPLAY} {_MATH} $monitoron $monitoroff $finish $stop $time $stime $realtime "
    "$signed $unsigned $clog2 $bits $size $high $low $left $right $increment $dimensions "
    "$unpacked_dimensions $countones $onehot $onehot0 $isunknown $countbits "
    "$random $urandom $urandom_range $dist_uniform $dist_normal $dist_exponential "
    "$dist_poisson $dist_chi_square $dist_t $dist_erlang "
    "$error $warning $info $fatal $readmemh $readmemb $sformat $sformatf $swrite $swriteb "
    "$swriteh $swriteo $past $rose $fell $stable $changed $sampled "
    "$test$plusargs $value$plusargs $timeformat $printtimescale"
).split())

_FILE_IO = " ".join(
    f"${base}{suffix}" for base in ("fdisplay", "fwrite", "fstrobe", "fmonitor")
    for suffix in ("", "b", "h", "o")
)

#: What a testbench may add: file I/O and waveform dumps (file names are checked separately).
TESTBENCH_SYSTEM_TASKS: frozenset[str] = DESIGN_SYSTEM_TASKS | frozenset((
    f"{_FILE_IO} $fopen $fclose $fscanf $fgets $fgetc $ungetc $feof $fflush $fread $ferror "
    "$rewind $fseek $ftell $sscanf $dumpfile $dumpvars $dumpon $dumpoff $dumpall $dumpflush "
    "$dumplimit $writememh $writememb"
).split())

#: A netlist a tool wrote is structural: it calls nothing.
_ALLOWED_BY_ROLE: dict[str, frozenset[str]] = {
    "design": DESIGN_SYSTEM_TASKS, "testbench": TESTBENCH_SYSTEM_TASKS, "netlist": frozenset()}

#: Tasks whose first argument names a file the tool reads.
_READS_FILE = frozenset({"$readmemh", "$readmemb"})
#: Tasks whose first argument names a file the tool writes ($fopen depends on its mode).
_WRITES_FILE = frozenset({"$dumpfile", "$writememh", "$writememb"})

#: Directives that feed text straight to a C++ compiler or to tool configuration.
_FORBIDDEN_DIRECTIVES = frozenset({"verilator_config", "uselib"})

#: Standard directives; any other backtick name is a macro usage.
_KNOWN_DIRECTIVES = frozenset((
    "define", "undef", "undefineall", "include", "ifdef", "ifndef", "elsif", "else", "endif",
    "timescale", "default_nettype", "resetall", "celldefine", "endcelldefine",
    "unconnected_drive", "nounconnected_drive", "line", "pragma", "begin_keywords",
    "end_keywords", "__FILE__", "__LINE__", "default_decay_time", "default_trireg_strength",
    "delay_mode_distributed", "delay_mode_path", "delay_mode_unit", "delay_mode_zero", "protect",
    "endprotect", "protected", "endprotected", "verilog",
))

#: Directives that only expand to a value, harmless inside a macro body.
_VALUE_DIRECTIVES = frozenset({"__FILE__", "__LINE__"})

_SAFE_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")

#: Larger inputs are refused rather than analysed slowly (an RL loop must never stall here).
MAX_SOURCE_CHARS = 2_000_000
#: Upper bound on the estimated number of tokens after macro expansion (macro "bombs").
MAX_EXPANDED_TOKENS = 2_000_000
#: Deeper macro nesting than this is treated as an attack on the checker itself.
MAX_MACRO_NESTING = 64

_VIRTUAL_DIR = "/rtlforge-virtual-do-not-create/"
_OPEN = frozenset({TK.OpenParenthesis, TK.OpenBracket, TK.OpenBrace, TK.ApostropheOpenBrace})
_CLOSE = frozenset({TK.CloseParenthesis, TK.CloseBracket, TK.CloseBrace})


@dataclass(frozen=True, slots=True)
class _Tok:
    kind: parsing.TokenKind
    text: str  # raw text; for string literals, the decoded value
    offset: int
    eol: bool  # a (non-continued) line break precedes this token
    end: int = 0  # offset just past the raw text

    @property
    def first(self) -> str:
        return '"' if self.kind == TK.StringLiteral else self.text[:1]

    @property
    def last(self) -> str:
        return '"' if self.kind == TK.StringLiteral else self.text[-1:]


@dataclass(frozen=True, slots=True)
class _Finding:
    message: str
    construct: str
    file: Source
    offset: int
    hint: str | None = None


#: Hints for findings where "remove file and process access" would mislead the author.
GLUE_HINT = ("Write a space between a macro use (or a macro argument) and the text next to it; "
             "tools paste macro text in and re-read it.")
CONTAINMENT_HINT = ("Use only the design's own ports, signals and submodules: the testbench and "
                    "its modules, tasks and variables are not part of the design.")


@dataclass(slots=True)
class _Macro:
    body: list[_Tok]
    has_params: bool
    params: frozenset[str] = frozenset()


def check_sources(files: Sequence[Source], *,
                  role: Literal["design", "testbench", "netlist"],
                  available: Collection[str] = ()) -> None:
    """Raise :class:`SecurityViolation` for the first unsafe construct in ``files``.

    ``available`` lists the plain names that will exist in the flat run directory; ``include``
    targets and files read by system tasks must be among them. Returns None when nothing unsafe
    was found. Never opens a file and never raises anything else on garbled input.
    """
    if role not in _ALLOWED_BY_ROLE:
        raise ValueError(f"role must be one of {sorted(_ALLOWED_BY_ROLE)}, not {role!r}")
    allowed = _ALLOWED_BY_ROLE[role]
    # Tools split lines on CR too; judge the text as they will (SandboxRunner.put writes it so).
    files = [Text(name=f.name, content=f.content.replace("\r\n", "\n").replace("\r", "\n"))
             if "\r" in f.content else f for f in files]
    avail = frozenset(n for n in available if _is_plain_name(n))
    if sum(len(f.content) for f in files) > MAX_SOURCE_CHARS:
        first = files[0]
        raise _violation(_Finding(
            f"sources exceed {MAX_SOURCE_CHARS} characters; too large to check safely",
            "size", first, 0))
    for f in files:
        nul = f.content.find("\0")
        if nul >= 0:
            raise _violation(_Finding("NUL byte in source: tools disagree on how to read it",
                                      "NUL", f, nul))

    late: list[_Finding] = []
    scanner = _RawScanner(allowed, avail, role)
    for f in files:
        early = scanner.scan(f, late)
        if early is not None:
            raise _violation(early)
    # Without macro usages the expanded stream is a subset of the raw tokens already checked.
    if scanner.saw_macro_usage:
        post = _check_preprocessed(files, allowed, avail, role)
        if post is not None:
            raise _violation(post)
    if late:
        raise _violation(late[0])


# ------------------------------------------------------------------------------------ helpers


def _is_plain_name(name: str) -> bool:
    return (bool(name) and len(name) <= 200 and not name.startswith(".") and ".." not in name
            and set(name) <= _SAFE_NAME_CHARS)


def _line_of(text: str, offset: int) -> tuple[int, str]:
    """1-based line number and text of the line holding ``offset`` in the original file."""
    starts = [0] + [i + 1 for i, c in enumerate(text) if c == "\n"]
    idx = bisect.bisect_right(starts, max(0, offset)) - 1
    end = text.find("\n", starts[idx])
    return idx + 1, text[starts[idx]: end if end >= 0 else len(text)].rstrip("\r")


def _violation(f: _Finding) -> SecurityViolation:
    line, source_line = _line_of(f.file.content, f.offset)
    return SecurityViolation(f"{f.file.name}:{line}: {f.message}", file=f.file.name, line=line,
                             construct=f.construct, source_line=source_line, hint=f.hint)


def _lex(text: str) -> list[_Tok]:
    """Raw tokens of ``text`` (comments and strings already told apart by slang's lexer)."""
    sm = pyslang.SourceManager()
    buf = sm.assignText(_VIRTUAL_DIR + "raw.v", text)
    lexer = parsing.Lexer(buf, pyslang.BumpAllocator(), pyslang.Diagnostics(), sm)
    out: list[_Tok] = []
    continued = False
    prev_end = 0
    while True:
        t = lexer.lex()
        kind = t.kind
        if kind == TK.EndOfFile:
            return out
        raw = t.rawText
        offset = t.location.offset
        # Cheap test first; the trivia tell a newline apart from one inside a block comment.
        eol = (not continued and "\n" in text[prev_end:offset]
               and any(tr.kind == parsing.TriviaKind.EndOfLine for tr in t.trivia))
        prev_end = offset + len(raw)
        continued = kind == TK.LineContinuation
        if continued:
            continue
        text_ = t.valueText if kind == TK.StringLiteral else raw
        out.append(_Tok(kind, text_, offset, eol, offset + len(raw)))


def _args(toks: Sequence[_Tok], i: int) -> list[list[_Tok]] | None:
    """Top-level argument token lists of the call whose name is ``toks[i]``, or None."""
    if i + 1 >= len(toks) or toks[i + 1].kind != TK.OpenParenthesis:
        return None
    args: list[list[_Tok]] = [[]]
    depth = 0
    for t in toks[i + 2:]:
        if t.kind in _OPEN:
            depth += 1
        elif t.kind in _CLOSE:
            if depth == 0:
                break
            depth -= 1
        elif t.kind == TK.Comma and depth == 0:
            args.append([])
            continue
        args[-1].append(t)
    return args


def _file_arg_problem(name: str, toks: Sequence[_Tok], i: int, avail: frozenset[str],
                      macros: dict[str, _Macro] | None) -> str | None:
    """Why the file-name argument of the call at ``toks[i]`` is unsafe, or None.

    ``macros`` lets the raw pass see through ``define FILE "x.dat"``, a common testbench idiom;
    anything more computed than a one-string macro is refused.
    """
    args = _args(toks, i)
    if not args or not args[0]:
        return None
    path = args[0]
    if macros is not None and len(path) == 1 and path[0].kind in (TK.Directive, TK.MacroUsage):
        macro = macros.get(path[0].text[1:])
        if macro is not None and not macro.has_params and len(macro.body) == 1:
            path = macro.body
    if len(path) != 1 or path[0].kind != TK.StringLiteral:
        return f"{name} needs a literal file name; computed names cannot be checked"
    value = path[0].text
    writes = name in _WRITES_FILE
    if name == "$fopen":
        mode = args[1] if len(args) > 1 else []
        literal_read = (len(mode) == 1 and mode[0].kind == TK.StringLiteral
                        and mode[0].text in ("r", "rb"))
        writes = not literal_read
    if not _is_plain_name(value):
        return (f"{name} names {value!r}: only plain file names in the run directory are "
                "allowed (no paths, '..' or dot-files)")
    if not writes and value not in avail:
        return f"{name} reads {value!r}, which is not one of the files provided for this run"
    return None


def _check_call(name: str, toks: Sequence[_Tok], i: int, allowed: frozenset[str],
                avail: frozenset[str], role: str,
                macros: dict[str, _Macro] | None = None) -> str | None:
    """Why the system call at ``toks[i]`` is refused, or None."""
    if name not in allowed:
        if name in TESTBENCH_SYSTEM_TASKS:
            return f"{name} is only allowed in a testbench, not in a {role}"
        return f"system task/function {name} is not on the allow-list"
    if name in _READS_FILE or name in _WRITES_FILE or name == "$fopen":
        return _file_arg_problem(name, toks, i, avail, macros)
    return None


def _foreign_import(toks: Sequence[_Tok], i: int) -> bool:
    """True when ``toks[i]`` starts an ``import``/``export`` of foreign code (DPI or unknown)."""
    t = toks[i]
    if t.text not in ("import", "export") or i + 1 >= len(toks):
        return False
    nxt = toks[i + 1].kind
    return nxt in (TK.StringLiteral, TK.Directive, TK.MacroUsage, TK.MacroQuote)


def _include_problem(toks: Sequence[_Tok], i: int, text: str,
                     avail: frozenset[str]) -> str | None:
    if i + 1 >= len(toks) or toks[i + 1].eol:
        return "`include without a literal file name"
    nxt = toks[i + 1]
    if nxt.kind == TK.StringLiteral:
        name = nxt.text
    elif nxt.kind == TK.LessThan:
        end = text.find(">", nxt.offset)
        newline = text.find("\n", nxt.offset)
        if end < 0 or 0 <= newline < end:
            return "`include <...> is not terminated"
        name = text[nxt.offset + 1:end]
    else:
        return "`include of a macro-computed name cannot be checked before preprocessing"
    if not _is_plain_name(name) or name not in avail:
        return f"`include {name!r}: only files provided for this run may be included"
    return None


_WORD = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_$")
_NOT_A_USAGE = ""  # _glue: the token before is not the end of a macro usage
_ONLY_COMMENTS = re.compile(r"(?:/\*.*?\*/)+", re.DOTALL)
_DIRECTIVE_LINE = re.compile(
    r"^[ \t]*`(?:define|undef|undefineall|ifdef|ifndef|elsif|else|endif|include|timescale|"
    r"default_nettype|resetall|line|pragma|celldefine|endcelldefine)\b", re.MULTILINE)


def _comment_problem(text: str, toks: Sequence[_Tok]) -> tuple[str, int] | None:
    """A block comment that opens on a directive line and ends on a later line: Icarus ends
    the directive at the newline and reads what follows as code, slang reads one comment."""
    if "/*" not in text or "`" not in text:
        return None
    for m in _DIRECTIVE_LINE.finditer(text):
        line_end = text.find("\n", m.start())
        line_end = len(text) if line_end < 0 else line_end
        start = text.find("/*", m.start(), line_end)
        while start >= 0:
            if not _inside_token(toks, start):
                close = text.find("*/", start + 2)
                if close < 0 or close > line_end:
                    return ("a /* comment starts on a directive line and ends on another: "
                            "tools end the directive at the newline and read on as code",
                            start)
                start = text.find("/*", close + 2, line_end)
            else:
                start = text.find("/*", start + 2, line_end)
    return None


def _inside_token(toks: Sequence[_Tok], offset: int) -> bool:
    """Whether ``offset`` falls inside a token (a string literal), not in trivia."""
    lo, hi = 0, len(toks)
    while lo < hi:
        mid = (lo + hi) // 2
        if toks[mid].end <= offset:
            lo = mid + 1
        else:
            hi = mid
    return lo < len(toks) and toks[lo].offset <= offset < toks[lo].end


def _fuses(a: str | None, b: str | None) -> bool:
    """Whether characters ``a`` then ``b``, written with no space between, can lex as one
    token that neither makes alone. None is a character not known statically (it may be
    anything but a lone backtick or backslash, which are refused wherever they appear)."""
    if a is None:
        return b is None or b in _WORD or b in "/*"
    if b is None:
        return a in _WORD or a in "`\\/"
    return (a in _WORD and b in _WORD) or a in "`\\" or (a == "/" and b in "/*")


# ------------------------------------------------------------------------------------ phase 1+3


class _RawScanner:
    """One pass over the raw tokens of each file; macro definitions carry across files."""

    def __init__(self, allowed: frozenset[str], avail: frozenset[str], role: str) -> None:
        self.allowed = allowed
        self.avail = avail
        self.role = role
        self.macros: dict[str, _Macro] = {}
        self.expanded = 0
        self.saw_macro_usage = False
        self._cost_memo: dict[str, int] = {}

    def scan(self, f: Source, late: list[_Finding]) -> _Finding | None:
        """Return an include/directive finding at once; append the rest to ``late``."""
        toks = _lex(f.content)
        match = _matching_parens(toks)
        n = len(toks)
        in_define = False
        params: list[str] = []
        body_start = 0
        define_name: str | None = None
        define_params = False
        macro_arg_end = -1  # index of ')' closing the outermost macro call being read
        cost_skip = -1

        def note(message: str, construct: str, tok: _Tok) -> None:
            late.append(_Finding(message, construct, f, tok.offset))

        text = f.content
        problem = _comment_problem(text, toks)
        if problem is not None:
            return _Finding(problem[0], "/*", f, problem[1])
        #: index of the token that ends a macro usage -> last character of its expansion
        usage_end: dict[int, str | None] = {}
        i = 0
        while i < n:
            t = toks[i]
            if in_define and t.eol:
                self._define(define_name, define_params, toks[body_start:i], params)
                in_define = False
            kind = t.kind
            if kind == TK.StringLiteral and text.startswith('"""', t.offset):
                return _Finding('""" is a multi-line string to some tools and an empty string '
                                "plus an open one to others", '"""', f, t.offset)
            if in_define and i > body_start and toks[i - 1].end < t.offset:
                gap = text[toks[i - 1].end:t.offset]
                if _ONLY_COMMENTS.fullmatch(gap) and _fuses(toks[i - 1].last, t.first):
                    return _Finding("a comment is all that separates two tokens in a macro "
                                    "body: Icarus deletes it and fuses them; use a space", "/*",
                                    f, toks[i - 1].end)
            if kind == TK.Directive or kind == TK.MacroUsage:
                name = t.text[1:]
                if name == "include":
                    problem = _include_problem(toks, i, f.content, self.avail)
                    if problem:
                        return _Finding(problem, "`include", f, t.offset)
                elif name.startswith("systemc_") or name in _FORBIDDEN_DIRECTIVES:
                    return _Finding(f"`{name} passes text straight to a C++ compiler or tool "
                                    "configuration", t.text, f, t.offset)
                if in_define and (name in params or _pasted(toks, i)):
                    return _Finding("directive built from macro pieces cannot be checked",
                                    t.text, f, t.offset)
                if in_define and name in _KNOWN_DIRECTIVES and name not in _VALUE_DIRECTIVES:
                    return _Finding(f"`{name} inside a macro body: macros that define macros or "
                                    "carry directives are expanded differently by each tool",
                                    t.text, f, t.offset)
                if name == "define" and not in_define:
                    in_define = True
                    define_name, define_params, params, body_start = _define_header(toks, i)
                    i = body_start
                    continue
                if name in ("define", "undef", "undefineall"):
                    self._cost_memo.clear()
                    if name == "undef" and i + 1 < n:
                        self.macros.pop(toks[i + 1].text, None)
                    elif name == "undefineall":
                        self.macros.clear()
                elif name not in _KNOWN_DIRECTIVES:
                    self.saw_macro_usage = True
                    close = match[i + 1] if i + 1 < n and toks[i + 1].kind == TK.OpenParenthesis \
                        else -1
                    args = _args(toks, i) if close >= 0 else None
                    bad_arg = self._pasted_arg(name, args)
                    if bad_arg:
                        return _Finding(bad_arg, t.text, f, t.offset)
                    last = self._edge(name, args, False)
                    glue = self._glue(toks, i, close if close >= 0 else i,
                                      self._edge(name, args, True), last,
                                      usage_end.get(i - 1, _NOT_A_USAGE))
                    if glue:
                        return _Finding(glue, t.text, f, t.offset, GLUE_HINT)
                    usage_end[close if close >= 0 else i] = last
                    if not in_define and i > cost_skip:
                        self.expanded += self._call_cost(toks, i, match, 0)
                        cost_skip = close
                        if self.expanded > MAX_EXPANDED_TOKENS:
                            return _Finding("macro expansion too large to check", t.text, f,
                                            t.offset)
                    if close > macro_arg_end:
                        macro_arg_end = close
            elif kind == TK.SystemIdentifier:
                if _pasted(toks, i):
                    note("token pasting onto a system task name cannot be checked", t.text, t)
                else:
                    problem = _check_call(t.text, toks, i, self.allowed, self.avail, self.role,
                                          self.macros)
                    if problem:
                        note(problem, t.text, t)
            elif kind == TK.Dollar:
                if _pasted(toks, i) or ((in_define or i < macro_arg_end)
                                        and not _dollar_is_index(toks, i)):
                    note("a lone '$' in a macro could be pasted into a system task name", "$", t)
            elif kind == TK.MacroPaste and not in_define:
                note("token pasting outside a macro body", "``", t)
            elif kind == TK.MacroPaste and not _pastes_words(toks, i, params):
                return _Finding("`` may only paste identifier pieces: pasting other text is "
                                "read differently by each tool", "``", f, t.offset)
            elif kind == TK.Identifier and in_define and t.text in params:
                glue = self._glue(toks, i, i, None, None)
                if glue:
                    return _Finding(glue.replace(t.text, f"macro argument {t.text}", 1), t.text,
                                    f, t.offset, GLUE_HINT)
            elif kind == TK.Identifier and t.text.startswith("\\"):
                if self.role != "netlist" and (t.text[1:2] in ("$", "`") or "`" in t.text):
                    note(f"escaped identifier {t.text}: simulators read it as a system task or "
                         "directive name", t.text, t)
            elif kind == TK.Unknown and any(c in t.text for c in "`$\\"):
                return _Finding(f"stray {t.text!r}: tools glue it onto neighbouring text",
                                t.text, f, t.offset)
            elif kind in (TK.RootSystemName, TK.UnitSystemName) and self.role == "design":
                note(f"{t.text} names the whole simulation: a design may only reference its own "
                     "hierarchy", t.text, t)
            elif kind == TK.BindKeyword and self.role == "design":
                note("bind inserts code into other modules (the testbench): not allowed in a "
                     "design", "bind", t)
            elif (kind in (TK.ImportKeyword, TK.ExportKeyword, TK.Identifier)
                  and _foreign_import(toks, i)):
                construct = f"{t.text} {_construct_text(toks[i + 1])}"
                note("foreign-language (DPI) import/export runs native code", construct, t)
            i += 1
        if in_define:
            self._define(define_name, define_params, toks[body_start:], params)
        return None

    def _define(self, name: str | None, has_params: bool, body: list[_Tok],
                params: Sequence[str]) -> None:
        if name:
            self.macros[name] = _Macro(body, has_params, tuple(params))
            self._cost_memo.clear()

    def _edge(self, name: str, args: list[list[_Tok]] | None, first: bool,
              depth: int = 0) -> str | None:
        """First (or last) character of what the usage of ``name`` expands to; None when that
        depends on something not known here (an undefined macro, an empty expansion)."""
        macro = self.macros.get(name)
        if macro is None or not macro.body or depth > 16:
            return None
        tok = macro.body[0] if first else macro.body[-1]
        if tok.kind == TK.Identifier and tok.text in macro.params:
            index = macro.params.index(tok.text)
            arg = args[index] if args is not None and index < len(args) else []
            if not arg or arg[0 if first else -1].kind in (TK.Directive, TK.MacroUsage):
                return None
            return arg[0].first if first else arg[-1].last
        if tok.kind in (TK.Directive, TK.MacroUsage):
            inner = tok.text[1:]
            if inner in _KNOWN_DIRECTIVES:
                return None
            return self._edge(inner, None, first, depth + 1)
        return tok.first if first else tok.last

    def _pasted_arg(self, name: str, args: list[list[_Tok]] | None) -> str | None:
        """Why an argument of this usage cannot be pasted (``a``b``) safely, or None."""
        macro = self.macros.get(name)
        if macro is None or not macro.params:
            return None
        body = macro.body
        for k, tok in enumerate(body):
            if tok.kind != TK.MacroPaste:
                continue
            for side, first in ((k - 1, False), (k + 1, True)):
                if not (0 <= side < len(body)) or body[side].text not in macro.params:
                    continue
                index = macro.params.index(body[side].text)
                arg = args[index] if args is not None and index < len(args) else []
                edge = (arg[0].first if first else arg[-1].last) if arg else None
                if edge is None or edge not in _WORD:
                    return (f"argument {index + 1} of `{name} is pasted (``) but does not "
                            "start/end with an identifier character")
        return None

    def _glue(self, toks: Sequence[_Tok], i: int, end: int, first: str | None,
              last: str | None, before: str | None = "") -> str | None:
        """Why the text ``toks[i..end]`` (a macro usage or argument) could fuse with an
        adjacent token once a tool pastes its expansion in as text, or None. An explicit
        paste (````) is no accident: slang performs it like the tools. ``before`` is the last
        character of the expansion that ends right before ``toks[i]`` when that is a macro
        usage too (two uses side by side fuse through their expansions)."""
        paste = (TK.MacroPaste,)
        left = toks[i - 1].last if before == _NOT_A_USAGE else before
        if i > 0 and toks[i - 1].end == toks[i].offset and toks[i - 1].kind not in paste \
                and _fuses(left, first):
            return (f"{toks[i].text} touches {toks[i - 1].text!r} with no space between: tools "
                    "paste macro text in and re-read it, so the two can fuse into another "
                    "token; add a space")
        if end + 1 < len(toks) and toks[end + 1].offset == toks[end].end \
                and toks[end + 1].kind not in paste and _fuses(last, toks[end + 1].first):
            return (f"{toks[i].text} touches {toks[end + 1].text!r} with no space between: tools "
                    "paste macro text in and re-read it, so the two can fuse into another "
                    "token; add a space")
        return None

    def _call_cost(self, toks: Sequence[_Tok], i: int, match: Sequence[int], depth: int) -> int:
        """Upper bound on the tokens produced by the macro usage at ``toks[i]``."""
        name = toks[i].text[1:]
        macro = self.macros.get(name)
        if macro is None:
            return 1
        cost = self._macro_cost(name, depth + 1)
        if macro.has_params and i + 1 < len(toks) and toks[i + 1].kind == TK.OpenParenthesis:
            close = match[i + 1] if match[i + 1] >= 0 else len(toks)
            cost *= 1 + self._seq_cost(toks[i + 2:close], depth + 1)
        return min(cost, MAX_EXPANDED_TOKENS + 1)

    def _macro_cost(self, name: str, depth: int) -> int:
        cached = self._cost_memo.get(name)
        if cached is not None:
            return cached
        self._cost_memo[name] = 1  # recursion: slang and the tools stop on recursive macros
        cost = self._seq_cost(self.macros[name].body, depth)
        self._cost_memo[name] = cost
        return cost

    def _seq_cost(self, toks: Sequence[_Tok], depth: int) -> int:
        if depth > MAX_MACRO_NESTING:
            return MAX_EXPANDED_TOKENS + 1
        match = _matching_parens(toks)
        total = 0
        i = 0
        while i < len(toks) and total <= MAX_EXPANDED_TOKENS:
            t = toks[i]
            if t.kind in (TK.Directive, TK.MacroUsage) and t.text[1:] in self.macros:
                total += self._call_cost(toks, i, match, depth)
                nxt = i + 1
                if (self.macros[t.text[1:]].has_params and nxt < len(toks)
                        and toks[nxt].kind == TK.OpenParenthesis):
                    i = match[nxt] if match[nxt] >= 0 else len(toks)
            else:
                total += 1
            i += 1
        return min(total, MAX_EXPANDED_TOKENS + 1)


def _define_header(toks: Sequence[_Tok], i: int) -> tuple[str | None, bool, list[str], int]:
    """Name, whether it takes arguments, formal names, and body start of the `define at i."""
    n = len(toks)
    j = i + 1
    if j >= n or toks[j].eol:
        return None, False, [], j
    name = toks[j].text
    j += 1
    params: list[str] = []
    adjacent = j < n and toks[j].offset == toks[j - 1].offset + len(name)
    if j < n and toks[j].kind == TK.OpenParenthesis and adjacent and not toks[j].eol:
        expect_name = True
        j += 1
        while j < n and not toks[j].eol and toks[j].kind != TK.CloseParenthesis:
            if expect_name and toks[j].kind == TK.Identifier:
                params.append(toks[j].text)
            expect_name = toks[j].kind == TK.Comma
            j += 1
        if j < n and not toks[j].eol:
            j += 1
        return name, True, params, j
    return name, False, params, j


def _pastes_words(toks: Sequence[_Tok], i: int, params: Sequence[str]) -> bool:
    """Whether the ```` at ``toks[i]`` joins identifier pieces (a formal argument counts: its
    value is checked where the macro is used)."""
    def wordy(tok: _Tok, edge: str) -> bool:
        return tok.text in params or (tok.kind in (TK.Directive, TK.MacroUsage)) or edge in _WORD

    return (0 < i < len(toks) - 1 and wordy(toks[i - 1], toks[i - 1].last)
            and wordy(toks[i + 1], toks[i + 1].first))


def _matching_parens(toks: Sequence[_Tok]) -> list[int]:
    """For each '(' the index of its ')' (-1 if unbalanced); other entries are -1."""
    match = [-1] * len(toks)
    stack: list[int] = []
    for idx, t in enumerate(toks):
        if t.kind == TK.OpenParenthesis:
            stack.append(idx)
        elif t.kind == TK.CloseParenthesis and stack:
            match[stack.pop()] = idx
    return match


def _pasted(toks: Sequence[_Tok], i: int) -> bool:
    return ((i > 0 and toks[i - 1].kind == TK.MacroPaste)
            or (i + 1 < len(toks) and toks[i + 1].kind == TK.MacroPaste))


def _dollar_is_index(toks: Sequence[_Tok], i: int) -> bool:
    """``$`` as an unbounded range/queue end (``[1:$]``, ``q[$]``), not a name fragment."""
    prev = toks[i - 1].kind if i > 0 else None
    nxt = toks[i + 1].kind if i + 1 < len(toks) else None
    return prev in (TK.OpenBracket, TK.Colon) or nxt == TK.CloseBracket


def _construct_text(t: _Tok) -> str:
    return f'"{t.text}"' if t.kind == TK.StringLiteral else t.text


# ------------------------------------------------------------------------------------ phase 2


def _analysis_order(files: Sequence[Source]) -> list[Source]:
    """Included files first, so their macros are defined when the includer is expanded.

    slang is run with includes disabled (it must not open files), so headers are fed as
    separate buffers of the same compilation unit instead.
    """
    included = {
        name for f in files if "`include" in f.content
        for name in (g.name for g in files) if name in f.content
    }
    return [f for f in files if f.name in included] + [f for f in files if f.name not in included]


def _check_preprocessed(files: Sequence[Source], allowed: frozenset[str],
                        avail: frozenset[str], role: str) -> _Finding | None:
    """Check the macro-expanded token stream of all files, parsed from memory only."""
    if not files:
        return None
    sm = pyslang.SourceManager()
    by_buffer: dict[int, Source] = {}
    buffers = []
    for f in _analysis_order(files):
        buf = sm.assignText(_VIRTUAL_DIR + f.name, f.content)
        by_buffer[buf.id.id] = f
        buffers.append(buf)
    options = parsing.PreprocessorOptions()
    options.maxIncludeDepth = 0  # the guarantee that slang never opens a file
    bag = pyslang.Bag()
    bag.preprocessorOptions = options
    tree = syntax.SyntaxTree.fromBuffers(buffers, sm, bag)

    raw: list[parsing.Token] = []
    with_errors = len(tree.diagnostics) > 0

    def collect(node: object) -> None:
        if isinstance(node, parsing.Token):
            if with_errors:
                for tr in node.trivia:
                    if tr.kind == parsing.TriviaKind.SkippedTokens:
                        raw.extend(tr.getSkippedTokens())
            raw.append(node)

    tree.root.visit(collect)
    if len(raw) > MAX_EXPANDED_TOKENS:  # the estimate missed: count what slang really made
        return _Finding(f"macro expansion too large to check ({len(raw)} tokens)", "`define",
                        files[0], 0)

    def finding(message: str, construct: str, tok: parsing.Token) -> _Finding:
        loc = sm.getFullyExpandedLoc(tok.location)
        file = by_buffer.get(loc.buffer.id, files[0])
        return _Finding(message, construct, file, loc.offset if loc.buffer.id in by_buffer else 0)

    for inc in tree.getIncludeDirectives():
        path = inc.path
        if not _is_plain_name(path) or path not in avail:
            return finding(f"`include {path!r}: only files provided for this run may be included",
                           "`include", inc.syntax.getFirstToken())

    toks: list[_Tok] | None = None
    for i, t in enumerate(raw):
        kind = t.kind
        if kind == TK.SystemIdentifier:
            name = t.rawText
            if name in allowed and name not in _READS_FILE and name not in _WRITES_FILE \
                    and name != "$fopen":
                continue
        elif not (kind in (TK.ImportKeyword, TK.ExportKeyword)
                  or (kind == TK.Identifier and t.rawText in ("import", "export"))):
            continue
        if toks is None:  # built only when a call's arguments or a neighbour matter
            toks = [_Tok(r.kind, r.valueText if r.kind == TK.StringLiteral else r.rawText, 0,
                         False) for r in raw]
        if kind == TK.SystemIdentifier:
            problem = _check_call(t.rawText, toks, i, allowed, avail, role)
            if problem:
                return finding(problem, t.rawText, t)
        elif _foreign_import(toks, i):
            return finding("foreign-language (DPI) import/export runs native code",
                           f"{t.rawText} {_construct_text(toks[i + 1])}", t)
    return None


# ------------------------------------------------------------------------------------ containment

#: slang diagnostics for a name the design uses but does not declare.
_UNRESOLVED = ("Undeclared", "Unknown", "CouldNotResolve")


#: Conditional directives: a design without them compiles alike under every tool's macros.
_CONDITIONALS = ("`ifdef", "`ifndef", "`elsif")
#: Directives a task file's macro skeleton keeps (see :func:`_macro_skeleton`).
_SKELETON = frozenset({"define", "undef", "undefineall", "ifdef", "ifndef", "elsif", "else",
                       "endif"})


def _options(predefines: Sequence[str]) -> pyslang.Bag:
    """Preprocessor options for one tool's view: its predefined macros, and never a file."""
    options = parsing.PreprocessorOptions()
    options.maxIncludeDepth = 0
    options.predefines = list(predefines)
    bag = pyslang.Bag()
    bag.preprocessorOptions = options
    return bag


@functools.lru_cache(maxsize=64)
def _macro_skeleton(texts: tuple[str, ...]) -> str:
    """Only the macro directives of the task's files, in order, with their conditionals
    (memoised: every design of a task is checked against the same files).

    The tools read the task's files before the design as one compilation unit, so a macro the
    testbench defines (or leaves undefined) selects the design's branches too. Keeping the
    directives and nothing else (same line count per directive) lets the design be elaborated
    alone while its preprocessor sees what the tool's will.
    """
    out: list[str] = []
    for text in texts:
        for tok in _lex(text):
            if tok.kind != TK.Directive or tok.text[1:] not in _SKELETON:
                continue
            stop = tok.offset
            while True:  # to the end of the line, backslash continuations included
                nl = text.find("\n", stop)
                if nl < 0:
                    stop = len(text)
                    break
                if text[nl - 1:nl] == "\\":
                    stop = nl + 1
                    continue
                stop = nl
                break
            out.append(text[tok.offset:stop])
    return "\n".join(out) + "\n"


def needs_variants(design: Sequence[Source]) -> bool:
    """Whether the design could compile differently under different predefined macros.

    Without a conditional directive, macros change no branch; a predefined macro used as a
    value (`` `VERILATOR ``) carries a constant, never a name. So one check serves every tool.
    """
    return any(d in f.content for f in design for d in _CONDITIONALS)


@functools.lru_cache(maxsize=64)
def _task_names(texts: tuple[str, ...], predefines: tuple[str, ...] = (),
                ) -> tuple[frozenset[str], frozenset[str]]:
    """Every identifier the task's files mention (a superset of what they declare), and the
    modules, packages, interfaces and classes they declare under ``predefines``."""
    mentioned = frozenset(t.text for text in texts for t in _lex(text)
                          if t.kind == TK.Identifier)
    declared: set[str] = set()
    for text in texts:
        sm = pyslang.SourceManager()
        buf = sm.assignText(_VIRTUAL_DIR + "task.v", text)
        declared.update(name for name, _ in _module_names(
            syntax.SyntaxTree.fromBuffer(buf, sm, _options(predefines))))
    return mentioned, frozenset(declared)


def _module_names(tree: syntax.SyntaxTree) -> list[tuple[str, int]]:
    return [(name, loc.offset) for name, loc in _module_decls(tree)]


def _module_decls(tree: syntax.SyntaxTree) -> list[tuple[str, pyslang.SourceLocation]]:
    """Modules, packages, interfaces and classes ``tree`` declares, with where."""
    names: list[tuple[str, pyslang.SourceLocation]] = []

    def visit(node: object) -> None:
        header = getattr(node, "header", None)
        name = getattr(header, "name", None)
        if isinstance(name, parsing.Token) and type(node).__name__ in (
                "ModuleDeclarationSyntax", "ClassDeclarationSyntax"):  # modules, packages, ...
            names.append((name.valueText, name.location))

    tree.root.visit(visit)
    return names


def check_contained(design: Sequence[Source], testbench: Sequence[Source],
                    support: Sequence[Source] = (),
                    predefines: Sequence[Sequence[str]] = ((),)) -> None:
    """Raise :class:`SecurityViolation` when the design names something of the task's.

    The design is elaborated on its own (slang, from memory; its includes resolve to the task's
    support files, nothing is opened). Any name it uses but does not declare (a hierarchical
    reference such as ``tb.errors``, a task of the testbench, a ``$unit`` variable or package of
    the testbench, the testbench's reference module) that the task's files mention would, in the
    real simulation, reach into the testbench: ``force tb.errors = 0`` or ``assign y =
    tb.ref.y`` forge a pass. Module names the task already uses are refused too (a second
    ``module tb`` would be the one some tool elaborates). Undeclared names the task does not
    mention are left to lint, as the bugs they are. The task's ``support`` modules belong to
    the design's world: a design may instantiate what the task provides for it.

    ``predefines`` holds one macro set per tool view (``NAME`` or ``NAME=VALUE``, as the tool
    predefines them or a validator passes them with ``-D``): the check runs once per view, with
    the task's own macro directives before the design, as the tool preprocesses it. A design
    without a conditional directive is checked once (:func:`needs_variants`).
    """
    if not design:
        return
    views = [tuple(p) for p in predefines] or [()]
    if not needs_variants(design):
        views = views[:1]
    for view in dict.fromkeys(views):
        _check_contained_under(design, testbench, support, view)


def _check_contained_under(design: Sequence[Source], testbench: Sequence[Source],
                           support: Sequence[Source], predefines: tuple[str, ...]) -> None:
    task_names, task_modules = _task_names(tuple(f.content for f in testbench), predefines)
    hdl_support = [f for f in support if f.name.lower().endswith((".v", ".sv"))]
    sm = pyslang.SourceManager()
    task_buffers = {f.name: sm.assignText(_VIRTUAL_DIR + f.name, f.content) for f in hdl_support}
    compilation = pyslang.ast.Compilation()
    for f in hdl_support:
        # one source manager for every tree of a compilation (slang refuses a mix)
        compilation.addSyntaxTree(syntax.SyntaxTree.fromBuffer(
            task_buffers[f.name], sm, _options(predefines)))
    # The tools compile support, then testbench, then design, as one unit: the task's macros
    # reach the design. Their directives go first, then every design file in one tree.
    skeleton = sm.assignText(_VIRTUAL_DIR + ".rtlforge-task-macros.v", _macro_skeleton(
        tuple(f.content for f in (*hdl_support, *testbench))))
    by_buffer: dict[int, Source] = {}
    buffers = [skeleton]
    for f in design:
        buf = sm.assignText(_VIRTUAL_DIR + f.name, f.content)
        by_buffer[buf.id.id] = f
        buffers.append(buf)
    tree = syntax.SyntaxTree.fromBuffers(buffers, sm, _options(predefines))
    for name, location in _module_decls(tree):
        loc = sm.getFullyExpandedLoc(location)
        f = by_buffer.get(loc.buffer.id)
        if name in task_modules and f is not None:
            raise _violation(_Finding(
                f"the design declares {name!r}, a name the task's testbench uses: a design "
                "may not replace or shadow testbench modules", name, f, loc.offset,
                CONTAINMENT_HINT))
    compilation.addSyntaxTree(tree)
    compilation.getRoot()
    suspects = _unresolved(compilation, sm, by_buffer, task_names)
    if not suspects:
        return
    # Elaborate design and task together, as one compilation unit (as Icarus does): a name
    # still unresolved there is the design's own bug, for lint; one that now resolves reaches
    # into the testbench.
    sm2 = pyslang.SourceManager()
    buffers = [sm2.assignText(_VIRTUAL_DIR + f.name, f.content)
               for f in (*testbench, *hdl_support, *design)
               if f in design or f.name.lower().endswith((".v", ".sv"))]
    by_buffer2 = {b.id.id: f for b, f in zip(buffers[-len(design):], design, strict=True)}
    together = pyslang.ast.Compilation()
    together.addSyntaxTree(syntax.SyntaxTree.fromBuffers(buffers, sm2, _options(predefines)))
    together.getRoot()
    still = {key for key, _ in _unresolved(together, sm2, by_buffer2, task_names)}
    for key, (name, f, offset) in suspects:
        if key not in still:
            raise _violation(_Finding(
                f"the design refers to {name!r}, which it does not declare: in the simulation "
                "that name is the testbench's, and a design may only reference its own "
                "hierarchy", name, f, offset, CONTAINMENT_HINT))


def _unresolved(compilation: pyslang.ast.Compilation, sm: pyslang.SourceManager,
                by_buffer: dict[int, Source], names: frozenset[str],
                ) -> list[tuple[tuple[str, int, str], tuple[str, Source, int]]]:
    """Names among ``names`` that the design files use without a declaration in reach."""
    found = []
    for diag in compilation.getAllDiagnostics():
        code = str(diag.code)
        args = list(diag.args)
        name = args[0] if args and isinstance(args[0], str) else None
        if name is None or name not in names or not any(k in code for k in _UNRESOLVED):
            continue
        loc = sm.getFullyExpandedLoc(diag.location)
        f = by_buffer.get(loc.buffer.id)
        if f is not None:
            found.append(((f.name, loc.offset, name), (name, f, loc.offset)))
    return found
