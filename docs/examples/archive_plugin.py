"""An archive plugin: evaluated candidates in one append-only JSON Lines file.

An archive keeps every evaluated candidate of a run and answers which of a task's candidates
are on its Pareto front (objectives are maximised). Exploration writes through this interface
only, so any store that keeps the contract works: writes are durable when ``add`` returns.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import ClassVar

from rtlforge import hookimpl
from rtlforge.core.hookspecs import Register
from rtlforge.core.interfaces import Archive, ArchiveEntry
from rtlforge.pareto.hypervolume import dominates


class JsonlArchive(Archive):
    """One entry per line; a batch of entries is appended with one write and an fsync."""

    name: ClassVar[str] = "jsonl"

    def __init__(self, path: str | Path) -> None:
        """Args:
            path: the JSON Lines file (created when missing; earlier entries are kept).
        """
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.touch()

    def add(self, entries: Iterable[ArchiveEntry]) -> None:
        text = "".join(entry.model_dump_json() + "\n" for entry in entries)
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())

    def entries(self, task_id: str | None = None) -> Iterator[ArchiveEntry]:
        with self.path.open(encoding="utf-8") as fh:
            for line in fh:
                if not line.endswith("\n"):
                    break  # a write cut short by a crash: not part of the archive
                entry = ArchiveEntry.model_validate_json(line)
                if task_id is None or entry.task_id == task_id:
                    yield entry

    def front(self, task_id: str) -> list[ArchiveEntry]:
        scored = [e for e in self.entries(task_id) if e.objectives is not None]
        return [e for e in scored
                if not any(dominates(other.objectives, e.objectives) for other in scored)]


@hookimpl
def register_archives(register: Register) -> None:
    register(JsonlArchive)
