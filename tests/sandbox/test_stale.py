"""Directories left by a killed process are removed by the next runner, and only those: a
process that was SIGKILLed mid-validation leaves its jail roots (and, on a root host, its /dev
directory); a new runner's jail pool removes them, while directories of live processes and of
other pid namespaces stay. The oracle is the directory listing and the process table."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from rtlforge.sandbox import stale
from rtlforge.sandbox.runner import Limits, SandboxRunner

ROOT = Path(__file__).resolve().parents[2]


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def _ns() -> str:
    return str(os.stat("/proc/self/ns/pid").st_ino)


def test_only_directories_of_gone_owners_in_this_pid_namespace_are_swept(tmp_path: Path) -> None:
    dead = _dead_pid()
    gone = tmp_path / f"rtlforge-jail-{_ns()}-{dead}-abc"
    gone_dev = tmp_path / f"rtlforge-dev-{_ns()}-{dead}-abc"
    live = tmp_path / f"rtlforge-jail-{_ns()}-{os.getpid()}-abc"
    elsewhere = tmp_path / f"rtlforge-jail-{int(_ns()) + 1}-{dead}-abc"  # another container's
    unnamed = tmp_path / "rtlforge-jail-abc"  # no owner in its name
    for d in (gone, gone_dev, live, elsewhere, unnamed):
        (d / "rtlforge-gate-x").mkdir(parents=True)
    (tmp_path / f"rtlforge-jail-{_ns()}-{dead}-file").write_text("not a directory")
    assert sorted(stale.sweep(tmp_path)) == sorted([gone, gone_dev])
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [live.name, elsewhere.name, unnamed.name, f"rtlforge-jail-{_ns()}-{dead}-file"])


def test_a_runners_own_directories_carry_its_pid(tmp_path: Path) -> None:
    with SandboxRunner(Limits(timeout_s=10), base_dir=tmp_path) as runner, \
            runner.workspace() as wd:
        assert runner.run(["true"], cwd=wd).ok
        (root,) = tmp_path.iterdir()
        assert root.name.startswith(stale.prefix("jail"))


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")
def test_what_a_killed_process_left_is_removed_by_the_next_runner(tmp_path: Path) -> None:
    script = textwrap.dedent(f"""
        import sys, time
        sys.path.insert(0, {str(ROOT)!r})
        from rtlforge.core.models import SourceFile
        from rtlforge.sandbox.runner import Limits, SandboxRunner
        runner = SandboxRunner(Limits(timeout_s=30), base_dir={str(tmp_path)!r})
        with runner.workspace() as wd:
            runner.put(wd, [SourceFile(name="a.v", content="module a; endmodule\\n")],
                       role="design")
            print("ready", flush=True)
            runner.run(["sleep", "30"], cwd=wd)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "TMPDIR": str(tmp_path)})
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    time.sleep(0.3)  # the sleep is running in the jail
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    left = sorted(p.name for p in tmp_path.iterdir())
    assert len([n for n in left if n.startswith("rtlforge-jail-")]) == 1, left  # the tools'
    assert len([n for n in left if n.startswith("rtlforge-gate-")]) == 1, left  # the worker's
    assert all(f"-{proc.pid}-" in n for n in left if n.startswith("rtlforge-")), left
    deadline = time.monotonic() + 10  # bubblewrap dies with its parent; wait until it has
    while stale._alive(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    with SandboxRunner(Limits(timeout_s=10), base_dir=tmp_path) as runner, \
            runner.workspace() as wd:
        assert runner.run(["true"], cwd=wd).ok
        mine = sorted(p.name for p in tmp_path.iterdir())
    assert not any(f"-{proc.pid}-" in n for n in mine), mine
