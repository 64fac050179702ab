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


# --------------------------------------------------------------------------------------------
# batches, metadata and the interface defaults
# --------------------------------------------------------------------------------------------


def test_batch_commits_every_write_together(archive: MemoryArchive | SQLiteArchive) -> None:
    with archive.batch():
        archive.add([entry("t", (1.0, 1.0, 1.0), 0)])
        with archive.batch():  # nested: joins the outer batch
            archive.add([entry("t", (2.0, 2.0, 2.0), 1)])
        assert archive.put_meta("done", {"n": 2})
        # the batch reads its own writes
        assert tags(archive.entries()) == [0, 1] and archive.get_meta("done") == {"n": 2}
    assert tags(archive.entries()) == [0, 1] and len(archive) == 2
    assert archive.get_meta("done") == {"n": 2}


def test_batch_interrupted_by_an_exception_writes_nothing(
        archive: MemoryArchive | SQLiteArchive) -> None:
    archive.add([entry("t", (1.0, 1.0, 1.0), 0)])
    archive.put_meta("kept", 1)
    with pytest.raises(RuntimeError, match="evaluation died"), archive.batch():
        archive.add([entry("t", (2.0, 2.0, 2.0), 1), entry("t", None, 2)])
        archive.put_meta("kept", 2)
        archive.put_meta("marker", True)
        with archive.batch():
            archive.add([entry("u", (3.0, 3.0, 3.0), 3)])
        raise RuntimeError("evaluation died")
    assert tags(archive.entries()) == [0] and len(archive) == 1
    assert archive.get_meta("kept") == 1 and archive.get_meta("marker") is None
    assert archive.meta() == {"kept": 1}
    archive.add([entry("t", (4.0, 4.0, 4.0), 4)])  # and the archive is usable afterwards
    assert tags(archive.entries()) == [0, 4]


def test_meta_overwrite_prefix_and_non_finite_values(
        archive: MemoryArchive | SQLiteArchive) -> None:
    assert archive.get_meta("a/1") is None
    assert archive.put_meta("a/1", {"x": [1, 2]})
    assert archive.put_meta("a/1", {"x": 3})  # overwrite (default)
    assert not archive.put_meta("a/1", {"x": 4}, overwrite=False)  # once-only marker kept
    assert archive.put_meta("a/2", {"v": math.nan, "w": [math.inf, -math.inf]},
                            overwrite=False)
    assert archive.put_meta("ab", "text") and archive.put_meta("b", None)
    assert archive.get_meta("a/1") == {"x": 3}
    assert sorted(archive.meta("a/")) == ["a/1", "a/2"]
    assert sorted(archive.meta()) == ["a/1", "a/2", "ab", "b"]
    stored = archive.get_meta("a/2")
    assert math.isnan(stored["v"]) and stored["w"] == [math.inf, -math.inf]
    assert list(archive.entries()) == []  # metadata is not an entry


def test_record_nan_and_inf_round_trip(archive: MemoryArchive | SQLiteArchive) -> None:
    """Non-finite numbers anywhere in an entry (objectives and record) read back as written."""
    archive.add([ArchiveEntry(
        task_id="t", candidate=Candidate.from_source("module m; endmodule", task_id="t"),
        objectives=(math.inf, 1.0, math.nan), verdict="pass",
        record={"hvc": math.nan, "objectives": [math.inf, 1.0, math.nan],
                "ppa": {"area": -math.inf}})])
    (back,) = archive.entries()
    assert back.objectives is not None and back.objectives[0] == math.inf
    assert math.isnan(back.objectives[2]) and math.isnan(back.record["hvc"])
    assert back.record["objectives"][0] == math.inf and math.isnan(back.record["objectives"][2])
    assert back.record["ppa"] == {"area": -math.inf}


def test_sqlite_batch_survives_reopen_and_is_invisible_until_it_ends(tmp_path: Path) -> None:
    path = tmp_path / "b.db"
    with SQLiteArchive(path) as writer, SQLiteArchive(path) as reader:
        with writer.batch():
            writer.add([entry("t", (1.0, 1.0, 1.0), 0)])
            writer.put_meta("m", 1)
            assert list(reader.entries()) == [] and reader.get_meta("m") is None
        assert tags(reader.entries()) == [0] and reader.get_meta("m") == 1
    with SQLiteArchive(path) as again:
        assert tags(again.entries()) == [0] and again.meta() == {"m": 1}


def test_sqlite_batch_blocks_other_threads_until_it_ends(tmp_path: Path) -> None:
    """A batch is one transaction on the shared connection: another thread's write waits."""
    with SQLiteArchive(tmp_path / "c.db") as arc:
        inside = threading.Event()
        other_done = threading.Event()

        def other() -> None:
            inside.wait()
            arc.add([entry("t", (2.0, 2.0, 2.0), 1)])
            other_done.set()

        thread = threading.Thread(target=other)
        thread.start()
        with pytest.raises(RuntimeError), arc.batch():
            arc.add([entry("t", (1.0, 1.0, 1.0), 0)])
            inside.set()
            assert not other_done.wait(0.2)  # held off while the batch is open
            raise RuntimeError("abort")
        thread.join(timeout=10)
        assert tags(arc.entries()) == [1]  # the aborted batch left nothing, the other landed


class _Minimal(pareto_plugin.Archive):  # type: ignore[misc]
    """An archive that implements only the abstract methods."""

    name = "minimal"

    def __init__(self) -> None:
        self.stored: list[ArchiveEntry] = []

    def add(self, entries: object) -> None:
        self.stored.extend(entries)  # type: ignore[arg-type]

    def entries(self, task_id: str | None = None) -> Iterator[ArchiveEntry]:
        return iter([e for e in self.stored if task_id is None or e.task_id == task_id])

    def front(self, task_id: str) -> list[ArchiveEntry]:
        return []


def test_interface_defaults() -> None:
    with _Minimal() as arc:  # close() defaults to nothing to release
        with arc.batch():  # default: each write stands on its own
            arc.add([entry("t", None, 0), entry("t", None, 1)])
        assert len(arc) == 2
        with pytest.raises(NotImplementedError, match="minimal"):
            arc.put_meta("k", 1)
        with pytest.raises(NotImplementedError):
            arc.get_meta("k")
        with pytest.raises(NotImplementedError):
            arc.meta()
    arc.close()  # idempotent


def _explore_entry(sample: int, objectives: tuple[float, ...] | None) -> ArchiveEntry:
    from rtlforge.core.models import ValidationReport, Verdict
    from rtlforge.explore.models import ExploreRecord

    record = ExploreRecord(
        key=ExploreRecord.make_key("m", "t", 1, 1, sample), method="m", task="t", trial=1,
        iteration=1, sample=sample, verdict=Verdict.PASS, source="module m; endmodule",
        report=ValidationReport(verdict=Verdict.PASS, task_id="t"),
        objectives=list(objectives) if objectives else None,
        hvc=math.nan if objectives else None,
        golden={"power": 1.0, "delay": math.inf, "area": 1.0})
    return ArchiveEntry(task_id="t", candidate=Candidate.from_source("module m; endmodule"),
                        objectives=objectives, verdict="pass", record=record.to_json_dict())


def test_explore_store_path_keeps_nan_inf_and_commits_groups_once(
        archive: MemoryArchive | SQLiteArchive) -> None:
    """The explore store writes through the archive: non-finite objectives and HVC survive
    (the old raw-SQL path wrote them as null and could not read its own archive back)."""
    from rtlforge.explore.store import ExploreStore

    store = ExploreStore(archive)
    group = [_explore_entry(0, (math.inf, 1.0, 1.0)), _explore_entry(1, (math.nan, 2.0, 1.0))]
    assert store.commit_group("m", "t", 1, 1, group)
    assert not store.commit_group("m", "t", 1, 1, [_explore_entry(2, None)])  # once only
    assert store.completed_groups() == {("m", "t", 1, 1)} and len(store) == 2
    first, second = store.records()
    assert first.objectives == [math.inf, 1.0, 1.0] and math.isnan(second.objectives[0])  # type: ignore[index]
    assert first.golden is not None  # the kernel's PPA; its flat form keeps the infinity
    assert math.isnan(first.hvc) and first.golden.triple() == {"power": 1.0, "delay": math.inf,
                                                               "area": 1.0}
    assert next(archive.entries()).objectives == (math.inf, 1.0, 1.0)
    assert archive.front("t") == []  # non-finite objectives are never on a front


def test_explore_group_interrupted_mid_commit_leaves_nothing(
        archive: MemoryArchive | SQLiteArchive) -> None:
    from rtlforge.explore.store import ExploreStore

    class Dying(list[ArchiveEntry]):
        """A group whose second candidate fails while the archive reads it (after the marker)."""

        def __iter__(self) -> Iterator[ArchiveEntry]:
            yield self[0]
            raise RuntimeError("killed while writing the group")

    store = ExploreStore(archive)
    with pytest.raises(RuntimeError, match="killed"):
        store.commit_group("m", "t", 1, 1, Dying([_explore_entry(0, (1.0, 1.0, 1.0))] * 2))
    assert store.completed_groups() == set() and store.records() == []
    assert store.commit_group("m", "t", 1, 1, [_explore_entry(0, (1.0, 1.0, 1.0))])


BATCH_WRITER = textwrap.dedent("""
    import sys, time
    from rtlforge.core.interfaces import ArchiveEntry
    from rtlforge.core.models import Candidate
    from rtlforge.plugins.archives.pareto import SQLiteArchive

    arc = SQLiteArchive(sys.argv[1])
    cand = Candidate.from_source("module m; endmodule")
    batch = 0
    while True:
        with arc.batch():
            for k in range(3):  # three separate writes, one unit
                arc.add([ArchiveEntry(task_id="t", candidate=cand, objectives=(1.0, 1.0, 1.0),
                                      verdict="pass", record={"batch": batch, "k": k})])
                time.sleep(0.002)
            arc.put_meta(f"batch/{batch}", 3, overwrite=False)
        print(batch, flush=True)
        batch += 1
""")


def test_sqlite_batch_survives_sigkill(tmp_path: Path) -> None:
    """SIGKILL in the middle of batches of several writes: each batch is all there or absent."""
    path = tmp_path / "kill-batch.db"
    proc = subprocess.Popen([sys.executable, "-c", BATCH_WRITER, str(path)],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    acked: list[int] = []
    deadline = time.monotonic() + 60
    try:
        while len(acked) < 20 and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            acked.append(int(line))
        time.sleep(0.003)  # land the kill inside a batch more often than not
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        proc.stdout.close()
    assert len(acked) >= 20, "writer did not get going"
    with SQLiteArchive(path) as arc:
        per_batch = Counter(e.record["batch"] for e in arc.entries("t"))
        markers = arc.meta("batch/")
    assert set(acked) <= set(per_batch)
    assert all(n == 3 for n in per_batch.values())
    assert {f"batch/{b}" for b in per_batch} == set(markers)
