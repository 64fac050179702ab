"""Pull Verilog out of model text: answer tags, fenced blocks, prose around code, truncation.

Model output mixes reasoning, prose and code, so extraction works on a copy of the text with
comments and strings blanked out (same length, offsets still line up): a ``module`` or
``endmodule`` inside a comment, a string or a sentence can then neither start nor end a module.
A module starts only at a declaration header (``module name (``/``#(``/``;``) at the start of a
line; single-line compiler directives just before it (`` `define``, `` `timescale``, ...) are
kept, since the module may depend on them.

VerilogEval v2's spec-to-rtl prompt asks for the code between ``[BEGIN]`` and ``[DONE]``; its
``scripts/sv-generate`` reads the answer line by line: the code starts after the first line
beginning with ``[BEGIN]`` (text after the tag on that line counts) and ends at the first line
ending with ``[DONE]``; only that first block is used, and an answer that opens the block but
never closes it yields no code. :func:`extract_verilog` reads such answers the same way.
"""

from __future__ import annotations

import re

from rtlforge.core.errors import ExtractionError

_ANSWER = re.compile(r"<answer>(.*?)(?:</answer>|\Z)", re.S | re.I)
_THINK_END = re.compile(r"</think>", re.I)
#: Possessive, and no backtick in the info string (CommonMark): on a line that never ends,
#: a backtracking pattern rescanned it once per character (quadratic in a completion).
_FENCE = re.compile(r"```[ \t]*+([A-Za-z0-9_+-]*+)[^\n`]*+\n(.*?)(?:```|\Z)", re.S)
_HDL_LANGS = {"", "verilog", "systemverilog", "sv", "v"}
_COMMENT_OR_STRING = re.compile(r'//[^\n]*|/\*.*?(?:\*/|\Z)|"(?:\\.|[^"\\\n])*"', re.S)
# A declaration at the start of a line (after optional attributes), never a word in a sentence.
_HEADER = re.compile(
    r"^[ \t]*(?:\(\*[^\n]*?\*\)[ \t]*)?(?:module|macromodule)[ \t\r\n]+([A-Za-z_][\w$]*)"
    r"\s*(?:#|\(|;)", re.M)
_END = re.compile(r"\bendmodule\b")
_DIRECTIVE = re.compile(
    r"^[ \t]*`(?:define|undef|timescale|default_nettype|resetall|celldefine|endcelldefine)\b",
)


def _blank(text: str) -> str:
    """Comments and strings replaced by spaces (newlines kept) so offsets still line up."""
    return _COMMENT_OR_STRING.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def _directives_before(region: str, blanked: str, start: int, floor: int) -> str:
    """Directive lines (with ``\\`` continuations) directly above ``start``, down to ``floor``.

    Blank and comment-only lines in between are skipped; anything else ends the search.
    """
    lines = region[floor:start].split("\n")[:-1]  # the last piece is the header's own line
    plain = blanked[floor:start].split("\n")[:-1]
    keep = len(lines)
    i = len(lines) - 1
    while i >= 0:
        if not plain[i].strip():
            i -= 1
            continue
        top = i  # a directive may span several lines joined by trailing backslashes
        while top > 0 and lines[top - 1].rstrip().endswith("\\"):
            top -= 1
        if not _DIRECTIVE.match(lines[top]):
            break
        keep = top
        i = top - 1
    return "\n".join(line for line in lines[keep:] if line.strip())


def _modules(region: str) -> tuple[list[tuple[str, str]], bool]:
    """``(name, text)`` of every complete module in ``region``; True if one is cut off."""
    blanked = _blank(region)
    found: list[tuple[str, str]] = []
    pos = floor = 0
    truncated = False
    while True:
        header = _HEADER.search(blanked, pos)
        if header is None:
            break
        end = _END.search(blanked, header.end())
        if end is None:
            truncated = True
            break
        start = header.start()
        body = region[start:end.end()].strip("\n")
        prefix = _directives_before(region, blanked, start, floor)
        found.append((header.group(1), f"{prefix}\n{body}" if prefix else body))
        pos = floor = end.end()
    return found, truncated


def _join(modules: list[tuple[str, str]]) -> str:
    """All modules in order; a module defined twice (a draft, then a fix) keeps its last text."""
    last = {name: i for i, (name, _) in enumerate(modules)}
    kept = [text.strip() for i, (name, text) in enumerate(modules) if last[name] == i]
    return "\n\n".join(kept) + "\n"


_BEGIN, _DONE = "[BEGIN]", "[DONE]"


def _enclosed(text: str) -> tuple[bool, str | None]:
    """``(opened, body)`` of the first ``[BEGIN]``...``[DONE]`` block, read as sv-generate does.

    ``body`` is None when no block was opened, or when one was opened and never closed.
    """
    lines: list[str] = []
    opened = False
    for line in text.splitlines():
        if not opened:
            if line.lstrip().startswith(_BEGIN):
                opened = True
                if line.strip() != _BEGIN:
                    lines.append(line.lstrip().replace(_BEGIN, ""))
        elif line.strip() == _DONE:
            return True, "\n".join(lines)
        elif line.rstrip().endswith(_DONE):
            lines.append(line.rstrip().replace(_DONE, ""))
            return True, "\n".join(lines)
        else:
            lines.append(line)
    return opened, None


def _scopes(text: str) -> list[str]:
    """Where to look, best first: ``<answer>`` bodies, the text after ``</think>``, all of it."""
    answers = [m.group(1) for m in _ANSWER.finditer(text)]
    if answers:
        return [*answers, text]
    ends = list(_THINK_END.finditer(text))
    return [text[ends[-1].end():], text] if ends else [text]


def extract_verilog(text: str) -> str:
    """The Verilog a completion contains: every complete module, in order.

    An answer with a VerilogEval ``[BEGIN]``...``[DONE]`` block (after the last ``</think>``,
    if any) is read from that block only. Otherwise it looks inside ``<answer>`` tags first
    (else after the last ``</think>``), then in fenced blocks tagged as Verilog (or untagged),
    then in the raw text. Raises :class:`ExtractionError` when no complete module is found, so
    a truncated or prose-only answer is an explicit outcome, not an empty design.
    """
    if not isinstance(text, str):
        raise ExtractionError(f"completion must be text, not {type(text).__name__}")
    ends = list(_THINK_END.finditer(text))
    opened, block = _enclosed(text[ends[-1].end():] if ends else text)
    if opened and block is None:
        raise ExtractionError("the answer opens a [BEGIN] block but never closes it with [DONE] "
                              "(truncated?); VerilogEval takes no code from it")
    truncated = False
    for scope in [block] if block is not None else _scopes(text):
        fenced = [body for lang, body in _FENCE.findall(scope) if lang.lower() in _HDL_LANGS]
        for region in (*(["\n".join(fenced)] if fenced else []), scope):
            modules, cut = _modules(region)
            truncated = truncated or cut
            if modules:
                return _join(modules)
    if truncated:
        raise ExtractionError("the completion starts a module but never ends it (truncated?)")
    raise ExtractionError("no Verilog module found in the completion")
