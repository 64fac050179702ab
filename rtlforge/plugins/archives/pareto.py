"""Pareto archives (``sqlite``, ``memory``) and the ``rtlforge metrics`` command.

The SQLite archive is the one to use in RL runs: every :meth:`SQLiteArchive.add` is a single
transaction committed (WAL, ``synchronous=FULL``) before it returns, so a run killed at any
point, SIGKILL included, loses nothing it was told had been stored and never leaves a
half-written batch.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from rtlforge.core.hookspecs import Register, hookimpl
from rtlforge.core.interfaces import Archive, ArchiveEntry
from rtlforge.pareto.hypervolume import non_dominated

_SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    task_id TEXT NOT NULL,
    entry TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS entries_task ON entries (task_id, id);
"""


def pareto_front(entries: list[ArchiveEntry]) -> list[ArchiveEntry]:
    """Non-dominated entries among those with finite objectives (first of exact duplicates).

    Entries without objectives (failed designs) or with NaN/inf objectives are never on the
    front; mixed objective counts within one task are an error, not something to guess about.
    """
    scored = [
        e for e in entries
        if e.objectives is not None and all(np.isfinite(v) for v in e.objectives)
    ]
    if not scored:
        return []
    dims = {len(e.objectives or ()) for e in scored}
    if len(dims) != 1:
        raise ValueError(f"entries of one task have different objective counts: {sorted(dims)}")
    mask = non_dominated(np.array([e.objectives for e in scored], dtype=np.float64))
    return [e for e, keep in zip(scored, mask, strict=True) if keep]


def _to_json(entry: ArchiveEntry) -> str:
    """JSON that keeps NaN/inf objectives (pydantic would write null and fail to read it back)."""
    data = entry.model_dump(mode="json")
    if entry.objectives is not None:
        data["objectives"] = list(entry.objectives)
    return json.dumps(data)


class MemoryArchive(Archive):
    """In-process archive for tests and short experiments; nothing survives the process."""

    name: ClassVar[str] = "memory"

    def __init__(self) -> None:
        self._entries: list[ArchiveEntry] = []
        self._lock = threading.Lock()

    def add(self, entries: Iterable[ArchiveEntry]) -> None:
        batch = list(entries)  # materialise first: a failing iterator adds nothing
        with self._lock:
            self._entries.extend(batch)

    def entries(self, task_id: str | None = None) -> Iterator[ArchiveEntry]:
        with self._lock:
            snapshot = list(self._entries)
        return iter([e for e in snapshot if task_id is None or e.task_id == task_id])

    def front(self, task_id: str) -> list[ArchiveEntry]:
        return pareto_front(list(self.entries(task_id)))


class SQLiteArchive(Archive):
    """Durable archive in one SQLite file; safe to share between threads and processes."""

    name: ClassVar[str] = "sqlite"

    def __init__(self, path: str | Path, *, timeout: float = 30.0) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # autocommit mode: transactions are opened explicitly, so each add is exactly one
        self._conn = sqlite3.connect(
            self.path, timeout=timeout, isolation_level=None, check_same_thread=False
        )
        self._lock = threading.Lock()
        with self._lock:
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=FULL")
            self._conn.executescript(_SCHEMA)

    def add(self, entries: Iterable[ArchiveEntry]) -> None:
        """Store a batch atomically; it is committed to disk before this returns."""
        rows = [(e.task_id, _to_json(e)) for e in entries]
        if not rows:
            return
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                self._conn.executemany("INSERT INTO entries (task_id, entry) VALUES (?, ?)", rows)
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def entries(self, task_id: str | None = None) -> Iterator[ArchiveEntry]:
        """A snapshot in insertion order (read eagerly, so writers are never blocked by it)."""
        with self._lock:
            if task_id is None:
                rows = self._conn.execute("SELECT entry FROM entries ORDER BY id").fetchall()
            else:
                rows = self._conn.execute(
                    "SELECT entry FROM entries WHERE task_id = ? ORDER BY id", (task_id,)
                ).fetchall()
        return iter([ArchiveEntry.model_validate_json(row[0]) for row in rows])

    def front(self, task_id: str) -> list[ArchiveEntry]:
        return pareto_front(list(self.entries(task_id)))

    def __len__(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM entries").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> SQLiteArchive:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# --------------------------------------------------------------------------------------------
# hooks
# --------------------------------------------------------------------------------------------


@hookimpl
def register_archives(register: Register) -> None:
    register(SQLiteArchive)
    register(MemoryArchive)


def _print_table(report: dict[str, Any]) -> None:
    import click

    methods = report["methods"]
    names = sorted(methods)
    width = max([10, *(len(n) + 2 for n in names)])
    header = "".join(f"{n:>{width}}" for n in names)
    for key, title in (("rhv", "rHV"), ("win_rate", "win rate")):
        click.secho(f"{title} (cumulative, mean over tasks x trials)", bold=True)
        click.echo(f"{'iteration':<10}{header}")
        for it in report["iterations"]:
            click.echo(f"{it:<10}" + "".join(f"{methods[n][key][it]:>{width}.4f}" for n in names))
    click.secho("summary", bold=True)
    rows = [("diversity", "diversity"), ("rHV union", "rhv_union")]
    if "baseline" in report:
        rows.append((f"med rHV/{report['baseline']}", "rhv_vs_baseline_median"))
    for label, key in rows:
        cells = [methods[n].get(key) for n in names]
        click.echo(f"{label:<10}" + "".join(
            f"{'-':>{width}}" if v is None else f"{v:>{width}.4f}" for v in cells))
    for comp in report.get("comparisons", []):
        lo, hi = comp["ci95"]
        click.echo(f"rHV {comp['method']} - {comp['versus']}: {comp['rhv_diff']:+.4f} "
                   f"(95% CI {lo:+.4f} .. {hi:+.4f}, nested bootstrap, seed {comp['seed']})")
    click.echo(f"{report['tasks']} tasks, {report['cells']} task x trial cells")


@hookimpl
def register_commands(cli: Any) -> None:
    import click

    @cli.command(name="metrics")
    @click.argument("records_path", metavar="RECORDS.jsonl",
                    type=click.Path(exists=True, dir_okay=False, path_type=Path))
    @click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
    @click.option("--baseline", help="Method to compare every other method against.")
    @click.option("--seed", type=int, default=0, show_default=True, help="Bootstrap seed.")
    def metrics(records_path: Path, as_json: bool, baseline: str | None, seed: int) -> None:
        """rHV, win rate, diversity (and bootstrap CIs) of RECORDS.jsonl."""
        from rtlforge.evaluation.metrics import (
            RecordsError,
            compute_metrics,
            load_records,
            metrics_json,
        )

        try:
            report = compute_metrics(load_records(records_path), baseline=baseline, seed=seed)
        except (RecordsError, ValueError) as exc:
            raise click.UsageError(str(exc)) from exc
        if as_json:
            click.echo(metrics_json(report))
        else:
            _print_table(report)
