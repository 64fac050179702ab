"""The knowledge base's data model, its leakage guard and the one retriever interface.

Entries are data (TOML under ``data/``), not code, so adding knowledge never means editing a
module. Reference implementations found by the indexer become entries too (``kind="reference"``
with an :class:`Origin`), so every retriever ranks both the same way.

The leakage guard is enforced by :meth:`Retriever.retrieve`, not by each strategy: a strategy
only ranks (:meth:`Retriever.rank`), and the base class drops what the guard blocks before it
takes the top k. A third-party retriever therefore cannot forget the guard.
"""

from __future__ import annotations

import hashlib
import re
import tomllib
from abc import abstractmethod
from collections.abc import Iterable, Sequence
from datetime import date
from importlib import resources
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from rtlforge.core.hookspecs import PluginKind
from rtlforge.core.interfaces import Plugin
from rtlforge.core.models import Task
from rtlforge.core.untrusted import load_toml
from rtlforge.eda.modules import scan_modules

__all__ = [
    "FOCI",
    "RETRIEVER_KIND",
    "EntryKind",
    "Focus",
    "Hit",
    "KnowledgeEntry",
    "LeakageGuard",
    "Origin",
    "Provenance",
    "Retriever",
    "builtin_entries",
    "content_digest",
    "load_entries",
]

#: What the caller is working on; entries say which foci they serve.
Focus = Literal["full", "minimal", "error", "synthesis", "architecture"]
FOCI: tuple[Focus, ...] = ("full", "minimal", "error", "synthesis", "architecture")
EntryKind = Literal["pattern", "architecture", "optimisation", "reference"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Provenance(_Frozen):
    """Who wrote an entry and when (every built-in says ``written for rtlforge``)."""

    source: str = Field(min_length=1)
    date: date


class Origin(_Frozen):
    """Where a reference implementation came from: what the leakage guard checks."""

    path: str  # absolute, resolved
    digest: str  # :func:`content_digest` of the file
    task_id: str | None = None  # the benchmark task the file belongs to, when known
    evaluation: bool = False  # marked as evaluation data: never retrieved


class KnowledgeEntry(_Frozen):
    id: str = Field(min_length=1)
    kind: EntryKind
    title: str = Field(min_length=1)
    description: str
    keywords: tuple[str, ...] = ()
    code_template: str | None = None
    focus: tuple[Focus, ...] = ()
    provenance: Provenance
    origin: Origin | None = None


class Hit(_Frozen):
    """One ranked result: the entry, its score and why it scored (human-readable)."""

    entry: KnowledgeEntry
    score: float
    why: tuple[str, ...] = ()


_SPACE = re.compile(r"\s+")


def content_digest(text: str) -> str:
    """A digest of Verilog text that survives copying a file under another name.

    The file name is not part of it, line endings and whitespace runs are collapsed, and every
    declared module's name is replaced by a placeholder (the RTLLM loader renames a golden's
    module to the testbench's top, so a renamed copy must hash the same). Names come from the
    bounded scanner (:mod:`rtlforge.eda.modules`), which never expands macros.
    """
    scan = scan_modules(text)
    pieces: list[str] = []
    last = 0
    for decl in scan.modules:
        if decl.start is None or decl.end is None:
            continue
        pieces.append(text[last:decl.start])
        pieces.append("\0module\0")
        last = decl.end
    pieces.append(text[last:])
    normal = _SPACE.sub(" ", "".join(pieces)).strip()
    return hashlib.sha256(normal.encode("utf-8", "surrogatepass")).hexdigest()


class LeakageGuard(_Frozen):
    """What must never be retrieved: the task being solved, its golden, evaluation data.

    An entry with an :class:`Origin` is blocked when it is marked as evaluation data, or its
    task id, its resolved path or its content digest is listed here. Entries without an origin
    (the hand-written knowledge) are never blocked.
    """

    task_ids: frozenset[str] = frozenset()
    paths: frozenset[str] = frozenset()
    digests: frozenset[str] = frozenset()
    block_evaluation: bool = True

    @classmethod
    def for_task(cls, task: Task, *, paths: Iterable[str | Path] = (),
                 block_evaluation: bool = True) -> LeakageGuard:
        """The guard for solving ``task``: its id, its golden files' digests, and ``paths``
        (the task's folder or golden file on disk, when the caller knows them)."""
        return cls(task_ids=frozenset({task.id}),
                   paths=frozenset(str(Path(p).resolve()) for p in paths),
                   digests=frozenset(content_digest(f.content) for f in task.golden),
                   block_evaluation=block_evaluation)

    def blocks(self, entry: KnowledgeEntry) -> str | None:
        """Why ``entry`` is blocked, or None when it may be retrieved."""
        origin = entry.origin
        if origin is None:
            return None
        if self.block_evaluation and origin.evaluation:
            return "evaluation data"
        if origin.task_id is not None and origin.task_id in self.task_ids:
            return f"task {origin.task_id}"
        path = Path(origin.path)
        for blocked in self.paths:
            if path == Path(blocked) or Path(blocked) in path.parents:
                return f"path {blocked}"
        if origin.digest in self.digests:
            return "content digest"
        return None


class Retriever(Plugin):
    """Ranks knowledge entries for a query; registered through ``register_retrievers``.

    Subclasses implement :meth:`rank` (every entry they consider worth returning, best first);
    callers use :meth:`retrieve`, which applies the leakage guard and takes the top ``k``.
    """

    name = "abstract"

    def __init__(self, entries: Sequence[KnowledgeEntry] | None = None) -> None:
        """Args:
            entries: the knowledge base to rank (default: the bundled entries).
        """
        self.entries: tuple[KnowledgeEntry, ...] = (
            tuple(entries) if entries is not None else builtin_entries())

    @abstractmethod
    def rank(self, query: str, *, focus: Focus) -> list[Hit]:
        """Scored hits, best first (ties in a stable, documented order)."""

    def retrieve(self, query: str, *, focus: Focus = "full", k: int = 5,
                 guard: LeakageGuard | None = None) -> list[Hit]:
        if k <= 0:
            return []
        """The top ``k`` hits the guard allows; without a guard, evaluation data is still blocked
        (the default :class:`LeakageGuard`)."""
        guard = guard if guard is not None else LeakageGuard()
        hits = [hit for hit in self.rank(query, focus=focus) if guard.blocks(hit.entry) is None]
        return hits[:k]


RETRIEVER_KIND = PluginKind("retriever", Retriever, "register_retrievers",
                            "ranks knowledge entries for a query")


def _entries_from_toml(text: str, label: str) -> list[KnowledgeEntry]:
    try:
        data = load_toml(text)
        return [KnowledgeEntry.model_validate(item) for item in data.get("entry", [])]
    except (tomllib.TOMLDecodeError, ValueError, TypeError, RecursionError) as exc:
        raise ValueError(f"{label}: not a valid knowledge file: {exc}") from exc


def load_entries(*paths: str | Path) -> tuple[KnowledgeEntry, ...]:
    """Entries from TOML files (each a list of ``[[entry]]`` tables); ids must be unique."""
    entries: list[KnowledgeEntry] = []
    for path in paths:
        p = Path(path)
        entries.extend(_entries_from_toml(p.read_text(encoding="utf-8"), str(p)))
    return _unique(entries)


def _unique(entries: list[KnowledgeEntry]) -> tuple[KnowledgeEntry, ...]:
    seen: set[str] = set()
    for entry in entries:
        if entry.id in seen:
            raise ValueError(f"duplicate knowledge entry id {entry.id!r}")
        seen.add(entry.id)
    return tuple(entries)


def builtin_entries() -> tuple[KnowledgeEntry, ...]:
    """The entries shipped in ``rtlforge/agents/knowledge/data/*.toml`` (read on each call)."""
    folder = resources.files("rtlforge.agents.knowledge") / "data"
    entries: list[KnowledgeEntry] = []
    for item in sorted(folder.iterdir(), key=lambda t: t.name):
        if item.name.endswith(".toml"):
            entries.extend(_entries_from_toml(item.read_text(encoding="utf-8"), item.name))
    return _unique(entries)
