"""Bounded work on untrusted text: JSON/TOML parsed under a depth and size bound, regexes run in
a linear-time engine.

Task files, samples files, LLM answers, caches and records come from people, downloads, models
and earlier runs. Parsed naively, a few kilobytes of ``[[[[...`` crash the host with a
``RecursionError`` (in the parser, or later in any recursive code that walks the result), and a
regex with nested quantifiers backtracks for hours on one line. Everything here turns such input
into a typed error with a clear message, in time linear in the text.

- :func:`load_json` / :func:`load_toml`: a size bound first, then a depth bound. JSON's depth is
  measured by a linear scan *before* the parser runs, so the parser never recurses deeply; TOML
  (small files) is parsed under a size bound and its result's depth measured without recursion.
  Their errors subclass the parser's own decode error, so a caller that already handles bad JSON
  or TOML handles these too.
- :func:`compile_regex`: RE2 (``google-re2``), which matches in time linear in the text and
  refuses what it cannot do so (backreferences, lookaround): the caller learns that when it
  compiles the pattern (a task loads), never in the middle of a validation.
"""

from __future__ import annotations

import json
import re
import tomllib
from typing import Any, Protocol

from rtlforge.core.errors import ConfigError, UnboundedRegexError

__all__ = ["MAX_CHARS", "MAX_DEPTH", "MAX_REGEX_CHARS", "BoundedRegex", "JSONLimitError",
           "TOMLLimitError", "UntrustedTextError", "compile_regex", "load_json", "load_toml",
           "nesting_depth"]

#: Deepest nesting of arrays/objects (tables) accepted. Real records nest a handful of levels;
#: Python's recursion limit (1000) is far away, so the parsers and every walk of the result stay
#: well inside it.
MAX_DEPTH = 64
#: Longest text parsed by default (characters); callers reading bigger documents say so.
MAX_CHARS = 64 * 1024 * 1024
#: Longest regex accepted: task patterns are one line of intent, not programs.
MAX_REGEX_CHARS = 4096
#: RE2's memory budget for one compiled pattern; a bigger automaton is refused, not built.
_REGEX_MEMORY = 8 * 1024 * 1024


class UntrustedTextError(ConfigError, ValueError):
    """Untrusted text is over a bound (too large, nested too deep). Callers turn it into their
    own typed error (a task format error, a malformed answer); uncaught, it is bad input (the
    CLI's usage exit) and never scores a design."""


class JSONLimitError(UntrustedTextError, json.JSONDecodeError):
    """JSON over a size or depth bound (a :class:`json.JSONDecodeError` too)."""


class TOMLLimitError(UntrustedTextError, tomllib.TOMLDecodeError):
    """TOML over a size or depth bound (a :class:`tomllib.TOMLDecodeError` too)."""


#: A JSON string (possessive, so an unterminated one ends the scan instead of being retried at
#: every later quote) or one bracket. Linear in the text.
_JSON_TOKENS = re.compile(r'"(?:[^"\\]++|\\.)*+"?|[\[\]{}]', re.DOTALL)


def load_json(text: str | bytes | bytearray, *, what: str = "JSON text",
              max_depth: int = MAX_DEPTH, max_chars: int = MAX_CHARS) -> Any:
    """``json.loads`` for untrusted text: at most ``max_chars`` long and ``max_depth`` deep.

    Raises :class:`JSONLimitError` over a bound and :class:`json.JSONDecodeError` for bad JSON
    (both ``ValueError``); bytes must be UTF-8 (``UnicodeDecodeError``, a ``ValueError``, else).
    """
    if isinstance(text, bytes | bytearray):
        if len(text) > max_chars:
            raise JSONLimitError(f"{what} is {len(text)} bytes, over the {max_chars}-byte limit",
                                 "", 0)
        text = bytes(text).decode("utf-8")
    if len(text) > max_chars:
        raise JSONLimitError(f"{what} is {len(text)} characters, over the {max_chars} limit",
                             "", 0)
    if text.count("[") + text.count("{") > max_depth:  # else it cannot be too deep
        depth = 0
        for match in _JSON_TOKENS.finditer(text):
            token = match.group()
            if token in "[{":
                depth += 1
                if depth > max_depth:
                    pos = match.start()
                    raise JSONLimitError(f"{what} is nested deeper than {max_depth} levels "
                                         "of arrays/objects", text, pos)
            elif token in "]}":
                depth -= 1
    return json.loads(text)


def nesting_depth(value: object, limit: int = MAX_DEPTH) -> int:
    """Depth of nested lists/tuples/dicts in ``value`` (a scalar is 0), counted without
    recursion; stops counting once past ``limit`` (the result is then ``limit + 1``)."""
    deepest = 0
    stack: list[tuple[object, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        depth += 1
        deepest = max(deepest, depth)
        if deepest > limit:
            return deepest
        stack.extend((child, depth) for child in children)
    return deepest


def load_toml(text: str, *, what: str = "TOML text", max_depth: int = MAX_DEPTH,
              max_chars: int = MAX_CHARS) -> dict[str, Any]:
    """``tomllib.loads`` for untrusted text: at most ``max_chars`` long and ``max_depth`` deep
    (inline arrays and tables, and dotted keys and headers, all count).

    Raises :class:`TOMLLimitError` over a bound and :class:`tomllib.TOMLDecodeError` for bad
    TOML (both ``ValueError``).
    """
    if len(text) > max_chars:
        raise TOMLLimitError(f"{what} is {len(text)} characters, over the {max_chars} limit")
    try:
        data = tomllib.loads(text)
    except RecursionError as exc:  # the pure-Python parser recursing on absurd nesting
        raise TOMLLimitError(f"{what} is nested deeper than {max_depth} levels of arrays/tables") \
            from exc
    if nesting_depth(data, max_depth + 1) > max_depth + 1:  # the document itself is a table
        raise TOMLLimitError(f"{what} is nested deeper than {max_depth} levels of arrays/tables")
    return data


class BoundedRegex(Protocol):
    """The part of a compiled pattern callers use (RE2's pattern objects provide it)."""

    @property
    def pattern(self) -> str: ...

    def search(self, text: str, /) -> Any: ...

    def fullmatch(self, text: str, /) -> Any: ...

    def findall(self, text: str, /) -> list[Any]: ...


def compile_regex(pattern: str, *, ignore_case: bool = False) -> BoundedRegex:
    """Compile an untrusted ``pattern`` for RE2: matching is linear in the text, whatever the
    pattern. Raises :class:`~rtlforge.core.errors.UnboundedRegexError` when RE2 cannot run it
    (backreferences, lookaround, possessive or atomic groups, ``\\Z``), when it is invalid, or
    over :data:`MAX_REGEX_CHARS` or RE2's memory budget; the message says what to change.
    """
    import re2  # a small C extension; imported here so `import rtlforge` stays light

    if len(pattern) > MAX_REGEX_CHARS:
        raise UnboundedRegexError(
            f"regex of {len(pattern)} characters is over the {MAX_REGEX_CHARS}-character limit")
    options = re2.Options()
    options.log_errors = False  # a silent library: the error is raised, not printed
    options.max_mem = _REGEX_MEMORY
    options.case_sensitive = not ignore_case
    try:
        compiled: BoundedRegex = re2.compile(pattern, options)
    except re2.error as exc:
        detail = exc.args[0].decode("utf-8", "replace") if exc.args and isinstance(
            exc.args[0], bytes) else str(exc)
        raise UnboundedRegexError(
            f"regex {pattern!r} is not a valid regex for the linear-time engine (RE2): {detail}. "
            "RE2 has no backreferences, lookahead/lookbehind, possessive or atomic groups; "
            "write \\z, not \\Z, for the end of the text") from exc
    return compiled
