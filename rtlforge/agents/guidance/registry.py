"""Spec enrichment: run the registered detectors in priority order and append their advice.

:func:`enrich` is the one entry point. Every generation path calls it once, at the top, with the
same host and configuration, so the CLI, the Python API and the benchmark runner prompt with the
same enriched spec. The orchestrator takes it as a seam (:func:`guidance_seam`).

Rules, in order:

1. The spec is first stripped of any guidance block (:func:`~.base.strip_guidance`); detectors
   read only the original text. Enriching an enriched spec therefore returns it unchanged.
2. The configuration selects detectors: by kind, by name (``detectors``), minus ``exclude``.
3. Every selected detector is asked; among those that fire, a detector named in another's
   ``supersedes`` is dropped; the rest are ordered by (priority, name), advice identical to an
   earlier one is kept once, and ``max_items`` cuts the list.
4. With ``retrieval_k`` > 0 the top entries of a retriever (query: the stripped spec; the
   task's leakage guard applied) are appended too, with their code templates when
   ``templates`` is set.
5. Nothing fired and nothing retrieved: the spec is returned as it came (minus an old block).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from rtlforge.agents.guidance.base import (
    DETECTOR_KIND,
    GUIDANCE_MARKER,
    DetectorKind,
    Guidance,
    GuidanceDetector,
    strip_guidance,
)
from rtlforge.agents.knowledge.base import Hit, LeakageGuard, Retriever
from rtlforge.core.errors import ConfigError, PluginError
from rtlforge.core.models import Task

if TYPE_CHECKING:
    from rtlforge.agents.guidance.gate import GuidanceGate
    from rtlforge.core.plugins import PluginHost

__all__ = [
    "CONFIGS",
    "DEFAULT_CONFIG",
    "Enrichment",
    "GuidanceConfig",
    "config_named",
    "detectors_for",
    "enrich",
    "guidance_seam",
    "render",
]

_KNOWLEDGE_HEADING = "Related design knowledge:"
_MAX_QUERY_CHARS = 4000


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class GuidanceConfig(_Frozen):
    """Which guidance a spec gets. The six presets in :data:`CONFIGS` are what the gate picks
    among; any other combination can be passed directly."""

    name: str = "custom"
    kinds: frozenset[DetectorKind] = frozenset({"conjunction", "family"})
    detectors: tuple[str, ...] | None = None  # only these names; None: every registered one
    exclude: tuple[str, ...] = ()
    max_items: int | None = Field(None, ge=0)
    retrieval_k: int = Field(0, ge=0, le=20)
    retriever: str = "keyword"
    templates: bool = False  # include retrieved entries' code templates


#: The gate's six configurations, cheapest first (the gate breaks exact ties towards the first).
CONFIGS: tuple[GuidanceConfig, ...] = (
    GuidanceConfig(name="none", kinds=frozenset()),
    GuidanceConfig(name="conjunctions", kinds=frozenset({"conjunction"})),
    GuidanceConfig(name="families", kinds=frozenset({"family"})),
    GuidanceConfig(name="detectors"),
    GuidanceConfig(name="detectors+knowledge", retrieval_k=3),
    GuidanceConfig(name="full", retrieval_k=3, templates=True),
)
#: Used when no configuration is given and no trained gate is: every detector, no retrieval.
DEFAULT_CONFIG = "detectors"


def config_named(name: str) -> GuidanceConfig:
    for config in CONFIGS:
        if config.name == name:
            return config
    raise ConfigError(f"no guidance configuration {name!r}; one of "
                      f"{[c.name for c in CONFIGS]}")


class Enrichment(_Frozen):
    """The enriched spec and what went into it."""

    spec: str
    config: str
    applied: tuple[str, ...] = ()  # detectors whose advice was appended, in order
    knowledge: tuple[str, ...] = ()  # knowledge entry ids appended, in order
    evidence: dict[str, tuple[str, ...]] = Field(default_factory=dict)  # detector -> matches

    def names(self) -> tuple[str, ...]:
        """Detectors, then ``knowledge:<id>`` for each entry: what the seam reports."""
        return self.applied + tuple(f"knowledge:{entry}" for entry in self.knowledge)


def detectors_for(host: PluginHost, config: GuidanceConfig) -> list[GuidanceDetector]:
    """The detectors ``config`` selects from ``host``, built, in (priority, name) order."""
    if DETECTOR_KIND.name not in {kind.name for kind in host.kinds()}:
        raise PluginError("no guidance detectors: the 'guidance' plugin "
                          "(rtlforge.agents.guidance.plugin) is not loaded in this host")
    names = host.names(DETECTOR_KIND.name)
    if config.detectors is not None:
        unknown = sorted(set(config.detectors) - set(names))
        if unknown:
            raise PluginError(f"unknown guidance detector(s) {unknown}; available: {names}")
        names = list(dict.fromkeys(config.detectors))
    built = [host.create(DETECTOR_KIND.name, name) for name in names
             if name not in config.exclude]
    selected = [d for d in built if d.kind in config.kinds]
    return sorted(selected, key=lambda d: (d.priority, d.name))


def _fired(detectors: Sequence[GuidanceDetector], task: Task, spec: str,
           max_items: int | None) -> list[Guidance]:
    found = [(d, g) for d in detectors if (g := d.detect(task, spec)) is not None]
    superseded = {name for d, _ in found for name in d.supersedes}
    kept: list[Guidance] = []
    seen_advice: set[str] = set()
    for detector, guidance in found:
        if detector.name in superseded or guidance.advice in seen_advice:
            continue
        seen_advice.add(guidance.advice)
        kept.append(guidance)
    return kept if max_items is None else kept[:max_items]


def render(base: str, guidance: Sequence[Guidance], hits: Sequence[Hit], *,
           templates: bool) -> str:
    """``base`` with the guidance block appended (``base`` itself when there is nothing)."""
    if not guidance and not hits:
        return base
    lines = [GUIDANCE_MARKER]
    lines += [f"- {g.title}: {g.advice}" for g in guidance]
    if hits:
        lines.append(_KNOWLEDGE_HEADING)
        for hit in hits:
            entry = hit.entry
            lines.append(f"- {entry.title}: {' '.join(entry.description.split())}")
            if templates and entry.code_template:
                lines += ["```verilog", entry.code_template.strip(), "```"]
    return base.rstrip() + "\n\n" + "\n".join(lines)


def enrich(task: Task, *, host: PluginHost, config: GuidanceConfig | str | None = None,
           gate: GuidanceGate | None = None, retriever: Retriever | None = None) -> Enrichment:
    """The task's spec with the advice of every detector that fires (see the module doc).

    ``config``: a :class:`GuidanceConfig`, a preset's name, or None for the ``gate``'s pick
    (when a trained gate is given) or :data:`DEFAULT_CONFIG`. ``retriever`` overrides the one
    the configuration names (built from ``host`` when retrieval is on).
    """
    if config is None:
        config = gate.choose(task).config if gate is not None else DEFAULT_CONFIG
    if isinstance(config, str):
        config = config_named(config)
    base = strip_guidance(task.spec)
    guidance = (_fired(detectors_for(host, config), task, base, config.max_items)
                if config.kinds else [])
    hits: list[Hit] = []
    if config.retrieval_k > 0:
        if retriever is None:
            retriever = host.create("retriever", config.retriever)
        hits = retriever.retrieve(base[:_MAX_QUERY_CHARS], focus="full", k=config.retrieval_k,
                                  guard=LeakageGuard.for_task(task))
    return Enrichment(spec=render(base, guidance, hits, templates=config.templates),
                      config=config.name, applied=tuple(g.detector for g in guidance),
                      knowledge=tuple(h.entry.id for h in hits),
                      evidence={g.detector: g.evidence for g in guidance})


def guidance_seam(host: PluginHost, config: GuidanceConfig | str | None = None, *,
                  gate: GuidanceGate | None = None
                  ) -> Callable[[Task], tuple[str, Sequence[str]]]:
    """The orchestrator's ``guidance`` seam: ``task -> (enriched spec, applied names)``.

    Retrievers are built once per seam (not per task); the names are
    :meth:`Enrichment.names` (detectors, then ``knowledge:<id>``).
    """
    retrievers: dict[str, Retriever] = {}

    def guidance(task: Task) -> tuple[str, Sequence[str]]:
        chosen: Any = config
        if chosen is None:
            chosen = gate.choose(task).config if gate is not None else DEFAULT_CONFIG
        if isinstance(chosen, str):
            chosen = config_named(chosen)
        retriever = None
        if chosen.retrieval_k > 0:
            if chosen.retriever not in retrievers:
                retrievers[chosen.retriever] = host.create("retriever", chosen.retriever)
            retriever = retrievers[chosen.retriever]
        result = enrich(task, host=host, config=chosen, retriever=retriever)
        return result.spec, result.names()

    return guidance
