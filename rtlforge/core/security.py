"""Static security check for untrusted Verilog, run before any tool reads a file.

Simulators execute what they are given: Verilator runs ``$system``, DPI imports of libc and
``$c``/``\\`systemc_*`` blocks as real C++, and every simulator opens whatever path ``$fopen``,
``$readmemh`` or ``\\`include`` names. Process sandboxing limits the damage; this check refuses
such designs outright, with the file, line and construct, so the refusal is useful feedback.

The check runs in three phases over the same inputs:

1. a raw pass with slang's *lexer* (no preprocessing, so nothing is ever opened) validates every
   ``\\`include`` and rejects directives that hand code to a C++ compiler or could synthesise an
   include from macro pieces;
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
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Literal

import pyslang
from pyslang import parsing, syntax

from rtlforge.core.errors import SecurityViolation
from rtlforge.core.models import SourceFile

__all__ = ["check_sources"]

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


@dataclass(frozen=True, slots=True)
class _Finding:
    message: str
    construct: str
    file: SourceFile
    offset: int


@dataclass(slots=True)
class _Macro:
    body: list[_Tok]
    has_params: bool


def check_sources(files: Sequence[SourceFile], *, role: Literal["design", "testbench"],
                  available: Collection[str] = ()) -> None:
    """Raise :class:`SecurityViolation` for the first unsafe construct in ``files``.

    ``available`` lists the plain names that will exist in the flat run directory; ``include``
    targets and files read by system tasks must be among them. Returns None when nothing unsafe
    was found. Never opens a file and never raises anything else on garbled input.
    """
    if role not in ("design", "testbench"):
        raise ValueError(f"role must be 'design' or 'testbench', not {role!r}")
    allowed = DESIGN_SYSTEM_TASKS if role == "design" else TESTBENCH_SYSTEM_TASKS
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
                             construct=f.construct, source_line=source_line)


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
        out.append(_Tok(kind, text_, offset, eol))


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

    def scan(self, f: SourceFile, late: list[_Finding]) -> _Finding | None:
        """Return an include/directive finding at once; append the rest to ``late``."""
        toks = _lex(f.content)
        match = _matching_parens(toks)
        n = len(toks)
        in_define = False
        params: set[str] = set()
        body_start = 0
        define_name: str | None = None
        define_params = False
        macro_arg_end = -1  # index of ')' closing the outermost macro call being read
        cost_skip = -1

        def note(message: str, construct: str, tok: _Tok) -> None:
            late.append(_Finding(message, construct, f, tok.offset))

        i = 0
        while i < n:
            t = toks[i]
            if in_define and t.eol:
                self._define(define_name, define_params, toks[body_start:i])
                in_define = False
            kind = t.kind
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
            elif (kind in (TK.ImportKeyword, TK.ExportKeyword, TK.Identifier)
                  and _foreign_import(toks, i)):
                construct = f"{t.text} {_construct_text(toks[i + 1])}"
                note("foreign-language (DPI) import/export runs native code", construct, t)
            i += 1
        if in_define:
            self._define(define_name, define_params, toks[body_start:])
        return None

    def _define(self, name: str | None, has_params: bool, body: list[_Tok]) -> None:
        if name:
            self.macros[name] = _Macro(body, has_params)
            self._cost_memo.clear()

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


def _define_header(toks: Sequence[_Tok], i: int) -> tuple[str | None, bool, set[str], int]:
    """Name, whether it takes arguments, formal names, and body start of the `define at i."""
    n = len(toks)
    j = i + 1
    if j >= n or toks[j].eol:
        return None, False, set(), j
    name = toks[j].text
    j += 1
    params: set[str] = set()
    adjacent = j < n and toks[j].offset == toks[j - 1].offset + len(name)
    if j < n and toks[j].kind == TK.OpenParenthesis and adjacent and not toks[j].eol:
        expect_name = True
        j += 1
        while j < n and not toks[j].eol and toks[j].kind != TK.CloseParenthesis:
            if expect_name and toks[j].kind == TK.Identifier:
                params.add(toks[j].text)
            expect_name = toks[j].kind == TK.Comma
            j += 1
        if j < n and not toks[j].eol:
            j += 1
        return name, True, params, j
    return name, False, params, j


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


def _analysis_order(files: Sequence[SourceFile]) -> list[SourceFile]:
    """Included files first, so their macros are defined when the includer is expanded.

    slang is run with includes disabled (it must not open files), so headers are fed as
    separate buffers of the same compilation unit instead.
    """
    included = {
        name for f in files if "`include" in f.content
        for name in (g.name for g in files) if name in f.content
    }
    return [f for f in files if f.name in included] + [f for f in files if f.name not in included]


def _check_preprocessed(files: Sequence[SourceFile], allowed: frozenset[str],
                        avail: frozenset[str], role: str) -> _Finding | None:
    """Check the macro-expanded token stream of all files, parsed from memory only."""
    if not files:
        return None
    sm = pyslang.SourceManager()
    by_buffer: dict[int, SourceFile] = {}
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
