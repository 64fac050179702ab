"""Archives: front semantics, persistence, atomic batches and surviving SIGKILL."""

from __future__ import annotations

import math
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

import rtlforge.plugins.archives.pareto as pareto_plugin
from rtlforge.core.interfaces import ArchiveEntry
from rtlforge.core.models import Candidate
from rtlforge.core.plugins import PluginHost
from rtlforge.plugins.archives.pareto import MemoryArchive, SQLiteArchive


def entry(task: str, objectives: tuple[float, ...] | None, tag: int = 0) -> ArchiveEntry:
    return ArchiveEntry(
        task_id=task,
        candidate=Candidate.from_source(f"module m{tag}; endmodule", task_id=task),
        objectives=objectives,
        verdict="pass" if objectives is not None else "fail",
        record={"tag": tag},
    )


@pytest.fixture(params=["memory", "sqlite"])
def archive(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[MemoryArchive | SQLiteArchive]:
    if request.param == "memory":
        yield MemoryArchive()
    else:
        with SQLiteArchive(tmp_path / "a.db") as arc:
            yield arc


def tags(entries: object) -> list[int]:
    return [e.record["tag"] for e in entries]  # type: ignore[attr-defined]


def test_entries_and_front(archive: MemoryArchive | SQLiteArchive) -> None:
    archive.add([
        entry("t", (1.0, 2.0, 3.0), 0),
        entry("t", (3.0, 2.0, 1.0), 1),
        entry("t", (1.0, 1.0, 1.0), 2),  # dominated
        entry("t", None, 3),  # failed design
        entry("t", (1.0, 2.0, 3.0), 4),  # duplicate of 0
        entry("u", (9.0, 9.0, 9.0), 5),  # other task
        entry("t", (math.nan, 9.0, 9.0), 6),  # never on a front
        entry("t", (math.inf, 0.0, 0.0), 7),
    ])
    archive.add([])
    assert tags(archive.entries()) == [0, 1, 2, 3, 4, 5, 6, 7]
    assert tags(archive.entries("u")) == [5]
    assert tags(archive.front("t")) == [0, 1]
    assert tags(archive.front("u")) == [5]
    assert archive.front("nope") == []
    roundtrip = next(iter(archive.entries("u")))
    assert roundtrip == entry("u", (9.0, 9.0, 9.0), 5)
    nan_entry = next(e for e in archive.entries("t") if e.record["tag"] == 6)
    assert nan_entry.objectives is not None and math.isnan(nan_entry.objectives[0])


def test_front_rejects_mixed_objective_counts(archive: MemoryArchive | SQLiteArchive) -> None:
    archive.add([entry("t", (1.0, 2.0)), entry("t", (1.0, 2.0, 3.0))])
    with pytest.raises(ValueError, match="objective counts"):
        archive.front("t")


def test_failing_batch_adds_nothing(archive: MemoryArchive | SQLiteArchive) -> None:
    def batch() -> Iterator[ArchiveEntry]:
        yield entry("t", (1.0, 1.0, 1.0), 0)
        raise RuntimeError("generator died")

    with pytest.raises(RuntimeError):
        archive.add(batch())
    assert list(archive.entries()) == []


def test_sqlite_persists_and_uses_wal(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "a.db"
    with SQLiteArchive(path) as arc:
        arc.add([entry("t", (1.0, 2.0, 3.0), 0), entry("t", (2.0, 1.0, 3.0), 1)])
    with SQLiteArchive(path) as arc:
        assert tags(arc.entries()) == [0, 1] and len(arc) == 2
        assert tags(arc.front("t")) == [0, 1]
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_sqlite_concurrent_writers(tmp_path: Path) -> None:
    path = tmp_path / "a.db"
    shared = SQLiteArchive(path)
    other = SQLiteArchive(path)  # a second connection, as another process would have

    def work(arc: SQLiteArchive, base: int) -> None:
        for i in range(50):
            arc.add([entry("t", (1.0, 1.0, 1.0), base + i)])

    threads = [threading.Thread(target=work, args=(a, b))
               for a, b in ((shared, 0), (shared, 100), (other, 200))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(tags(shared.entries())) == sorted([*range(50), *range(100, 150),
                                                     *range(200, 250)])
    shared.close()
    other.close()


WRITER = textwrap.dedent("""
    import sys
    from rtlforge.core.interfaces import ArchiveEntry
    from rtlforge.core.models import Candidate
    from rtlforge.plugins.archives.pareto import SQLiteArchive

    arc = SQLiteArchive(sys.argv[1])
    cand = Candidate.from_source("module m; endmodule")
    batch = 0
    while True:
        arc.add([ArchiveEntry(task_id="t", candidate=cand, objectives=(1.0, float(k), 1.0),
                              verdict="pass", record={"batch": batch, "k": k})
                 for k in range(3)])
        print(batch, flush=True)  # acknowledged only after add() returned
        batch += 1
""")


def test_sqlite_survives_sigkill(tmp_path: Path) -> None:
    """Every batch acknowledged before SIGKILL is there after reopening; no batch is partial."""
    path = tmp_path / "kill.db"
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(path)],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    acked: list[int] = []
    deadline = time.monotonic() + 60
    try:
        while len(acked) < 40 and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            acked.append(int(line))
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        proc.stdout.close()
    assert proc.returncode == -signal.SIGKILL
    assert len(acked) >= 40, "writer did not get going"
    with SQLiteArchive(path) as arc:
        stored = [e.record for e in arc.entries("t")]
    per_batch = Counter(r["batch"] for r in stored)
    assert set(acked) <= set(per_batch)
    assert all(n == 3 for n in per_batch.values())  # atomic: all of a batch or none of it


def test_plugin_registration(tmp_path: Path) -> None:
    host = PluginHost(load_entrypoints=False, plugins=[("pareto", pareto_plugin)])
    assert host.names("archive") == ["memory", "sqlite"]
    arc = host.create("archive", "sqlite", path=tmp_path / "p.db")
    assert isinstance(arc, SQLiteArchive)
    arc.close()
    assert isinstance(host.create("archive", "memory"), MemoryArchive)
