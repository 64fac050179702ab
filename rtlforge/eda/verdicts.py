"""Read a testbench's verdict from simulation output in a way the design cannot forge.

The design under test runs in the same simulator process as the testbench, so it can ``$display``
"Your Design Passed" as easily as the testbench can. :func:`instrument_testbench` therefore
wraps what every ``$display/$write/$strobe/$monitor`` of the *testbench* prints between two
markers holding a per-run secret nonce, and :func:`judge` reads verdicts only from the text
between them. The design never sees the nonce: it is generated per run and only written into
the testbench, which the gate does not let a design open or include.

Because each print is bracketed on both sides, output of the design cannot splice into a
testbench line either: text the design prints without a newline before or after a testbench
line stays outside the markers and is dropped, so the testbench's failure line keeps its words.

Limitations (deliberate, documented rather than half-solved):

- ``$fdisplay``/``$fwrite`` (even to stdout) and ``$error``/``$fatal`` messages carry no marker,
  so with a nonce they are not read; testbenches must report through ``$display`` & co.
"""

from __future__ import annotations

import functools
import re
import secrets
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from rtlforge.core.models import Feedback, PassRule, Verdict
from rtlforge.core.untrusted import BoundedRegex, compile_regex
from rtlforge.eda.feedback import make_feedback
from rtlforge.eda.mismatches import failing_checks
from rtlforge.eda.modules import VERILOG_KEYWORDS

_NO_FILES: Mapping[str, str] = MappingProxyType({})
_NONCE_OK = re.compile(r"^[A-Za-z0-9_-]{8,64}$")

#: How many failing testbench lines go into the sim_mismatch feedback.
MAX_REPORTED_LINES = 5


def new_nonce() -> str:
    """A fresh unguessable token; use one per simulation run."""
    return secrets.token_hex(12)


def marker(nonce: str) -> str:
    """What each instrumented testbench print starts with (ASCII, no ``%`` or ``\\``)."""
    if not _NONCE_OK.match(nonce):
        raise ValueError("a nonce is 8-64 characters of [A-Za-z0-9_-]")
    return f"@@rtlf:{nonce}@@"


def end_marker(nonce: str) -> str:
    """What each instrumented testbench print ends with (before ``$display``'s newline)."""
    return f"@@/rtlf:{marker(nonce)[7:-2]}@@"


#: Comments and string literals are matched as whole tokens so nothing inside them is rewritten.
_TB_TOKENS = re.compile(
    r"""(?P<comment>//[^\n]*|/\*.*?\*/)
      | (?P<string>"(?:\\.|[^"\\\n])*")
      | (?<![\w$])(?P<task>\$(?:display|write|strobe|monitor)[bho]?)(?![\w$])""",
    re.DOTALL | re.VERBOSE,
)
#: Inside an argument list: what to skip whole, and the brackets to count.
_ARG_TOKENS = re.compile(r"""//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|[()\[\]{}]""", re.DOTALL)
_SPACE = re.compile(r"\s*")


def _skip_space(source: str, pos: int) -> int:
    match = _SPACE.match(source, pos)
    return match.end() if match else pos


def _closing_paren(source: str, open_pos: int) -> int:
    """Index of the ``)`` closing the ``(`` at ``open_pos``, or -1."""
    depth = 0
    for match in _ARG_TOKENS.finditer(source, open_pos):
        tok = match.group()
        if tok in "([{":
            depth += 1
        elif tok in ")]}":
            depth -= 1
            if depth == 0:
                return match.start()
    return -1


def instrument_testbench(source: str, nonce: str) -> str:
    """Bracket what every ``$display/$write/$strobe/$monitor`` (b/h/o forms too) prints.

    The start marker becomes the first argument and the end marker the last: string arguments
    without format specifiers print verbatim, and the original arguments sit unchanged between
    them. ``$display;`` and ``$display()`` become ``$display("<start>", "<end>")``.
    """
    start, end = f'"{marker(nonce)}"', f'"{end_marker(nonce)}"'
    out: list[str] = []
    pos = 0
    for match in _TB_TOKENS.finditer(source):
        if match["task"] is None or match.start() < pos:
            continue
        after = _skip_space(source, match.end())
        close = _closing_paren(source, after) if source[after:after + 1] == "(" else -1
        if close < 0:
            out.append(source[pos:match.end()])
            out.append(f"({start}, {end})")
            pos = match.end()
            continue
        inner = source[after + 1:close]
        out.append(source[pos:after + 1])
        out.append(f"{start}, {end}" if not inner.strip() else f"{start}, {inner}, {end}")
        pos = close
    out.append(source[pos:])
    return "".join(out)


@dataclass(frozen=True)
class Judgement:
    """What the simulation output says about the design, and why."""

    verdict: Verdict
    reason: str
    feedback: tuple[Feedback, ...] = ()


# ---------------------------------------------------------------- recognised verdict formats

#: VerilogEval: "Mismatches: 3 in 100 samples".
_MISMATCHES = re.compile(r"\bMismatches:\s*(\d+)\s+in\s+(\d+)\s+samples\b", re.IGNORECASE)
#: VerilogEval prints TIMEOUT when its watchdog stops the run; the sample count is then partial.
_TIMEOUT = re.compile(r"\bTIMEOUT\b")
_DESIGN_PASSED = re.compile(
    r"\bYour\s+Design\s+Passed\b|^\W*(?:all\s+)?tests?\s+passed\W*$", re.IGNORECASE)
_STATUS = re.compile(r"\bSTATUS\s*:\s*(PASS|FAIL)(?:ED)?\b", re.IGNORECASE)
_TESTS_PASSED = re.compile(r"\b(\d+)\s*/\s*(\d+)\s+tests?\s+passed\b", re.IGNORECASE)
#: "Test completed with 3 /100 failures", "2 errors", "5 mismatches". Not "N failed": that
#: reads as an index too often ("Test 0 failed").
_COUNT_BEFORE = re.compile(
    r"\b(\d+)\s*(?:/\s*\d+\s*)?(?:failures?|errors?|mismatch(?:es)?)\b", re.IGNORECASE)
#: "Errors: 0", "failures = 3".
_COUNT_AFTER = re.compile(r"\b(?:failures?|errors?|mismatches)\s*[:=]\s*(\d+)\b", re.IGNORECASE)
#: "no errors", "without failures": not a failure.
_NEGATED = re.compile(r"\b(?:no|without|zero)\s+(?:errors?|failures?|mismatch(?:es)?)\b",
                      re.IGNORECASE)
#: A failure word: "error", "FAIL", "failed", and a single "MISMATCH" (a count of "mismatches"
#: is read above, where 0 passes; "mismatched samples is 0" is VerilogEval's pass summary).
_FAIL_WORD = re.compile(r"\b(?:errors?|fail(?:s|ed|ure|ures|ing)?|mismatch)\b", re.IGNORECASE)
#: "expected 5, got 4", "exp=5 actual=4", "expected: 1 but observed 0": a check whose two
#: values differ is a failure even without a failure word (equal values: just a report).
_EXPECTED_GOT = re.compile(
    r"\b(?:expected|expecting|exp)\b\s*[:=]?\s*(?P<expected>-?[\w'.]*\w)\W+(?:\w+\s+){0,2}?"
    r"(?:got|actual|observed|received|obs)\b\s*[:=]?\s*(?P<got>-?[\w'.]*\w)", re.IGNORECASE)


def _differs(line: str) -> bool:
    return any(m["expected"].lower() != m["got"].lower() for m in _EXPECTED_GOT.finditer(line))


def _line_signals(line: str) -> list[bool]:
    """Verdict signals in one testbench line: True = pass, False = fail; [] = says nothing."""
    found: list[bool] = []
    for m in _MISMATCHES.finditer(line):
        found.append(int(m[1]) == 0)
    if _TIMEOUT.search(line):
        found.append(False)
    if _DESIGN_PASSED.search(line):
        found.append(True)
    for m in _STATUS.finditer(line):
        found.append(m[1].upper() == "PASS")
    for m in _TESTS_PASSED.finditer(line):
        found.append(int(m[1]) == int(m[2]))
    if found:
        return found
    rest = _NEGATED.sub(" ", line)
    for m in _COUNT_BEFORE.finditer(rest):
        found.append(int(m[1]) == 0)
    for m in _COUNT_AFTER.finditer(rest):
        found.append(int(m[1]) == 0)
    if found:
        return found
    if _FAIL_WORD.search(rest) or _differs(rest):
        return [False]
    return []


def testbench_lines(output: str, nonce: str | None) -> list[str]:
    """The lines the testbench printed (text between the markers); all lines without a nonce.

    A print whose end marker never came (the run was cut off) counts up to its line's end.
    """
    if nonce is None:
        return output.splitlines()
    start, end = marker(nonce), end_marker(nonce)
    parts: list[str] = []
    pos = 0
    while (i := output.find(start, pos)) >= 0:
        body = i + len(start)
        k = output.find(start, body)
        j = output.find(end, body, k if k >= 0 else len(output))
        if j < 0:
            stop = output.find("\n", body)
            parts.append(output[body:stop if stop >= 0 else len(output)] + "\n")
            pos = body
            continue
        after = j + len(end)
        parts.append(output[body:j] + ("\n" if output.startswith("\n", after) else ""))
        pos = after
    return "".join(parts).splitlines()


@functools.lru_cache(maxsize=256)
def _compiled(pattern: str) -> BoundedRegex:
    """A task's pattern in RE2 (linear time): a pass rule comes from a task file, and a
    backtracking pattern on a long testbench line would hang the host past every timeout. The
    loader refuses a pattern RE2 cannot run; a Task built in code gets the same typed error
    (:class:`~rtlforge.core.errors.UnboundedRegexError`) here."""
    return compile_regex(pattern)


@dataclass(frozen=True)
class _Checks:
    """How to read failing checks out of the failing lines (see rtlforge.eda.mismatches)."""

    time_unit: str | None = None
    outputs: Collection[str] = ()


def _fail(reason: str, lines: list[str], stage: str, files: Mapping[str, str],
          category: str = "sim_mismatch", checks: _Checks | None = None,
          all_lines: Sequence[str] | None = None) -> Judgement:
    """A failure showing the decisive ``lines``; its failing checks are read from
    ``all_lines`` (the testbench's whole output) when given: a summary line decides the
    verdict, but the checks are described on other lines (VerilogEval's "Hint: Output 'q' has
    N mismatches. First mismatch occurred at time T.")."""
    shown = [line.strip() for line in lines[:MAX_REPORTED_LINES]]
    message = reason + (":\n" + "\n".join(shown) if shown else "")
    feedback = make_feedback(category, message, stage=stage, files=files)
    if checks is not None:
        found = failing_checks(all_lines if all_lines is not None else lines,
                               time_unit=checks.time_unit, outputs=checks.outputs)
        feedback = feedback.model_copy(update={"mismatches": found})
    return Judgement(Verdict.FAIL, reason, (feedback,))


def judge(output: str, rule: PassRule, *, nonce: str | None, stage: str = "simulate",
          files: Mapping[str, str] = _NO_FILES, time_unit: str | None = None,
          outputs: Collection[str] = ()) -> Judgement:
    """Decide PASS/FAIL from simulator output under ``rule``: the testbench's words only.

    With a nonce only text between the markers counts, so the design's own prints are ignored:
    whatever it prints (a simulator-style ``sorry:``, ``%Error:``, a fake summary) neither
    passes it nor changes the verdict's class. ``error`` (the tool could not run what was
    written) is decided by the caller from the tool's own channels: its exit status, its stderr
    and the compile step's output (:func:`rtlforge.eda.stages.simulation_verdict`).
    Anything ambiguous fails: conflicting signals, or no recognisable verdict at all. A
    failure's feedback carries the first failing checks the testbench's lines describe
    (``time_unit``: the testbench's timescale unit; ``outputs``: the design's output names).
    """
    checks = _Checks(time_unit, tuple(outputs))
    lines = testbench_lines(output, nonce)

    if rule.kind == "regex":
        if rule.pass_regex is None:
            return _fail("regex pass rule has no pass_regex", [], stage, files, "no_verdict")
        if rule.fail_regex is not None:
            fail_re = _compiled(rule.fail_regex)
            failing = [line for line in lines if fail_re.search(line)]
            if failing:
                return _fail("the testbench reported a failure", failing, stage, files,
                             checks=checks, all_lines=lines)
        pass_re = _compiled(rule.pass_regex)
        if any(pass_re.search(line) for line in lines):
            return Judgement(Verdict.PASS, "the testbench reported a pass")
        return _fail("no testbench line matched the pass pattern", lines[-MAX_REPORTED_LINES:],
                     stage, files, "no_verdict")

    passes = 0
    failing: list[str] = []
    for line in lines:
        signals = _line_signals(line)
        passes += sum(signals)
        if not all(signals):
            failing.append(line)
    if failing:
        reason = ("conflicting verdicts: the testbench reported both pass and failure" if passes
                  else "the testbench reported a failure")
        return _fail(reason, failing, stage, files, checks=checks)
    if passes:
        return Judgement(Verdict.PASS, "the testbench reported a pass")
    return _fail("the testbench printed no recognisable verdict", lines[-MAX_REPORTED_LINES:],
                 stage, files, "no_verdict")


# ---------------------------------------------------------------- testbench names

#: What the renaming tokenizer tells apart: skipped whole (comments, strings, numbers, system
#: names, based literals) or a name (plain or escaped) or a single character.
_NAME_TOKENS = re.compile(
    r"""(?P<skip>//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|'[sS]?[bBoOdDhH]?\s*[0-9a-fA-FxXzZ?_]+
          |\d[\w$]*|\$[A-Za-z0-9_$]*)
      | \\(?P<escaped>\S+)
      | (?P<name>[A-Za-z_][A-Za-z0-9_$]*)
      | (?P<other>[^\s])""",
    re.DOTALL | re.VERBOSE,
)
#: Keywords that declare a global name a design could reach (``tb.errors``, ``bind tb``,
#: ``pkg::x``, ``$root.tb``).
_DECLARES_GLOBAL = frozenset({"module", "macromodule", "interface", "program", "package",
                              "class", "primitive"})


@dataclass(frozen=True)
class _NameUse:
    name: str
    start: int
    end: int
    escaped: bool


#: Keywords that open a scope ended by their ``end...`` keyword; only what is declared outside
#: all of them is in the compilation unit's (``$unit``) scope.
_SCOPE_OPENS = {"module": "endmodule", "macromodule": "endmodule", "interface": "endinterface",
                "program": "endprogram", "package": "endpackage", "class": "endclass",
                "primitive": "endprimitive", "checker": "endchecker", "config": "endconfig",
                "function": "endfunction", "task": "endtask", "covergroup": "endgroup",
                "property": "endproperty", "sequence": "endsequence"}
_SCOPE_CLOSES = frozenset(_SCOPE_OPENS.values())
#: Before one of the keywords above, these make it a prototype, a type name or an assertion
#: (``assert property (...)``) with no body.
_NO_BODY_BEFORE = frozenset({"extern", "typedef", "pure", "import", "export", "interface",
                             "context", "assert", "assume", "cover", "restrict", "expect"})
_DPI = frozenset({'"DPI-C"', '"DPI"'})
#: After a name at ``$unit`` scope, these end or continue its declaration (``integer n = 0;``,
#: ``reg a, b;``, ``function int f(``); ``[`` only after a type (``integer mem [0:3];``).
_ENDS_DECLARATOR = frozenset({"=", ";", ",", "("})


@dataclass(frozen=True)
class _Token:
    text: str
    start: int
    end: int
    kind: str  # "name", "escaped", "other" or "skip" (a string, number or system name)


@functools.lru_cache(maxsize=256)
def _testbench_names(text: str) -> tuple[tuple[str, ...], tuple[str, ...], tuple[_NameUse, ...]]:
    """Names ``text`` declares globally (every ``ifdef`` branch): its modules, packages,
    interfaces, classes and what it declares in the compilation unit's scope (a variable,
    parameter, function or type outside every module); names it uses after a ``.`` other than
    ``$root.`` (a port, member or instance of something else); and every name use."""
    tokens: list[_Token] = []
    define_ends = -1  # a `define's body declares nothing where it stands
    in_define: list[bool] = []
    for m in _NAME_TOKENS.finditer(text):
        kind = m.lastgroup or "other"
        if kind == "skip" and m.group().startswith(("//", "/*")):
            continue
        tok = m.group(kind) if kind in ("name", "escaped") else m.group()
        if (kind == "name" and tok == "define" and tokens and tokens[-1].text == "`"
                and m.start() == tokens[-1].end):
            define_ends = _directive_end(text, m.end())
        tokens.append(_Token(tok, m.start(), m.end(), kind))
        in_define.append(m.start() < define_ends)
    declared: list[str] = []
    dotted: set[str] = set()
    uses: list[_NameUse] = []
    unit = _UnitScope()

    def text_at(j: int) -> str:
        return tokens[j].text if 0 <= j < len(tokens) else ""

    for i, t in enumerate(tokens):
        prev = [text_at(i - 2), text_at(i - 1)]
        nxt = text_at(i + 1)
        if t.kind in ("other", "skip"):
            if not in_define[i]:
                unit.punctuation(t.text, prev[-1])
            continue
        uses.append(_NameUse(t.text, t.start, t.end, t.kind == "escaped"))
        if prev[-1] == "." and prev[-2] != "$root":
            dotted.add(t.text)
        if prev[-1] == "`" or in_define[i]:
            continue
        # (``virtual interface bus_if vif`` names a type; ``virtual class C`` declares one)
        names_a_unit = (prev[-1] in _DECLARES_GLOBAL and prev != ["virtual", "interface"]) or (
            prev[-1] in ("automatic", "static") and prev[-2] in _DECLARES_GLOBAL)
        if names_a_unit or (
                (t.kind == "escaped" or t.text not in VERILOG_KEYWORDS)
                and prev[-1] not in (".", "'") and prev != [":", ":"]
                and (nxt, text_at(i + 2)) != (":", ":")
                and unit.declares(nxt, prev[-1] == "]" or tokens[i - 1].kind == "name")):
            declared.append(t.text)
        if t.kind == "name":
            unit.keyword(t.text, prev[-1], prev[-2])
    return tuple(dict.fromkeys(declared)), tuple(sorted(dotted)), tuple(uses)


class _UnitScope:
    """Where a token stream stands relative to the compilation unit's scope, enough to tell a
    name being declared there (``integer n = 0, m;``, ``typedef enum {A, B} t;``,
    ``function int f(``) from one being used (``parameter P = W + X;``)."""

    def __init__(self) -> None:
        self.depth = 0  # open modules, packages, functions, ...
        self.header = False  # between a unit-scope function/task keyword and its name
        self.brackets: list[str] = []  # open (, [, { in this statement; "e" for an enum's {
        self.assigned = False  # past an = at this statement's (or enum's) own level
        self.after_enum = False

    def keyword(self, word: str, before: str, earlier: str) -> None:
        # ``virtual class`` and ``virtual function`` have bodies; ``virtual interface`` names a
        # type and ``pure virtual``/``extern virtual`` methods are prototypes
        prototype = before == "virtual" and (word == "interface" or earlier in ("pure", "extern"))
        if (word in _SCOPE_OPENS and before not in _NO_BODY_BEFORE and before not in _DPI
                and not prototype):
            if self.depth == 0 and word in ("function", "task"):
                self.header = True
            self.depth += 1
        elif word in _SCOPE_CLOSES:
            self.depth = max(0, self.depth - 1)
        if word == "enum":
            self.after_enum = True

    def punctuation(self, char: str, before: str) -> None:
        if char in "([{":
            self.brackets.append("e" if char == "{" and self.after_enum else char)
            if char == "{":
                self.after_enum = False
            if self.brackets[-1] == "e":
                self.assigned = False
        elif char in ")]}":
            if self.brackets:
                closed = self.brackets.pop()
                if closed == "e":
                    self.assigned = False
        elif char == "=" and before not in "=!<>" and self._own_level():
            self.assigned = True
        elif char == "," and self._own_level():
            self.assigned = False
        elif char == ";" and not self.brackets:
            self.assigned = False
            self.header = False

    def _own_level(self) -> bool:
        return not self.brackets or self.brackets[-1] == "e"

    def declares(self, nxt: str, after_a_type: bool) -> bool:
        """Whether a name followed by ``nxt`` is declared in the unit's scope here."""
        if self.header and self.depth == 1 and nxt in ("(", ";"):
            self.header = False
            return True
        if self.depth != 0 or self.assigned:
            return False
        if not self.brackets:
            return nxt in _ENDS_DECLARATOR or (nxt == "[" and after_a_type)
        return self.brackets[-1] == "e" and nxt in (",", "}", "=", "[")


def _directive_end(text: str, pos: int) -> int:
    """Where a compiler directive starting before ``pos`` ends (its line, with continuations)."""
    while True:
        end = text.find("\n", pos)
        if end < 0:
            return len(text)
        if text[pos:end].rstrip("\r").endswith("\\"):
            pos = end + 1
            continue
        return end


def testbench_renames(texts: Sequence[str], tag: str, *, keep: Collection[str] = ()
                      ) -> dict[str, str]:
    """Per-run names for the modules, packages, interfaces and classes the testbench declares,
    and for what it declares in the compilation unit's scope (``integer errors;`` before
    ``module tb``, which a design compiled in the same unit names without a prefix).

    A design is written before the run, so a name carrying ``tag`` (fresh per run) is one it
    cannot spell: ``force tb.errors``, ``$root.tb``, ``bind tb`` or ``tb.report()`` then name
    nothing in any tool. Not renamed: names in ``keep`` (the design's top, the task's support
    modules: both sides use them) and names the testbench also writes after a ``.`` (a port or
    member that happens to share the name, which a textual rename would break). Instance names
    are not renamed either: cocotb tests, dumps and hierarchical references of the testbench
    address them; the gate's containment check covers a design that names them.
    """
    if not re.fullmatch(r"[A-Za-z0-9_]+", tag):
        raise ValueError("a name tag is letters, digits and underscores")
    declared: dict[str, None] = {}
    dotted: set[str] = set()
    for text in texts:
        names, after_dot, _ = _testbench_names(text)
        declared.update(dict.fromkeys(names))
        dotted.update(after_dot)
    return {n: f"{n}__rtlf{tag}" for n in declared if n not in dotted and n not in keep}


def rename_testbench(source: str, renames: Mapping[str, str]) -> str:
    """``source`` with every use of a renamed name replaced (comments and strings untouched)."""
    if not renames:
        return source
    out: list[str] = []
    pos = 0
    for use in _testbench_names(source)[2]:
        new = renames.get(use.name)
        if new is None:
            continue
        out.append(source[pos:use.start])
        out.append(f"\\{new}" if use.escaped else new)
        pos = use.end
    out.append(source[pos:])
    return "".join(out)


def name_suffix(tag: str) -> str:
    """What :func:`testbench_renames` appends to a name: removed from what the author sees."""
    return f"__rtlf{tag}"
