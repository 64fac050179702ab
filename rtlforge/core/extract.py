"""Pull Verilog out of model text: answer tags, fenced blocks, prose around code, truncation."""

from __future__ import annotations

import re

from rtlforge.core.errors import ExtractionError

_ANSWER = re.compile(r"<answer>(.*?)(?:</answer>|\Z)", re.S | re.I)
_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)(?:```|\Z)", re.S)
_MODULE = re.compile(r"\b(?:module|macromodule)\b.*?\bendmodule\b", re.S)
_MODULE_START = re.compile(r"\b(?:module|macromodule)\b")
_HDL_LANGS = {"", "verilog", "systemverilog", "sv", "v"}


def extract_verilog(text: str) -> str:
    """The Verilog a completion contains: every complete module, in order.

    Looks inside ``<answer>`` tags first, then fenced blocks tagged as Verilog (or untagged),
    then the raw text. Raises :class:`ExtractionError` when no complete module is found, so a
    truncated or prose-only answer is an explicit outcome, not an empty design.
    """
    if not isinstance(text, str):
        raise ExtractionError(f"completion must be text, not {type(text).__name__}")
    scopes: list[str] = [m.group(1) for m in _ANSWER.finditer(text)] or [text]
    for scope in scopes:
        fenced = [body for lang, body in _FENCE.findall(scope) if lang.lower() in _HDL_LANGS]
        for region in ("\n".join(fenced), scope):
            modules = _MODULE.findall(region)
            if modules:
                return "\n\n".join(m.strip() for m in modules) + "\n"
    if _MODULE_START.search(text):
        raise ExtractionError("the completion starts a module but never ends it (truncated?)")
    raise ExtractionError("no Verilog module found in the completion")
