"""Read a testbench's verdict from simulation output in a way the design cannot forge.

The design under test runs in the same simulator process as the testbench, so it can ``$display``
"Your Design Passed" as easily as the testbench can. :func:`instrument_testbench` therefore makes
every line the *testbench* prints start with a marker holding a per-run secret nonce, and
:func:`judge` only reads verdicts from lines that start with that marker. The design never sees
the nonce (it is generated per run and only written into the testbench), so it cannot print a
line the judge accepts.

Limitations (deliberate, documented rather than half-solved):

- A ``$display`` whose string contains ``\\n`` prints continuation lines without the marker; those
  are ignored. Verdict lines are single-line in every benchmark we read.
- Output the design prints *without* a trailing newline glues onto the next testbench line, which
  then no longer starts with the marker and is ignored. That can only make a design fail.
- ``$fdisplay``/``$fwrite`` (even to stdout) and ``$error``/``$fatal`` messages carry no marker,
  so with a nonce they are not read; testbenches must report through ``$display`` & co.
"""

from __future__ import annotations

import functools
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from rtlforge.core.feedback import is_benign_sorry, make_feedback, parse_iverilog
from rtlforge.core.models import Feedback, PassRule, Verdict

_NO_FILES: Mapping[str, str] = MappingProxyType({})
_NONCE_OK = re.compile(r"^[A-Za-z0-9_-]{8,64}$")

#: How many failing testbench lines go into the sim_mismatch feedback.
MAX_REPORTED_LINES = 5


def new_nonce() -> str:
    """A fresh unguessable token; use one per simulation run."""
    return secrets.token_hex(12)


def marker(nonce: str) -> str:
    """The prefix each instrumented testbench line starts with (ASCII, no ``%`` or ``\\``)."""
    if not _NONCE_OK.match(nonce):
        raise ValueError("a nonce is 8-64 characters of [A-Za-z0-9_-]")
    return f"@@rtlf:{nonce}@@"


#: Comments and string literals are matched as whole tokens so nothing inside them is rewritten.
_TB_TOKENS = re.compile(
    r"""(?P<comment>//[^\n]*|/\*.*?\*/)
      | (?P<string>"(?:\\.|[^"\\\n])*")
      | (?<![\w$])(?P<task>\$(?:display|write|strobe|monitor)[bho]?)(?![\w$])""",
    re.DOTALL | re.VERBOSE,
)
_SPACE = re.compile(r"\s*")


def _skip_space(source: str, pos: int) -> int:
    match = _SPACE.match(source, pos)
    return match.end() if match else pos


def instrument_testbench(source: str, nonce: str) -> str:
    """Make every ``$display/$write/$strobe/$monitor`` (and b/h/o forms) print the marker first.

    The marker becomes the first argument: a leading string argument without format specifiers
    is printed verbatim and the original arguments follow unchanged. ``$display;`` and
    ``$display()`` become ``$display("<marker>")``.
    """
    literal = f'"{marker(nonce)}"'
    out: list[str] = []
    pos = 0
    for match in _TB_TOKENS.finditer(source):
        if match["task"] is None:
            continue
        end = match.end()
        after = _skip_space(source, end)
        if after < len(source) and source[after] == "(":
            inner = _skip_space(source, after + 1)
            empty = inner < len(source) and source[inner] == ")"
            out.append(source[pos:after + 1])
            out.append(literal if empty else f"{literal}, ")
            pos = after + 1
        else:
            out.append(source[pos:end])
            out.append(f"({literal})")
            pos = end
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
_FAIL_WORD = re.compile(r"\b(?:errors?|fail(?:s|ed|ure|ures|ing)?)\b", re.IGNORECASE)
#: An Icarus "sorry:" line (compile or runtime): the tool could not do what was written.
_SORRY = re.compile(r"^(?:[^:\s][^:]*:\d+:\s*)?(?:vvp\.tgt\s+)?sorry:", re.IGNORECASE)


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
    if _FAIL_WORD.search(rest):
        return [False]
    return []


def testbench_lines(output: str, nonce: str | None) -> list[str]:
    """The lines the testbench printed, marker removed; all lines when there is no nonce."""
    lines = output.splitlines()
    if nonce is None:
        return lines
    tag = marker(nonce)
    # Every occurrence is the testbench's ($write without newline repeats it within a line).
    return [line.replace(tag, "") for line in lines if line.startswith(tag)]


@functools.lru_cache(maxsize=256)
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def _fail(reason: str, lines: list[str], stage: str, files: Mapping[str, str],
          category: str = "sim_mismatch") -> Judgement:
    shown = [line.strip() for line in lines[:MAX_REPORTED_LINES]]
    message = reason + (":\n" + "\n".join(shown) if shown else "")
    return Judgement(Verdict.FAIL, reason,
                     (make_feedback(category, message, stage=stage, files=files),))


def judge(output: str, rule: PassRule, *, nonce: str | None, stage: str = "simulate",
          files: Mapping[str, str] = _NO_FILES) -> Judgement:
    """Decide PASS/FAIL/ERROR from simulator output under ``rule``.

    With a nonce only marker-prefixed lines count, so the design's own prints are ignored.
    Anything ambiguous fails: conflicting signals, or no recognisable verdict at all.
    """
    all_lines = output.splitlines()
    tag = marker(nonce) if nonce is not None else None
    sorry = [line for line in all_lines
             if (tag is None or not line.startswith(tag)) and _SORRY.match(line)
             and not is_benign_sorry(line)]
    if sorry:
        feedback = parse_iverilog("\n".join(sorry), stage=stage, files=files)
        return Judgement(Verdict.ERROR, "the simulator does not support a construct used",
                         tuple(feedback))
    lines = testbench_lines(output, nonce)

    if rule.kind == "regex":
        if rule.pass_regex is None:
            return _fail("regex pass rule has no pass_regex", [], stage, files, "no_verdict")
        if rule.fail_regex is not None:
            fail_re = _compiled(rule.fail_regex)
            failing = [line for line in lines if fail_re.search(line)]
            if failing:
                return _fail("the testbench reported a failure", failing, stage, files)
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
        return _fail(reason, failing, stage, files)
    if passes:
        return Judgement(Verdict.PASS, "the testbench reported a pass")
    return _fail("the testbench printed no recognisable verdict", lines[-MAX_REPORTED_LINES:],
                 stage, files, "no_verdict")
