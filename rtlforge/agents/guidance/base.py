"""The spec-guidance registry's data model and its one extension point, the detector.

A detector looks at a task's spec (and its port names) and, when the spec describes what it
knows about, returns a short piece of design advice (:class:`Guidance`). The built-in detectors
are data (``data/detectors.toml``: regex clauses and the advice, written for rtlforge), turned
into one :class:`RuleDetector` class each, so every built-in can be selected, excluded or
overridden by name like a third party's detector. Third parties register
:class:`GuidanceDetector` subclasses through ``register_guidance_detectors`` (kind
``guidance_detector``).

Detectors see the spec *without* any guidance block (:func:`strip_guidance`), so the advice
never triggers a detector and enriching twice changes nothing.
"""

from __future__ import annotations

import re
import tomllib
from abc import abstractmethod
from collections.abc import Sequence
from datetime import date
from importlib import resources
from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from rtlforge.core.errors import UnboundedRegexError
from rtlforge.core.hookspecs import PluginKind
from rtlforge.core.interfaces import Plugin
from rtlforge.core.models import Task
from rtlforge.core.untrusted import BoundedRegex, compile_regex, load_toml

__all__ = [
    "DETECTOR_KIND",
    "GUIDANCE_MARKER",
    "Clause",
    "DetectorKind",
    "DetectorRule",
    "Guidance",
    "GuidanceDetector",
    "RuleDetector",
    "builtin_detectors",
    "builtin_rules",
    "load_rules",
    "strip_guidance",
]

DetectorKind = Literal["conjunction", "family"]
#: The heading that opens the guidance block appended to a spec (and how it is found again).
GUIDANCE_MARKER = "## Design guidance (rtlforge)"
#: Detectors read at most this much of a spec (bounded work on untrusted text).
MAX_SPEC_CHARS = 100_000


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Guidance(_Frozen):
    """What a detector contributes: its advice and the text that made it fire."""

    detector: str
    kind: DetectorKind
    title: str
    advice: str
    evidence: tuple[str, ...] = ()  # the matched phrases or port names, for the trace


def strip_guidance(spec: str) -> str:
    """``spec`` without the guidance block a previous enrichment appended (unchanged if none)."""
    at = spec.find("\n" + GUIDANCE_MARKER)
    if spec.startswith(GUIDANCE_MARKER):
        at = 0
    return spec if at < 0 else spec[:at].rstrip()


class GuidanceDetector(Plugin):
    """Fires on specs that describe one thing it has advice for.

    ``priority`` orders the advice (lower first; ties by name); ``kind`` says whether it is a
    semantic conjunction (two or more properties together, e.g. a synchronous *and* active-low
    reset) or a named IP family (FIFO, UART, ...); ``supersedes`` names detectors whose advice
    this one replaces when both fire (a clock divider is not an arithmetic divider).
    """

    name: ClassVar[str] = "abstract"
    kind: ClassVar[DetectorKind] = "family"
    priority: ClassVar[int] = 100
    title: ClassVar[str] = ""
    supersedes: ClassVar[tuple[str, ...]] = ()

    @abstractmethod
    def detect(self, task: Task, spec: str) -> Guidance | None:
        """The advice for ``task`` when this detector fires, else None. ``spec`` is the task's
        spec with any earlier guidance removed (detectors must read it, not ``task.spec``)."""


DETECTOR_KIND = PluginKind("guidance_detector", GuidanceDetector, "register_guidance_detectors",
                           "adds design advice to specs that describe what it knows about")


# ------------------------------------------------------------------------------ rules as data


def _bounded(pattern: str) -> BoundedRegex:
    """A rule's pattern in RE2, case-insensitive: rule files may come from users and run on
    every task's spec, so matching must stay linear in the spec whatever the pattern
    (:class:`~rtlforge.core.errors.UnboundedRegexError`, a ValueError, when RE2 refuses it)."""
    try:
        return compile_regex(pattern, ignore_case=True)
    except UnboundedRegexError as exc:
        raise UnboundedRegexError(f"bad regex in a detector rule: {exc}") from exc


class Clause(_Frozen):
    """Holds when any ``spec`` regex is found in the spec or any ``ports`` regex matches a
    port name in full (both case-insensitive)."""

    spec: tuple[str, ...] = ()
    ports: tuple[str, ...] = ()

    @model_validator(mode="after")
    def _patterns(self) -> Clause:
        if not self.spec and not self.ports:
            raise ValueError("a clause needs at least one 'spec' or 'ports' pattern")
        for pattern in (*self.spec, *self.ports):
            _bounded(pattern)
        return self


class DetectorProvenance(_Frozen):
    source: str = Field(min_length=1)
    date: date


class DetectorRule(_Frozen):
    """One ``[[detector]]`` table of a detectors file."""

    id: str = Field(min_length=1, pattern=r"^[a-z0-9][a-z0-9_-]*$")
    kind: DetectorKind
    priority: int
    title: str = Field(min_length=1)
    all: tuple[Clause, ...] = Field(min_length=1)
    none: tuple[str, ...] = ()  # spec regexes that veto the detector
    supersedes: tuple[str, ...] = ()
    guidance: str = Field(min_length=1)
    provenance: DetectorProvenance

    @model_validator(mode="after")
    def _conjunctions_conjoin(self) -> DetectorRule:
        for pattern in self.none:
            _bounded(pattern)
        if self.kind == "conjunction" and len(self.all) < 2:
            raise ValueError(f"detector {self.id!r}: a conjunction needs two or more clauses")
        return self


class RuleDetector(GuidanceDetector):
    """A detector defined by a :class:`DetectorRule`; :meth:`for_rule` makes one class per rule
    (so each registers under its own name)."""

    rule: ClassVar[DetectorRule]

    def __init__(self) -> None:
        self._clauses = [([_bounded(p) for p in c.spec], [_bounded(p) for p in c.ports])
                         for c in self.rule.all]
        self._vetoes = [_bounded(p) for p in self.rule.none]

    @classmethod
    def for_rule(cls, rule: DetectorRule) -> type[RuleDetector]:
        attrs = {"name": rule.id, "kind": rule.kind, "priority": rule.priority,
                 "title": rule.title, "supersedes": rule.supersedes, "rule": rule,
                 "__doc__": f"Built-in guidance detector {rule.id!r}: {rule.title}."}
        class_name = "Rule_" + re.sub(r"\W", "_", rule.id)
        return type(class_name, (cls,), attrs)

    def detect(self, task: Task, spec: str) -> Guidance | None:
        text = spec[:MAX_SPEC_CHARS]
        if any(veto.search(text) for veto in self._vetoes):
            return None
        ports = [p.name for p in task.ports]
        evidence: list[str] = []
        for spec_patterns, port_patterns in self._clauses:
            found = _first_match(text, spec_patterns, ports, port_patterns)
            if found is None:
                return None
            evidence.append(found)
        return Guidance(detector=self.name, kind=self.kind, title=self.title,
                        advice=self.rule.guidance.strip(), evidence=tuple(evidence))


def _first_match(text: str, spec_patterns: Sequence[BoundedRegex], ports: Sequence[str],
                 port_patterns: Sequence[BoundedRegex]) -> str | None:
    for pattern in spec_patterns:
        match = pattern.search(text)
        if match:
            return " ".join(match.group().split())
    for pattern in port_patterns:
        for port in ports:
            if pattern.fullmatch(port):
                return f"port {port}"
    return None


def _rules_from_toml(text: str, label: str) -> list[DetectorRule]:
    try:
        data = load_toml(text, what=label)
        return [DetectorRule.model_validate(item) for item in data.get("detector", [])]
    except (tomllib.TOMLDecodeError, ValueError, TypeError, RecursionError) as exc:
        raise ValueError(f"{label}: not a valid detectors file: {exc}") from exc


def load_rules(text: str, *, label: str = "<string>") -> tuple[DetectorRule, ...]:
    """Rules from the text of a detectors file (``[[detector]]`` tables); ids must be unique."""
    rules = _rules_from_toml(text, label)
    seen: set[str] = set()
    for rule in rules:
        if rule.id in seen:
            raise ValueError(f"{label}: duplicate detector id {rule.id!r}")
        seen.add(rule.id)
    return tuple(rules)


def builtin_rules() -> tuple[DetectorRule, ...]:
    """The rules shipped in ``rtlforge/agents/guidance/data/detectors.toml`` (read each call)."""
    item = resources.files("rtlforge.agents.guidance") / "data" / "detectors.toml"
    return load_rules(item.read_text(encoding="utf-8"), label="detectors.toml")


def builtin_detectors() -> tuple[type[RuleDetector], ...]:
    """One detector class per built-in rule, in file order."""
    return tuple(RuleDetector.for_rule(rule) for rule in builtin_rules())
