"""Persistent (pooled) jails: one workspace at a time, nothing of one run or workspace reaching
the next. The oracle is what a shell inside the jail sees (``/proc``, ``/tmp``, ``ulimit``) and
the host's process table, never the pool's own bookkeeping."""

from __future__ import annotations

import os
import shutil
import signal
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from _processes import tagged

from rtlforge.sandbox.pool import PooledJail
from rtlforge.sandbox.runner import Limits, SandboxRunner

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")

#: Lists the processes of the jail other than its init and this shell and its ls.
_OTHERS = "for p in /proc/[0-9]*; do n=${p#/proc/}; [ $n = 1 ] || [ $n = $$ ] || echo $n; done"


@pytest.fixture
def runner() -> Iterator[SandboxRunner]:
    with SandboxRunner(Limits(timeout_s=10)) as made:
        yield made


def _tag() -> str:
    return f"31.{os.getpid()}{time.monotonic_ns() % 10**6:06d}"


def _others(runner: SandboxRunner, wd: Path) -> list[str]:
    run = runner.run(["sh", "-c", _OTHERS], cwd=wd)
    assert run.ok, run
    return run.stdout.split()


def test_runs_share_one_jail_but_no_process_survives_a_run(runner: SandboxRunner) -> None:
    tag = _tag()
    with runner.workspace() as wd:
        first = runner.run(["sh", "-c", f"setsid sh -c 'sleep {tag}' & (sleep {tag} &); "
                                        "echo $$"], cwd=wd)
        assert first.ok
        # the same jail: the init is shared, and the pids go on counting in its namespace
        assert int(first.stdout) > 1
        assert _others(runner, wd) == [], "a daemon of run 1 is alive in run 2"
    assert not tagged(tag)


def test_a_timeout_kills_everything_the_run_started(runner: SandboxRunner) -> None:
    tag = _tag()
    with runner.workspace() as wd:
        run = runner.run(["sh", "-c", f"setsid sleep {tag} & sleep {tag}"], cwd=wd, timeout=0.5)
        assert run.timed_out
        assert _others(runner, wd) == []
    assert not tagged(tag)


def test_the_init_cannot_be_killed_or_stopped_from_inside(runner: SandboxRunner) -> None:
    with runner.workspace() as wd:
        run = runner.run(["sh", "-c", "kill -KILL 1; kill -STOP 1; kill -INT 1; kill -TERM 1; "
                                      "echo sent"], cwd=wd)
        assert run.ok and run.stdout == "sent\n"
        again = runner.run(["echo", "alive"], cwd=wd)
        assert again.ok and again.stdout == "alive\n"


def test_rlimits_are_per_tool_run(runner: SandboxRunner) -> None:
    with runner.workspace() as wd:
        small = runner.run(["sh", "-c", "ulimit -H -f; ulimit -H -t"], cwd=wd,
                           limits=Limits(timeout_s=10, cpu_s=3, file_size_mb=1))
        big = runner.run(["sh", "-c", "ulimit -H -f; ulimit -H -t"], cwd=wd,
                         limits=Limits(timeout_s=10, cpu_s=7, file_size_mb=2))
        # sh reports the file size limit in 512-byte blocks
        assert small.stdout.split() == ["2048", "3"]
        assert big.stdout.split() == ["4096", "7"]
        filled = runner.run(["sh", "-c", "head -c 1500000 /dev/zero > f; echo $?"], cwd=wd,
                            limits=Limits(timeout_s=10, file_size_mb=1))
        assert filled.stdout.strip() != "0" or (wd / "f").stat().st_size <= 1 << 20


def test_nothing_of_a_workspace_reaches_the_next(runner: SandboxRunner) -> None:
    with runner.workspace() as first:
        planted = runner.run(["sh", "-c", "echo a > /tmp/left; mkdir -p /tmp/d/e; chmod 0 "
                                          "/tmp/d; echo a > /dev/shm/left; echo ok"], cwd=first)
        assert planted.stdout == "ok\n"
        root = first.parent
    with runner.workspace() as second:
        assert second.parent == root, "the jail should have been reused"
        seen = runner.run(["sh", "-c", "ls -A /tmp /dev/shm"], cwd=second)
        assert "left" not in seen.stdout and "d" not in seen.stdout.split()
        assert not first.exists()


#: The jail init's start time (clock ticks since boot): a fresh jail's init starts later.
_INIT_STARTED = "cut -d' ' -f22 /proc/1/stat"


def test_a_jail_whose_dev_was_changed_is_thrown_away(runner: SandboxRunner) -> None:
    # (not chmod on a device node: on a root host that node is the host's own, see the report)
    with runner.workspace() as first:
        before = runner.run(["sh", "-c", _INIT_STARTED], cwd=first).stdout
        runner.run(["sh", "-c", "sleep 0.05; echo x > /dev/planted"], cwd=first)
    with runner.workspace() as second:
        run = runner.run(["sh", "-c", f"ls /dev; {_INIT_STARTED}"], cwd=second)
        assert run.ok and "planted" not in run.stdout
        assert run.stdout.split()[-1] != before.strip(), "a jail whose /dev changed was reused"


def test_a_clean_jail_keeps_its_init_across_workspaces(runner: SandboxRunner) -> None:
    with runner.workspace() as first:
        before = runner.run(["sh", "-c", _INIT_STARTED], cwd=first).stdout
        time.sleep(0.05)
    with runner.workspace() as second:
        assert runner.run(["sh", "-c", _INIT_STARTED], cwd=second).stdout == before


@pytest.mark.skipif(shutil.which("ipcmk") is None, reason="needs util-linux ipcmk")
def test_sysv_ipc_of_a_workspace_does_not_reach_the_next(runner: SandboxRunner) -> None:
    with runner.workspace() as first:
        made = runner.run(["ipcmk", "-M", "4096"], cwd=first)
        assert made.ok, made
    with runner.workspace() as second:
        listed = runner.run(["sh", "-c", "tail -n +2 /proc/sysvipc/shm | wc -l"], cwd=second)
        assert listed.stdout.strip() == "0"


def test_the_jail_root_is_not_writable_from_inside(runner: SandboxRunner) -> None:
    if os.geteuid() != 0:
        pytest.skip("only a root host can give the root to an unmapped uid")
    with runner.workspace() as wd:
        run = runner.run(["sh", "-c", "touch ../planted; chmod 777 ..; ls .. ; echo done"],
                         cwd=wd)
        assert run.stdout.endswith("done\n")
        assert not (wd.parent / "planted").exists()
        assert (wd.parent.stat().st_mode & 0o777) == 0o711


def test_parallel_workspaces_stay_isolated(runner: SandboxRunner) -> None:
    def one(i: int) -> tuple[str, str, list[str]]:
        with runner.workspace() as wd:
            runner.run(["sh", "-c", f"echo {i} > /tmp/mine; echo {i} > own"], cwd=wd)
            time.sleep(0.05)
            seen = runner.run(["cat", "/tmp/mine"], cwd=wd)
            return str(i), seen.stdout.strip(), _others(runner, wd)

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(one, range(12)))
    for mine, seen, others in results:
        assert seen == mine, "another workspace's /tmp is visible"
        assert others == [], "another workspace's processes are visible"


#: The signals a program may handle or rely on the default of (Python leaves out libc's own).
_USABLE_SIGNALS = sorted(int(s) for s in signal.valid_signals())

#: The shell's session id, pid, ignored-signal mask, its working directory and its hard limits.
_STATE = ("set -- $(cat /proc/$$/stat); echo $6 $$; grep SigIgn /proc/$$/status; pwd; "
          "ulimit -H -t")


def test_a_child_forked_ahead_of_its_run_starts_like_one_forked_on_request(
        runner: SandboxRunner) -> None:
    # The init forks the next run's child while the jail is quiet. Whether a run gets that
    # child (every run after the first) or a fresh fork, the tool must start alike: its own
    # session, no signal ignored that a program may use, the run's directory and limits, and
    # no other process. (glibc reserves 32 and 33 for itself and reinstalls their handlers in
    # every program; its posix_spawn leaves them ignored, and some CI hosts do too.)
    seen = []
    for rounds in range(2):  # the second workspace reuses the jail after its reset
        with runner.workspace() as wd:
            for cpu in (3, 5, 7):
                run = runner.run(["sh", "-c", _STATE], cwd=wd,
                                 limits=Limits(timeout_s=10, cpu_s=cpu + rounds))
                assert run.ok, run
                sid_pid, ignored, cwd, cpu_limit = run.stdout.splitlines()
                sid, pid = sid_pid.split()
                assert sid == pid, "the tool does not lead its own session"
                mask = int(ignored.split()[1], 16)
                assert not [s for s in _USABLE_SIGNALS if mask >> (s - 1) & 1], \
                    f"signals ignored: {ignored}"
                assert cwd == str(wd)
                assert cpu_limit == str(cpu + rounds)
                assert _others(runner, wd) == [], "a process besides the tool's is in the jail"
                seen.append(pid)
    assert len(set(seen)) == len(seen)


def _init_pid(jail: PooledJail) -> int:
    """The host pid of the jail's init: the only child of its bubblewrap."""
    assert jail._proc is not None
    children = Path(f"/proc/{jail._proc.pid}/task/{jail._proc.pid}/children").read_text().split()
    assert len(children) == 1, children
    return int(children[0])


def test_a_run_started_before_the_last_one_is_acknowledged_is_not_swept(
        runner: SandboxRunner) -> None:
    # A run's exit status comes first; the host then closes its reply and sends the next run.
    # When the jail's init wakes to both at once (a loaded machine) and reads the new request
    # first, closing the old run must not sweep the jail: that killed the new tool and then the
    # init itself (it waited for a child the sweep had reaped), an infra_error seen in CI.
    with runner.workspace() as wd:
        assert runner.run(["true"], cwd=wd).ok  # the jail is started
        jail = runner._workspace_of(wd).jail
        assert jail is not None
        first = jail.spawn("/bin/sh", ["sh", "-c", "exit 3"], cwd=str(wd), env={},
                           rlimits={}, stdout=os.open(os.devnull, os.O_WRONLY),
                           stderr=os.open(os.devnull, os.O_WRONLY))
        assert first.wait(10) == 3
        init = _init_pid(jail)
        os.kill(init, signal.SIGSTOP)
        try:
            out_r, out_w = os.pipe()
            second = jail.spawn("/bin/sh", ["sh", "-c", "sleep 0.3; echo alive"], cwd=str(wd),
                                env={}, rlimits={}, stdout=out_w,
                                stderr=os.open(os.devnull, os.O_WRONLY))
            os.close(out_w)
            first.release()  # its close reaches the init after the new request
        finally:
            os.kill(init, signal.SIGCONT)
        assert second.wait(10) == 0
        with os.fdopen(out_r) as out:
            assert out.read() == "alive\n"
        second.release()
        assert runner.run(["true"], cwd=wd).ok  # the init is still there
        assert jail._proc is not None and jail._proc.poll() is None


def test_closing_the_runner_leaves_no_jail_root_behind(tmp_path: Path) -> None:
    # The gate's worker holds a run directory of its own (no jail root: it runs in a jail of
    # its own) for its whole life; closing the runner removes it with the pool's jail roots.
    from rtlforge.core.models import SourceFile

    with SandboxRunner(Limits(timeout_s=10), base_dir=tmp_path) as runner:
        with runner.workspace() as wd:
            runner.put(wd, [SourceFile(name="a.v", content="module a; endmodule\n")],
                       role="design")
            assert runner.run(["true"], cwd=wd).ok
        assert len(list(tmp_path.glob("rtlforge-jail-*"))) == 1  # the workspace's
        assert len(list(tmp_path.glob("rtlforge-gate-*"))) == 1  # the gate worker's
    assert list(tmp_path.iterdir()) == []
