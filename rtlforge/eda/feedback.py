"""Turn raw EDA tool output into structured :class:`Feedback` for refinement agents.

A refinement agent fixes a design far better from "undeclared_identifier at design.v:12, here are
lines 10-14, hint: declare it" than from a wall of tool log. Each ``parse_*`` function reads one
tool's message format (the regexes were written against the real output of Icarus Verilog 11,
Verilator 5 and Yosys 0.23 on the broken designs under ``tests/fixtures/broken/``) and classifies
every message into one of a fixed set of categories, so callers and reward functions can branch on
the category rather than on message text.

Tools run in a flat run directory, so a path in a message (``design.v``, ``./design.v`` or an
absolute path) is mapped back to a source file by its base name.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Literal

from rtlforge.core.models import Feedback

Severity = Literal["error", "warning", "info"]

#: category -> one-sentence fix hint shown next to the finding.
CATEGORY_HINTS: dict[str, str] = {
    "syntax": "Fix the Verilog syntax near the marked line (missing ';', 'end', 'endmodule' or a "
              "misspelled keyword are the usual causes).",
    "undeclared_identifier": "Declare the signal (wire/reg/logic) with the right width before use, "
                             "or fix the misspelled name.",
    "port_mismatch": "Make the instance's port names and port count match the module declaration "
                     "exactly.",
    "width_mismatch": "Make both sides the same width: size the declaration, or slice/extend the "
                      "operand explicitly.",
    "multiple_drivers": "Drive each signal from exactly one always block or continuous assign.",
    "latch": "Assign the signal on every path of the combinational block (add a default or an "
             "else branch), or make it a clocked register.",
    "comb_loop": "Break the combinational cycle: a signal must not depend on itself without a "
                 "register in between.",
    "missing_module": "Define the instantiated module, or use the module name the task asks for.",
    "unsupported": "Rewrite the construct in plain Verilog-2005 that the simulator supports.",
    "elaboration": "Fix the declaration or expression the elaborator rejected at the marked line.",
    "sim_mismatch": "The design compiles but gives wrong outputs; compare the failing cases "
                    "against the specification.",
    "timeout": "Make sure the simulation finishes: avoid infinite loops and zero-delay feedback.",
    "no_verdict": "The testbench printed no verdict; the design may stop the simulation early or "
                  "hang the testbench.",
    "output_flood": "Remove $display/$monitor calls from the design; it printed too much output.",
    "security": "Remove file, system and process access from the design; it is not allowed.",
    "lint": "Clean up the construct the linter flagged; it often hides a real bug.",
    "other": "Read the tool message and fix the reported problem.",
}

#: Longest message kept; tool messages can embed whole expressions or paths.
MAX_MESSAGE_CHARS = 500
#: At most this many findings per parse: an agent needs the first few, not a flood.
MAX_ITEMS = 50


def source_context(text: str, line: int, radius: int = 2) -> str:
    """Numbered source lines around ``line`` (1-based), the line itself marked with ``>``.

    Returns "" when ``line`` is outside the text, so callers can store ``None`` instead.
    """
    lines = text.splitlines()
    if not 1 <= line <= len(lines):
        return ""
    first, last = max(1, line - radius), min(len(lines), line + radius)
    width = len(str(last))
    return "\n".join(
        f"{'>' if n == line else ' '} {n:>{width}} | {lines[n - 1]}"
        for n in range(first, last + 1)
    )


def _basename(path: str) -> str:
    return path.replace("\\", "/").rsplit("/", 1)[-1]


def make_feedback(
    category: str,
    message: str,
    *,
    stage: str,
    files: Mapping[str, str],
    file: str | None = None,
    line: int | None = None,
    severity: Severity = "error",
) -> Feedback:
    """Build one finding: base-name the file, attach source context and the category hint."""
    name = _basename(file) if file else None
    if line is not None and line < 1:
        line = None  # Yosys reports "file:0:" when it has no real position
    context = None
    if name is not None and line is not None and name in files:
        context = source_context(files[name], line) or None
    message = message.strip()
    if len(message) > MAX_MESSAGE_CHARS:
        message = message[: MAX_MESSAGE_CHARS - 3] + "..."
    return Feedback(
        category=category, message=message, file=name, line=line, context=context,
        hint=CATEGORY_HINTS.get(category, CATEGORY_HINTS["other"]), stage=stage,
        severity=severity,
    )


# ---------------------------------------------------------------- classification by message text

#: Ordered: the first match wins. Shared by all three tools since their wording overlaps.
_MESSAGE_CATEGORIES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), category)
    for pattern, category in (
        (r"syntax error|invalid module item", "syntax"),
        (r"\bsorry\b|unsupported|not (?:currently )?supported|not implemented", "unsupported"),
        (r"unknown module type|cannot find file containing module|is not part of the design"
         r"|module .* not found", "missing_module"),
        (r"is not a port of|wrong number of ports|pin not found|missing pin"
         r"|has only \d+ ports|does not have a port named", "port_mismatch"),
        (r"unable to bind|can't find definition|implicit definition|implicitly declared"
         r"|is not declared|undeclared|can't resolve task name", "undeclared_identifier"),
        (r"multiple (?:conflicting )?drivers|unresolved wires|driver-driver conflict",
         "multiple_drivers"),
        (r"expects \d+ bits|padding \d+ high bits|resizing cell port|\bwidth\b", "width_mismatch"),
        (r"latch inferred|\blatch\b", "latch"),
        (r"logic loop|circular combinational|combinational loop", "comb_loop"),
    )
)


def _classify(message: str, default: str) -> str:
    for pattern, category in _MESSAGE_CATEGORIES:
        if pattern.search(message):
            return category
    return default


def _finish(items: Iterable[Feedback]) -> list[Feedback]:
    """Drop duplicates and the generic follow-up errors a specific finding already explains.

    Icarus reports an undeclared name twice ("Unable to bind" then "Unable to elaborate
    r-value") and Yosys repeats warnings in its summary; the agent needs each problem once.
    """
    seen: set[tuple[str, str | None, int | None, str]] = set()
    unique: list[Feedback] = []
    for fb in items:
        key = (fb.category, fb.file, fb.line, fb.message)
        if key not in seen:
            seen.add(key)
            unique.append(fb)
    specific = {(fb.file, fb.line) for fb in unique
                if fb.category not in ("elaboration", "other", "lint") and fb.line is not None}
    kept = [fb for fb in unique
            if not (fb.category == "elaboration" and (fb.file, fb.line) in specific)]
    return kept[:MAX_ITEMS]


# ---------------------------------------------------------------- Icarus Verilog

#: ``file:line: [error|warning|sorry|vvp.tgt sorry]: message`` and ``file:line: syntax error``.
_IVL_LOCATED = re.compile(
    r"^(?P<file>[^:\s][^:]*):(?P<line>\d+):\s*"
    r"(?:(?P<kind>error|warning|sorry|vvp\.tgt sorry|vvp\.tgt error)\s*:\s*)?(?P<msg>\S.*)$",
    re.IGNORECASE,
)
#: A note continuing the previous message: ``file:line:        : Padding 4 high bits``.
_IVL_NOTE = re.compile(r"^[^:\s][^:]*:\d+:\s+:\s*(?P<msg>.*)$")
#: Unlocated lines: ``sorry: ...``, ``error: ...``; vvp runtime ``WARNING: file:line: ...``.
_IVL_BARE = re.compile(
    r"^(?:(?P<kind>error|warning|sorry|internal error)\s*:\s*"
    r"(?:(?P<file>[^:\s]+):(?P<line>\d+):\s*)?)(?P<msg>.+)$",
    re.IGNORECASE,
)
#: Summaries and the "modules were missing" block repeat what the located lines said.
_IVL_NOISE = re.compile(
    r"^\s*(?:\d+ error\(s\)|elaboration failed|i give up|\*\*\*|\S+ referenced \d+ times"
    r"|.*\$finish called at|vcd info:)",
    re.IGNORECASE,
)


#: Icarus "sorry:" messages after which it still simulates what was written: a qualifier it
#: does not check (``unique``/``priority``) or an over-wide ``always_*`` sensitivity list. These
#: are warnings; every other "sorry:" means the simulated design differs from the source.
_BENIGN_SORRY = re.compile(
    r"qualities are ignored|is ignored|are ignored|all bits will be included", re.IGNORECASE)


def is_benign_sorry(message: str) -> bool:
    return bool(_BENIGN_SORRY.search(message))


def parse_iverilog(output: str, *, stage: str, files: Mapping[str, str]) -> list[Feedback]:
    """Findings from ``iverilog`` (and ``vvp``) output; ``sorry:`` lines become ``unsupported``.

    Icarus 11 can exit 0 after a ``sorry:`` (it then simulates something other than what was
    written), so those are errors even when the return code says otherwise.
    """
    items: list[Feedback] = []
    for raw in output.splitlines():
        text = raw.rstrip()
        if not text or _IVL_NOISE.match(text):
            continue
        note = _IVL_NOTE.match(text)
        if note and items:
            prev = items[-1]
            items[-1] = prev.model_copy(update={"message": f"{prev.message} {note['msg']}"[
                :MAX_MESSAGE_CHARS]})
            continue
        located = _IVL_LOCATED.match(text)
        bare = None if located else _IVL_BARE.match(text)
        match = located or bare
        if match is None:
            continue
        kind = (match["kind"] or "").lower()
        msg = match["msg"].strip()
        if "sorry" in kind:
            category = "unsupported"
            severity = "warning" if is_benign_sorry(msg) else "error"
        elif kind == "warning":
            category, severity = _classify(msg, "lint"), "warning"
        elif kind or "syntax error" in msg.lower():
            category, severity = _classify(msg, "elaboration"), "error"
        else:
            continue  # a located line with no tool keyword is program output, not a diagnostic
        line = int(match["line"]) if match["line"] else None
        items.append(make_feedback(category, msg, stage=stage, files=files, file=match["file"],
                                   line=line, severity=severity))
    return _finish(items)


# ---------------------------------------------------------------- Verilator

_VERILATOR_HEAD = re.compile(
    r"^%(?P<sev>Warning|Error)(?:-(?P<code>[A-Z0-9_]+))?:\s*"
    r"(?:(?P<file>[^\s:]+):(?P<line>\d+):(?:\d+:)?\s*)?(?P<msg>.*)$"
)
_VERILATOR_SUMMARY = re.compile(r"^Exiting due to|^Command Failed")

#: Verilator's own warning/error codes say what happened more reliably than the text.
_VERILATOR_CODES: dict[str, str] = {
    **dict.fromkeys(("WIDTH", "WIDTHTRUNC", "WIDTHEXPAND", "WIDTHXZEXPAND", "WIDTHCONCAT"),
                    "width_mismatch"),
    "MULTIDRIVEN": "multiple_drivers",
    "LATCH": "latch",
    **dict.fromkeys(("UNOPTFLAT", "UNOPT"), "comb_loop"),
    **dict.fromkeys(("PINNOTFOUND", "PINMISSING", "PINCONNECTEMPTY"), "port_mismatch"),
    "IMPLICIT": "undeclared_identifier",
    "UNSUPPORTED": "unsupported",
}


def parse_verilator(output: str, *, stage: str, files: Mapping[str, str]) -> list[Feedback]:
    """Findings from ``verilator`` output; ``%Warning-*`` lines become warnings."""
    items: list[Feedback] = []
    for raw in output.splitlines():
        match = _VERILATOR_HEAD.match(raw.strip())
        if match is None or _VERILATOR_SUMMARY.match(match["msg"]):
            continue
        warning = match["sev"] == "Warning"
        code = match["code"]
        default = "lint" if warning else "elaboration"
        category = _VERILATOR_CODES.get(code) if code else None
        if category is None:
            category = default if code else _classify(match["msg"], default)
        msg = f"{code}: {match['msg']}" if code else match["msg"]
        items.append(make_feedback(
            category, msg, stage=stage, files=files, file=match["file"],
            line=int(match["line"]) if match["line"] else None,
            severity="warning" if warning else "error",
        ))
    return _finish(items)


# ---------------------------------------------------------------- Yosys

_YOSYS_HEAD = re.compile(
    r"^(?:(?P<file>[^\s:]+):(?P<line>\d+):\s*)?(?P<sev>ERROR|Warning):\s*(?P<msg>.*)$"
)
#: proc_dlatch logs this as plain text, not as a warning.
_YOSYS_LATCH = re.compile(r"^Latch inferred for signal (?P<msg>.*)$")
#: Yosys names cells after their source: ``$and$design.v:3$1``, ``$proc$design.v:2$1``.
_YOSYS_SRC = re.compile(r"\$(?P<file>[^\s$:]+\.s?v[h]?):(?P<line>\d+)(?:\.\d+-\d+\.\d+)?\$")
_YOSYS_SUMMARY = re.compile(r"^Found (?:and reported )?\d+ problems|^Warnings: \d+ unique")
_YOSYS_NAME = re.compile(r"`\\?([A-Za-z_][\w$]*)'")


def _locate_word(files: Mapping[str, str], pattern: str) -> tuple[str, int] | None:
    """First (file, line) whose text matches ``pattern``; Yosys hierarchy errors carry none."""
    regex = re.compile(pattern)
    for name, text in files.items():
        for number, line in enumerate(text.splitlines(), 1):
            if regex.search(line):
                return name, number
    return None


def parse_yosys(output: str, *, stage: str, files: Mapping[str, str]) -> list[Feedback]:
    """Findings from a Yosys log: errors, warnings (with their indented details) and latches."""
    items: list[Feedback] = []
    lines = output.splitlines()
    for index, raw in enumerate(lines):
        text = raw.rstrip()
        latch = _YOSYS_LATCH.match(text)
        if latch:
            src = _YOSYS_SRC.search(text)
            items.append(make_feedback(
                "latch", text, stage=stage, files=files,
                file=src["file"] if src else None, line=int(src["line"]) if src else None,
                severity="warning"))
            continue
        match = _YOSYS_HEAD.match(text)
        if match is None or _YOSYS_SUMMARY.match(match["msg"]):
            continue
        details = []
        for follow in lines[index + 1:index + 9]:
            if not follow.startswith((" ", "\t")):
                break
            details.append(follow.strip())
        warning = match["sev"] == "Warning"
        msg = match["msg"]
        category = _classify(msg, "lint" if warning else "elaboration")
        file, line = match["file"], int(match["line"]) if match["line"] else None
        if file is None:
            src = _YOSYS_SRC.search(" ".join([msg, *details]))
            if src:
                file, line = src["file"], int(src["line"])
            elif category in ("missing_module", "port_mismatch"):
                names = _YOSYS_NAME.findall(msg)
                # missing module: the module name; port errors: the cell (instance) name.
                word = names[0] if category == "missing_module" and names else (
                    names[-1] if names else None)
                found = _locate_word(files, rf"\b{re.escape(word)}\b\s*[#(\w]") if word else None
                if found:
                    file, line = found
        if details:
            msg = f"{msg} ({'; '.join(details)})"
        items.append(make_feedback(category, msg, stage=stage, files=files, file=file, line=line,
                                   severity="warning" if warning else "error"))
    return _finish(items)
