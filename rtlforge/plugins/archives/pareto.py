"""Pareto archives (``sqlite``, ``memory``) and the ``rtlforge metrics`` command.

The SQLite archive is the one to use in RL runs and explore: every write (an :meth:`add`, a
:meth:`put_meta`, or everything inside one :meth:`batch`) is a single transaction committed
(WAL, ``synchronous=FULL``) before it returns, so a run killed at any point, SIGKILL included,
loses nothing it was told had been stored and never leaves a half-written batch. The memory
archive has the same semantics without the durability.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from rtlforge.core.hookspecs import Register, hookimpl
from rtlforge.core.interfaces import Archive, ArchiveEntry
from rtlforge.core.untrusted import load_json
from rtlforge.pareto.hypervolume import non_dominated

_SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    task_id TEXT NOT NULL,
    entry TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS entries_task ON entries (task_id, id);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
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


def _meta_json(value: Any) -> str:
    """Metadata as JSON text; NaN/inf are kept as the NaN/Infinity constants Python reads back."""
    return json.dumps(value, allow_nan=True)


@dataclass
class _Staged:
    """Writes of the open batch, applied together when it ends."""

    entries: list[ArchiveEntry] = field(default_factory=list)
    meta: dict[str, str] = field(default_factory=dict)


class MemoryArchive(Archive):
    """In-process archive for tests and short experiments; nothing survives the process.

    Metadata goes through the same JSON as the SQLite archive's, so both read back alike.
    """

    name: ClassVar[str] = "memory"

    def __init__(self) -> None:
        self._entries: list[ArchiveEntry] = []
        self._meta: dict[str, str] = {}
        # re-entrant: a batch holds it for its whole block and the writes inside take it again
        self._lock = threading.RLock()
        self._staged: _Staged | None = None

    @contextmanager
    def batch(self) -> Iterator[None]:
        with self._lock:
            if self._staged is not None:  # nested: part of the outer batch
                yield
                return
            self._staged = staged = _Staged()
            try:
                yield
            finally:
                self._staged = None
            self._entries.extend(staged.entries)
            self._meta.update(staged.meta)

    def add(self, entries: Iterable[ArchiveEntry]) -> None:
        batch = list(entries)  # materialise first: a failing iterator adds nothing
        with self.batch():
            assert self._staged is not None
            self._staged.entries.extend(batch)

    def entries(self, task_id: str | None = None) -> Iterator[ArchiveEntry]:
        with self._lock:
            snapshot = list(self._entries) + (self._staged.entries if self._staged else [])
        return iter([e for e in snapshot if task_id is None or e.task_id == task_id])

    def front(self, task_id: str) -> list[ArchiveEntry]:
        return pareto_front(list(self.entries(task_id)))

    def _stored_meta(self) -> dict[str, str]:
        return {**self._meta, **(self._staged.meta if self._staged else {})}

    def put_meta(self, key: str, value: Any, *, overwrite: bool = True) -> bool:
        text = _meta_json(value)
        with self.batch():
            assert self._staged is not None
            if not overwrite and key in self._stored_meta():
                return False
            self._staged.meta[key] = text
        return True

    def get_meta(self, key: str) -> Any:
        with self._lock:
            text = self._stored_meta().get(key)
        return load_json(text) if text is not None else None

    def meta(self, prefix: str = "") -> dict[str, Any]:
        with self._lock:
            stored = self._stored_meta()
        return {k: load_json(v) for k, v in sorted(stored.items()) if k.startswith(prefix)}

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries) + (len(self._staged.entries) if self._staged else 0)


class SQLiteArchive(Archive):
    """Durable archive in one SQLite file; safe to share between threads and processes."""

    name: ClassVar[str] = "sqlite"

    def __init__(self, path: str | Path, *, timeout: float = 30.0) -> None:
        """Args:
            path: the SQLite file (created, with its folder, when missing).
            timeout: seconds to wait for another writer's lock before giving up.
        """
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # autocommit mode: transactions are opened explicitly, one per write or batch
        self._conn = sqlite3.connect(
            self.path, timeout=timeout, isolation_level=None, check_same_thread=False
        )
        # re-entrant: a batch holds it for its whole block and the writes inside take it again
        self._lock = threading.RLock()
        self._in_batch = False
        with self._lock:
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=FULL")
            self._conn.executescript(_SCHEMA)

    @contextmanager
    def batch(self) -> Iterator[None]:
        """One ``BEGIN IMMEDIATE … COMMIT`` around the block; ROLLBACK when it raises."""
        with self._lock:
            if self._in_batch:  # nested: part of the outer transaction
                yield
                return
            self._conn.execute("BEGIN IMMEDIATE")
            self._in_batch = True
            try:
                yield
                self._conn.execute("COMMIT")
            except BaseException:
                if self._conn.in_transaction:  # the block raised, or COMMIT itself failed
                    self._conn.execute("ROLLBACK")
                raise
            finally:
                self._in_batch = False

    def add(self, entries: Iterable[ArchiveEntry]) -> None:
        """Store a batch atomically; it is committed to disk before this returns."""
        rows = [(e.task_id, e.model_dump_json()) for e in entries]
        if not rows:
            return
        with self.batch():
            self._conn.executemany("INSERT INTO entries (task_id, entry) VALUES (?, ?)", rows)

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

    def put_meta(self, key: str, value: Any, *, overwrite: bool = True) -> bool:
        text = _meta_json(value)
        verb = "INSERT OR REPLACE" if overwrite else "INSERT OR IGNORE"
        with self.batch():
            cursor = self._conn.execute(f"{verb} INTO meta (key, value) VALUES (?, ?)",
                                        (key, text))
            return cursor.rowcount > 0

    def get_meta(self, key: str) -> Any:
        with self._lock:
            row = self._conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return load_json(row[0]) if row is not None else None

    def meta(self, prefix: str = "") -> dict[str, Any]:
        with self._lock:
            rows = self._conn.execute(
                "SELECT key, value FROM meta WHERE substr(key, 1, ?) = ? ORDER BY key",
                (len(prefix), prefix)).fetchall()
        return {k: load_json(v) for k, v in rows}

    def __len__(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM entries").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._conn.close()


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
    if report.get("baselines"):
        rows.append(("med rHV/B", "rhv_vs_baseline_median"))
    for label, key in rows:
        cells = [methods[n].get(key) for n in names]
        click.echo(f"{label:<10}" + "".join(
            f"{'-':>{width}}" if v is None else f"{v:>{width}.4f}" for v in cells))
    if report.get("baselines"):
        click.echo("  B = the archive of the union of " + ", ".join(report["baselines"])
                   + " (Appendix E.2); median over tasks x trials")
    union = report.get("union_of_first_trials") or {}
    if union.get("trials") and union.get("iterations"):
        click.secho("rHV of the union of the first N trials (Appendix E.5, mean over tasks)",
                    bold=True)
        click.echo(f"{'N':<6}{'iter':<6}" + "".join(f"{n:>{width}}" for n in names))
        for n in union["trials"]:
            for it in union["iterations"]:
                click.echo(f"{n:<6}{it:<6}" + "".join(
                    f"{methods[m]['rhv_union_of_first_trials'][n][it]:>{width}.4f}"
                    for m in names))
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
    @click.option("--baseline", "baselines", multiple=True, metavar="METHOD[,METHOD...]",
                  help="Baseline method(s): bootstrap CIs of every other method against each, "
                       "and the median rHV against the archive of their union (Appendix E.2; "
                       "the paper: its four baselines). Repeatable or comma-separated.")
    @click.option("--baselines", "baseline_list", metavar="A,B,C,D",
                  help="Same as --baseline A,B,C,D.")
    @click.option("--seed", type=int, default=0, show_default=True, help="Bootstrap seed.")
    def metrics(records_path: Path, as_json: bool, baselines: tuple[str, ...],
                baseline_list: str | None, seed: int) -> None:
        """rHV, win rate, diversity, union of trials (and bootstrap CIs) of RECORDS.jsonl."""
        from rtlforge.evaluation.metrics import (
            RecordsError,
            compute_metrics,
            load_records,
            metrics_json,
        )

        try:
            names = [b.strip() for item in (*baselines, baseline_list or "")
                     for b in item.split(",") if b.strip()]
            records = load_records(records_path)
            if not records:
                raise click.UsageError(f"no records in {records_path}")
            report = compute_metrics(records, baseline=names or None, seed=seed)
        except (RecordsError, ValueError) as exc:
            raise click.UsageError(str(exc)) from exc
        if as_json:
            click.echo(metrics_json(report))
        else:
            _print_table(report)
