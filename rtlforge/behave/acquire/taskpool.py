"""The cumulative task pool on disk: admitted tasks in the BEHAVE task format, with B1 as B*.

Layout (everything a later round, the RL schedule or a person needs, nothing in memory only)::

    POOL/
      tasks/<task id>/behave.toml, spec.md, golden.py, provenance.json
      acquisition.jsonl     every admission, rejection, exclusion of every round
      experience.jsonl      notes the Analyst reads in later rounds
      schedule.json         the RL schedule's state (admitted tasks join it unseen)
      state.json            rounds completed
      rounds/round-NNN/     that round's records.jsonl and report.html

A task directory appears whole or not at all (written beside, then renamed), so a killed round
leaves no half-admitted task; a round that did not finish is simply run again.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from rtlforge.behave.acquire.schedule import TaskSchedule
from rtlforge.core.errors import ConfigError
from rtlforge.core.untrusted import load_json

__all__ = ["PoolState", "Provenance", "TaskPool"]


class PoolState(BaseModel):
    model_config = ConfigDict(extra="forbid")

    rounds_completed: int = 0


class Provenance(BaseModel):
    """Why a task is in the pool: its sources, objective, round and the B2-vs-B1 check."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    task_id: str
    round: int
    sources: tuple[str, ...]
    objective: str
    gap: str = ""
    attempts: int
    check: dict[str, object]
    golden_hash: str


class TaskPool:
    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self.tasks_dir = self.root / "tasks"
        if self.root.exists() and not self.root.is_dir():
            raise ConfigError(f"task pool {self.root} is not a folder")

    # ------------------------------------------------------------------------------ state

    @property
    def _state_path(self) -> Path:
        return self.root / "state.json"

    def state(self) -> PoolState:
        if not self._state_path.exists():
            return PoolState()
        try:
            return PoolState.model_validate_json(self._state_path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValidationError) as exc:
            raise ConfigError(f"pool state {self._state_path} does not load: {exc}") from exc

    def _write_json(self, path: Path, text: str) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)

    def complete_round(self, number: int) -> None:
        self._write_json(self._state_path,
                         PoolState(rounds_completed=number).model_dump_json(indent=1))

    def round_dir(self, number: int) -> Path:
        return self.root / "rounds" / f"round-{number:03d}"

    # ------------------------------------------------------------------------------ tasks

    def task_ids(self) -> list[str]:
        if not self.tasks_dir.is_dir():
            return []
        return sorted(p.name for p in self.tasks_dir.iterdir()
                      if p.is_dir() and not p.name.startswith("."))

    def provenance(self) -> list[Provenance]:
        found = []
        for task_id in self.task_ids():
            path = self.tasks_dir / task_id / "provenance.json"
            if not path.exists():
                continue  # a seed task put into the pool, not acquired
            try:
                found.append(Provenance.model_validate_json(path.read_text(encoding="utf-8")))
            except (OSError, UnicodeDecodeError, ValidationError) as exc:
                raise ConfigError(f"pool task {task_id}: provenance does not load: {exc}"
                                  ) from exc
        return found

    def admit(self, task_id: str, files: Mapping[str, str], provenance: Provenance) -> Path:
        """Write a task directory atomically and add the task to the RL schedule."""
        target = self.tasks_dir / task_id
        if target.exists():
            raise ConfigError(f"pool task {task_id} exists already")
        staging = self.tasks_dir / f".staging-{task_id}"
        if staging.exists():
            shutil.rmtree(staging)
        staging.mkdir(parents=True)
        for name, text in files.items():
            (staging / name).write_text(text, encoding="utf-8")
        (staging / "provenance.json").write_text(provenance.model_dump_json(indent=1),
                                                 encoding="utf-8")
        os.replace(staging, target)
        schedule = TaskSchedule.load(self.root / "schedule.json")
        schedule.add_tasks([task_id])
        schedule.save(self.root / "schedule.json")
        return target

    def discard_round(self, number: int) -> list[str]:
        """Remove the tasks a round admitted before it was killed (its records were never
        written, so nothing else refers to them) and their schedule entries: the rerun of
        the round admits afresh. Returns the removed task ids."""
        removed = [p.task_id for p in self.provenance() if p.round == number]
        for staging in self.tasks_dir.glob(".staging-*") if self.tasks_dir.is_dir() else ():
            shutil.rmtree(staging)
        for task_id in removed:
            shutil.rmtree(self.tasks_dir / task_id)
        if removed:
            schedule = TaskSchedule.load(self.root / "schedule.json")
            for task_id in removed:
                schedule.state.tasks.pop(task_id, None)
            schedule.save(self.root / "schedule.json")
        return removed

    # ------------------------------------------------------------------------ journals

    def append(self, name: str, rows: Iterable[BaseModel | Mapping[str, object]]) -> None:
        path = self.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as out:
            for row in rows:
                text = (row.model_dump_json() if isinstance(row, BaseModel)
                        else json.dumps(row, sort_keys=True))
                out.write(text + "\n")

    def experience(self, last: int = 10) -> list[str]:
        """The latest ``last`` experience notes, oldest first."""
        path = self.root / "experience.jsonl"
        if not path.exists():
            return []
        notes = []
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                row = load_json(line)
            except json.JSONDecodeError:
                continue  # a line cut by a kill: the note is lost, the pool is not
            if isinstance(row, dict) and isinstance(row.get("note"), str):
                notes.append(f"round {row.get('round', '?')}: {row['note']}")
        return notes[-last:] if last else []
