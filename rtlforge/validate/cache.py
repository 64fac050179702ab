"""Content-addressed cache of validation reports.

The key covers every input that can change a verdict: candidate files, task testbench/support
files and pass rule, the pipeline's validators with their options, and the versions of the tools
they run. Only verdicts about the design are stored: a timeout or infrastructure failure may not
repeat, so it is never replayed from the cache.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from rtlforge.core.models import ValidationReport

if TYPE_CHECKING:
    import sqlite3


class ResultCache(Protocol):
    def get(self, key: str) -> ValidationReport | None: ...

    def put(self, key: str, report: ValidationReport) -> None: ...


class MemoryCache:
    """A bounded LRU in memory; the default for one process."""

    def __init__(self, max_entries: int = 100_000) -> None:
        self.max_entries = max_entries
        self._data: OrderedDict[str, ValidationReport] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> ValidationReport | None:
        with self._lock:
            report = self._data.get(key)
            if report is not None:
                self._data.move_to_end(key)
            return report

    def put(self, key: str, report: ValidationReport) -> None:
        with self._lock:
            self._data[key] = report
            self._data.move_to_end(key)
            while len(self._data) > self.max_entries:
                self._data.popitem(last=False)

    def __len__(self) -> int:
        return len(self._data)


class SQLiteCache:
    """A persistent cache shared by runs (and processes) on one machine.

    Reports are stored as JSON; WAL mode lets several worker processes read while one writes.
    A small in-memory front keeps repeated hits off the disk.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        self._front = MemoryCache(10_000)
        with self._conn() as conn:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(
                "CREATE TABLE IF NOT EXISTS reports (key TEXT PRIMARY KEY, report TEXT NOT NULL)"
            )

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            import sqlite3  # only a persistent cache needs it, not every pipeline

            conn = sqlite3.connect(self.path, timeout=30)
            self._local.conn = conn
        return conn

    def get(self, key: str) -> ValidationReport | None:
        hit = self._front.get(key)
        if hit is not None:
            return hit
        row = self._conn().execute("SELECT report FROM reports WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        report = ValidationReport.model_validate_json(row[0])
        self._front.put(key, report)
        return report

    def put(self, key: str, report: ValidationReport) -> None:
        self._front.put(key, report)
        with self._conn() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO reports (key, report) VALUES (?, ?)",
                (key, report.model_dump_json()),
            )
