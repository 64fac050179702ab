"""Retriever and guidance-detector plugins for the agents.

A retriever ranks the knowledge base's entries for a query (the refinement loop puts the top
hits in the prompt); a guidance detector adds design advice to specs it recognises before the
first attempt. Both kinds are declared by rtlforge's own ``knowledge`` and ``guidance`` plugins,
which must be loaded in the same host.
"""

from __future__ import annotations

from typing import ClassVar

from rtlforge import hookimpl
from rtlforge.agents.guidance.base import Guidance, GuidanceDetector
from rtlforge.agents.knowledge.base import Hit, Retriever
from rtlforge.agents.models import Focus
from rtlforge.core.hookspecs import Register
from rtlforge.core.models import Task


class KeywordOverlapRetriever(Retriever):
    """Scores an entry by the share of its keywords that occur in the query."""

    name: ClassVar[str] = "keyword-overlap"

    def rank(self, query: str, *, focus: Focus) -> list[Hit]:
        words = set(query.lower().split())
        hits = []
        for entry in self.entries:
            shared = sorted(k for k in entry.keywords if k.lower() in words)
            if shared:
                hits.append(Hit(entry=entry, score=len(shared) / len(entry.keywords),
                                why=tuple(f"keyword {k}" for k in shared)))
        return sorted(hits, key=lambda h: (-h.score, h.entry.id))


class PipelineDetector(GuidanceDetector):
    """Fires on specs that ask for a pipeline."""

    name: ClassVar[str] = "pipelined"
    kind = "family"
    priority: ClassVar[int] = 40

    def detect(self, task: Task, spec: str) -> Guidance | None:
        if "pipeline" not in spec.lower():
            return None
        return Guidance(detector=self.name, kind=self.kind, title="Pipeline",
                        advice="Carry a valid bit with every stage and reset only the valid "
                               "bits.", evidence=("pipeline",))


@hookimpl
def register_retrievers(register: Register) -> None:
    register(KeywordOverlapRetriever)


@hookimpl
def register_guidance_detectors(register: Register) -> None:
    register(PipelineDetector)
