"""Prestarting a runner (what `rtlforge validate` does while it loads the task): the first
workspace and the first gate check take the jails and the worker started in the background,
nothing extra is started, a failed prestart changes nothing but the time, and closing the runner
mid-prestart leaves no jail root or process behind. The oracles are the jail roots on disk, the
host's process table and the gate workers actually constructed."""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from rtlforge.core.models import SourceFile
from rtlforge.sandbox import gate as gate_module
from rtlforge.sandbox.pool import PooledJail
from rtlforge.sandbox.runner import Limits, SandboxRunner

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")

DESIGN = [SourceFile(name="a.v", content="module a; endmodule\n")]


def _until(condition: Callable[[], bool], seconds: float = 20.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.01)


def _prestarts_running() -> bool:
    return any(t.name.endswith("-prestart") for t in threading.enumerate())


def _processes_under(path: Path) -> list[int]:
    """Host processes whose command line names ``path`` (a jail's bubblewrap names its root)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if str(path).encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def _counting_workers(monkeypatch: pytest.MonkeyPatch, fail_first: bool = False) -> list[int]:
    """The threads gate workers are started on (through the runner), in order."""
    made: list[int] = []
    real = gate_module._Worker.start.__func__  # type: ignore[attr-defined]

    def start(cls: type, runner: SandboxRunner, memory_mb: int) -> object:
        made.append(threading.get_ident())
        if fail_first and len(made) == 1:
            raise gate_module.SandboxError("the prestarted worker did not start (test)")
        return real(cls, runner, memory_mb)

    monkeypatch.setattr(gate_module._Worker, "start", classmethod(start))
    return made


def test_the_first_workspace_and_check_take_what_the_prestart_started(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    made = _counting_workers(monkeypatch)
    with SandboxRunner(Limits(timeout_s=10), base_dir=tmp_path) as runner:
        runner.prestart()
        _until(lambda: not _prestarts_running())
        assert len(list(tmp_path.glob("rtlforge-jail-*"))) == 1  # the tools' (the gate's
        assert len(list(tmp_path.glob("rtlforge-gate-*"))) == 1  # worker leases none)
        assert len(made) == 1 and made[0] != threading.get_ident()  # built in the background
        runner.prestart()  # both are ready: nothing more starts
        _until(lambda: not _prestarts_running())
        with runner.workspace() as wd:
            runner.put(wd, DESIGN, role="design")
            assert runner.run(["true"], cwd=wd).ok
        assert len(made) == 1
        assert len(list(tmp_path.glob("rtlforge-jail-*"))) == 1  # no jail started on the path
    assert list(tmp_path.iterdir()) == []


def test_a_validation_right_after_the_prestart_waits_for_it_instead_of_starting_more(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    made = _counting_workers(monkeypatch)
    with SandboxRunner(Limits(timeout_s=10), base_dir=tmp_path) as runner:
        runner.prestart()
        with runner.workspace() as wd:  # no wait: both starts are still in flight
            runner.put(wd, DESIGN, role="design")
            assert runner.run(["true"], cwd=wd).ok
        assert len(made) == 1
        _until(lambda: not _prestarts_running())
        assert len(list(tmp_path.glob("rtlforge-jail-*"))) == 1


def test_a_failed_prestart_only_costs_the_time(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    made = _counting_workers(monkeypatch, fail_first=True)
    real_start = PooledJail.start
    failed: list[bool] = []

    def start_once_failing(self: PooledJail) -> None:
        if not failed:  # not an error the pool expects: a lease must not wait forever
            failed.append(True)
            raise RuntimeError("the prestarted jail did not start (test)")
        real_start(self)

    monkeypatch.setattr(PooledJail, "start", start_once_failing)
    with SandboxRunner(Limits(timeout_s=10), base_dir=tmp_path) as runner:
        runner.prestart()
        _until(lambda: not _prestarts_running())
        with runner.workspace() as wd:
            runner.put(wd, DESIGN, role="design")  # the check starts a worker of its own
            assert runner.run(["true"], cwd=wd).ok
        assert len(made) == 2 and failed == [True]
    assert list(tmp_path.iterdir()) == []


def test_closing_mid_prestart_leaves_no_jail_or_process_behind(tmp_path: Path) -> None:
    runner = SandboxRunner(Limits(timeout_s=10), base_dir=tmp_path)
    runner.prestart()
    time.sleep(0.005)  # the background starts are under way
    runner.close()
    _until(lambda: not _prestarts_running())
    _until(lambda: not _processes_under(tmp_path), seconds=5)
    assert list(tmp_path.iterdir()) == [], os.listdir(tmp_path)
