"""An explore run's persistence, through the :class:`~rtlforge.core.interfaces.Archive` interface.

Everything lives in one archive (the run's ``archive.sqlite`` by default), as idempotent keyed
writes:

- one archive entry per candidate, whose ``record`` is an :class:`ExploreRecord`;
- archive metadata: ``explore/generations/<group>`` (a group's generations, stored as soon as
  the generator returns, so a restart never samples or pays for the same group twice),
  ``explore/group/<group>`` (the marker that a group's candidates are all stored: written in
  the same :meth:`Archive.batch` as the candidates), ``explore/config`` and
  ``explore/golden/<task>`` (the golden PPA, measured once per task).

The archive does the JSON (NaN/inf included) and the transactions; nothing here knows SQL.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rtlforge.core.interfaces import Archive, ArchiveEntry, Generation, GenerationRequest
from rtlforge.evaluation.evaluate import PPAMeasure
from rtlforge.explore.models import ExploreRecord

if TYPE_CHECKING:
    from rtlforge.core.plugins import PluginHost

__all__ = ["RUN_FILES", "ExploreStore", "group_key", "remove_run_files"]

#: Every file explore writes into a run directory (the archive with SQLite's side files, and
#: the report files): what ``--overwrite`` deletes, and nothing else.
RUN_FILES = ("archive.sqlite", "archive.sqlite-wal", "archive.sqlite-shm",
             "archive.sqlite-journal", "summary.json", "records.jsonl", "report.html",
             "candidates.jsonl")

_PREFIX = "explore/"
_GROUP = _PREFIX + "group/"
_GENERATIONS = _PREFIX + "generations/"
_GOLDEN = _PREFIX + "golden/"
_CONFIG = _PREFIX + "config"

Group = tuple[str, str, int, int]  # (method, task, trial, iteration)


def remove_run_files(run_dir: str | Path) -> list[Path]:
    """Delete the files explore wrote in ``run_dir`` (others stay); the ones deleted."""
    removed = []
    for name in RUN_FILES:
        path = Path(run_dir) / name
        if path.is_file():
            path.unlink()
            removed.append(path)
    return removed


def group_key(method: str, task: str, trial: int, iteration: int) -> str:
    """One group's key (JSON, so task ids containing ``/`` stay unambiguous)."""
    return json.dumps([method, task, trial, iteration])


class ExploreStore:
    """The candidates, generations and bookkeeping of one explore run, kept in ``archive``.

    The archive must keep metadata and group writes (:meth:`Archive.batch`): the ``sqlite``
    and ``memory`` archives do.
    """

    def __init__(self, archive: Archive) -> None:
        self.archive = archive

    @classmethod
    def open(cls, path: str | Path, host: PluginHost) -> ExploreStore:
        """The store in the SQLite file ``path``, with the ``sqlite`` archive of ``host``."""
        return cls(host.create("archive", "sqlite", path=Path(path)))

    def close(self) -> None:
        self.archive.close()

    def __enter__(self) -> ExploreStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---------------------------------------------------------------- run metadata

    def config(self) -> dict[str, Any] | None:
        return self.archive.get_meta(_CONFIG)

    def set_config(self, config: dict[str, Any]) -> None:
        self.archive.put_meta(_CONFIG, config)

    def is_empty(self) -> bool:
        """Nothing generated or committed yet (a fresh run, whatever its stored config)."""
        return len(self.archive) == 0 and not self.archive.meta(_GENERATIONS) \
            and not self.archive.meta(_GROUP)

    def golden(self, task_id: str) -> PPAMeasure | None:
        stored = self.archive.get_meta(_GOLDEN + task_id)
        return PPAMeasure.model_validate(stored) if stored is not None else None

    def set_golden(self, task_id: str, golden: PPAMeasure) -> None:
        self.archive.put_meta(_GOLDEN + task_id, golden.model_dump(mode="json"))

    # ---------------------------------------------------------------- generations

    def generations(self, key: str) -> list[Generation] | None:
        """The stored generations of group ``key``; None when it was never generated."""
        stored = self.archive.get_meta(_GENERATIONS + key)
        if stored is None:
            return None
        return [Generation.model_validate(g) for g in stored["generations"]]

    def put_generations(self, key: str, request: GenerationRequest,
                        generations: Sequence[Generation]) -> None:
        """Keep a group's generations; a group stored before keeps its first generations."""
        self.archive.put_meta(_GENERATIONS + key, {
            "request": request.model_dump(mode="json", exclude={"task"}),
            "generations": [g.model_dump(mode="json") for g in generations],
            "created": time.time(),
        }, overwrite=False)

    # ---------------------------------------------------------------- groups

    def commit_group(self, method: str, task: str, trial: int, iteration: int,
                     entries: Sequence[ArchiveEntry]) -> bool:
        """The group's marker and all its candidates, atomically; False if already there."""
        marker = {"method": method, "task": task, "trial": trial, "iteration": iteration,
                  "samples": len(entries), "created": time.time()}
        with self.archive.batch():
            if not self.archive.put_meta(_GROUP + group_key(method, task, trial, iteration),
                                         marker, overwrite=False):
                return False  # committed before: the batch ends with nothing written
            self.archive.add(entries)
        return True

    def completed_groups(self) -> set[Group]:
        return {(m["method"], m["task"], int(m["trial"]), int(m["iteration"]))
                for m in self.archive.meta(_GROUP).values()}

    def records(self) -> list[ExploreRecord]:
        """Every explore candidate record, in commit order."""
        return [ExploreRecord.model_validate(e.record) for e in self.archive.entries()
                if e.record.get("explore")]

    def __len__(self) -> int:
        return len(self.archive)
