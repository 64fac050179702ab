"""Prompt templates as data: ``generation/templates/*.toml`` rendered with a whitelist formatter.

Templates live in TOML files so prompts can be reviewed, diffed and swapped without touching
code. Rendering is deliberately weaker than :meth:`str.format`: a template may only name fields
from a fixed whitelist (``{spec}``, ``{history}``, ...), with no attribute access, indexing,
conversion or format spec, and every field is checked when the template is *loaded*, so a typo
fails before any model is called. Values are substituted in a single pass and never re-parsed,
so untrusted text (a spec, a generated circuit, a tool message) containing ``{history}`` or
``{0.__class__}`` is printed literally, not expanded.
"""

from __future__ import annotations

import string
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from rtlforge.core.errors import ConfigError
from rtlforge.core.interfaces import GenerationRequest
from rtlforge.core.models import HistoryEntry, Task
from rtlforge.core.untrusted import load_toml

__all__ = [
    "HistoryEntry",
    "PromptTemplate",
    "TemplateError",
    "available_templates",
    "load_template",
    "render",
]

#: Fields each part of a template may use.
PROMPT_FIELDS = frozenset({"spec", "task_id", "top", "iteration", "iterations", "history"})
ITEM_FIELDS = frozenset({"index", "iteration", "source", "ppa"})
PPA_FIELDS = frozenset({"power", "delay", "area", "cells"})
NO_PPA_FIELDS = frozenset({"verdict", "message"})
_KEYS = frozenset({"name", "description", "system", "user", "history"})
_HISTORY_KEYS = frozenset({"empty", "separator", "item", "ppa", "no_ppa"})


class TemplateError(ConfigError, ValueError):
    """A template file is malformed or names a field outside its whitelist."""


def _check(text: str, allowed: frozenset[str], where: str) -> None:
    """Refuse anything but plain whitelisted ``{name}`` fields (checked once, at load time)."""
    try:
        parsed = list(string.Formatter().parse(text))
    except ValueError as exc:  # unbalanced braces
        raise TemplateError(f"{where}: {exc}") from exc
    for _, field, spec, conversion in parsed:
        if field is None:
            continue
        if field not in allowed or spec or conversion:
            shown = "{" + field + (f"!{conversion}" if conversion else "") + (
                f":{spec}" if spec else "") + "}"
            raise TemplateError(f"{where}: field {shown} is not allowed; use one of "
                                f"{', '.join('{' + f + '}' for f in sorted(allowed))} "
                                "(write {{ and }} for literal braces)")


def render(text: str, values: Mapping[str, object], allowed: frozenset[str]) -> str:
    """Substitute whitelisted fields in one pass; values are inserted verbatim, never parsed."""
    _check(text, allowed, "template")
    out: list[str] = []
    for literal, field, _, _ in string.Formatter().parse(text):
        out.append(literal)
        if field is not None:
            out.append(str(values[field]))
    return "".join(out)


def _num(value: float | None) -> str:
    """Four significant digits: enough to rank designs, short enough for a long history."""
    return "n/a" if value is None else f"{value:.4g}"


@dataclass(frozen=True)
class PromptTemplate:
    """A system prompt, a user prompt and how to render the circuit history."""

    name: str
    user: str
    system: str | None = None
    description: str = ""
    history_empty: str = "No previous circuit."
    history_separator: str = "\n\n"
    history_item: str = ""
    history_ppa: str = ""
    history_no_ppa: str = ""

    def __post_init__(self) -> None:
        where = f"template {self.name!r}"
        _check(self.user, PROMPT_FIELDS, f"{where}: user")
        if self.system is not None:
            _check(self.system, PROMPT_FIELDS, f"{where}: system")
        _check(self.history_empty, frozenset(), f"{where}: history.empty")
        _check(self.history_separator, frozenset(), f"{where}: history.separator")
        _check(self.history_item, ITEM_FIELDS, f"{where}: history.item")
        _check(self.history_ppa, PPA_FIELDS, f"{where}: history.ppa")
        _check(self.history_no_ppa, NO_PPA_FIELDS, f"{where}: history.no_ppa")

    @property
    def uses_history(self) -> bool:
        """Whether the prompt shows earlier circuits (else iterations are independent)."""
        fields = {f for part in (self.user, self.system or "")
                  for _, f, _, _ in string.Formatter().parse(part)}
        return "history" in fields

    @classmethod
    def from_toml(cls, text: str, *, origin: str = "<string>") -> PromptTemplate:
        try:
            raw = load_toml(text)
        except tomllib.TOMLDecodeError as exc:
            raise TemplateError(f"{origin}: not valid TOML: {exc}") from exc
        unknown = sorted(set(raw) - _KEYS)
        hist = raw.get("history", {})
        if unknown or not isinstance(hist, dict) or set(hist) - _HISTORY_KEYS:
            raise TemplateError(f"{origin}: unknown keys; a template has {sorted(_KEYS)} and "
                                f"[history] {sorted(_HISTORY_KEYS)}")
        values = {**{k: v for k, v in raw.items() if k != "history"},
                  **{f"history_{k}": v for k, v in hist.items()}}
        if not isinstance(values.get("name"), str) or not isinstance(values.get("user"), str):
            raise TemplateError(f"{origin}: 'name' and 'user' are required strings")
        bad = sorted(k for k, v in values.items() if not isinstance(v, str))
        if bad:
            raise TemplateError(f"{origin}: {bad} must be strings")
        return cls(**values)

    # ------------------------------------------------------------------ rendering

    def render_history(self, history: Sequence[HistoryEntry]) -> str:
        """``history.empty`` for no circuits, else one ``history.item`` per circuit."""
        if not history:
            return self.history_empty
        items = []
        for index, entry in enumerate(history, start=1):
            if entry.ppa is not None and entry.has_ppa:
                ppa = render(self.history_ppa, {
                    "power": _num(entry.ppa.power_mw), "delay": _num(entry.ppa.delay_ns),
                    "area": _num(entry.ppa.area_um2),
                    "cells": "n/a" if entry.ppa.cells is None else entry.ppa.cells,
                }, PPA_FIELDS)
            else:
                message = f": {entry.message}" if entry.message else ""
                ppa = render(self.history_no_ppa, {"verdict": entry.verdict, "message": message},
                             NO_PPA_FIELDS)
            items.append(render(self.history_item, {
                "index": index, "iteration": index if entry.iteration is None else entry.iteration,
                "source": (entry.source or "").strip(), "ppa": ppa,
            }, ITEM_FIELDS))
        return self.history_separator.join(items)

    def fields(self, task: Task, history: Sequence[HistoryEntry], *, iteration: int = 1,
               iterations: int = 1) -> dict[str, Any]:
        return {"spec": task.spec.strip(), "task_id": task.id, "top": task.top,
                "iteration": iteration, "iterations": iterations,
                "history": self.render_history(history)}

    def request(self, task: Task, history: Sequence[HistoryEntry] = (), *, iteration: int = 1,
                iterations: int = 1, request_id: str | None = None,
                metadata: Mapping[str, Any] | None = None) -> GenerationRequest:
        """The generation request for ``task`` at ``iteration`` (1-based) given the earlier
        circuits; the request's own ``iteration`` field is 0-based, as generators expect."""
        values = self.fields(task, history, iteration=iteration, iterations=iterations)
        system = render(self.system, values, PROMPT_FIELDS) if self.system else None
        return GenerationRequest(prompt=render(self.user, values, PROMPT_FIELDS), system=system,
                                 task=task, request_id=request_id, iteration=iteration - 1,
                                 metadata=dict(metadata or {}))


def available_templates() -> list[str]:
    """Names of the bundled templates (``rtlforge/generation/templates/*.toml``)."""
    root = resources.files("rtlforge.generation") / "templates"
    return sorted(p.name[:-5] for p in root.iterdir() if p.name.endswith(".toml"))


def load_template(name_or_path: str | Path | PromptTemplate) -> PromptTemplate:
    """A bundled template by name (``"pareto"``, ``"spec"``) or a ``.toml`` file by path."""
    if isinstance(name_or_path, PromptTemplate):
        return name_or_path
    text_name = str(name_or_path)
    if text_name in available_templates():
        res = resources.files("rtlforge.generation") / "templates" / f"{text_name}.toml"
        return PromptTemplate.from_toml(res.read_text(encoding="utf-8"), origin=text_name)
    path = Path(name_or_path)
    if path.suffix == ".toml" and path.is_file():
        return PromptTemplate.from_toml(path.read_text(encoding="utf-8"), origin=str(path))
    raise TemplateError(f"no template {text_name!r}: not a bundled template "
                        f"({', '.join(available_templates())}) nor a .toml file")
