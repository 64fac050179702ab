"""The sandboxed runner: timeouts, group kill, rlimits, output cap, network, missing tools.

Every behaviour is checked in both launch modes: through the spawner (default) and through the
``unshare``/``prlimit`` wrapper chain (``spawner=False``).
"""

from __future__ import annotations

import gc
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from _processes import alive, tagged

from rtlforge.core.errors import SandboxError, ToolMissingError
from rtlforge.core.models import ToolSpec
from rtlforge.eda.tools import ICARUS, YOSYS
from rtlforge.sandbox.runner import (
    Limits,
    SandboxRunner,
    find_tool,
    network_isolation_prefix,
    tool_spec,
)

MakeRunner = Callable[..., SandboxRunner]


@pytest.fixture(params=["pooled", "spawner", "chain"])
def make_runner(request: pytest.FixtureRequest) -> Iterator[MakeRunner]:
    """Build runners in the mode under test; closes them afterwards: persistent jails (the
    default), a jail per run through the spawner, a jail per run through the wrapper chain."""
    made: list[SandboxRunner] = []

    def make(limits: Limits | None = None) -> SandboxRunner:
        made.append(SandboxRunner(limits or Limits(timeout_s=10),
                                  spawner=request.param != "chain",
                                  persistent_jails=request.param == "pooled"))
        return made[-1]

    yield make
    for runner in made:
        runner.close()


@pytest.fixture
def runner(make_runner: MakeRunner) -> SandboxRunner:
    return make_runner()


def test_runs_tool_in_its_directory_and_records_it(runner: SandboxRunner) -> None:
    with runner.workspace() as wd:
        (wd / "hello.txt").write_text("hi")
        run = runner.run(["cat", "hello.txt"], cwd=wd)
    assert run.ok and run.stdout == "hi"
    assert run.tool is not None and run.tool.name == "cat" and run.tool.path
    assert not wd.exists(), "workspace must be removed afterwards"


@pytest.mark.tools
def test_known_tools_record_their_version(runner: SandboxRunner) -> None:
    assert "Icarus Verilog" in (find_tool(ICARUS).version or "")
    assert "Yosys" in (find_tool(YOSYS).version or "")
    # a run given the plugin's spec records the version in its result
    with runner.workspace() as wd:
        run = runner.run(["iverilog", "-V"], cwd=wd, tool=ICARUS)
    assert run.tool is not None and "Icarus Verilog" in (run.tool.version or "")


def test_a_spec_says_how_to_install_and_how_to_read_the_version(tmp_path: Path) -> None:
    missing = ToolSpec(name="definitely-not-a-real-eda-tool",
                       install_hint="Install it from the vendor's site.")
    with pytest.raises(ToolMissingError) as err:
        find_tool(missing)
    assert err.value.hint == "Install it from the vendor's site."
    script = tmp_path / "fake-sim"
    script.write_text("#!/bin/sh\necho 'banner line'\necho 'Fake Sim release 4.2.1 (c)'\n")
    script.chmod(0o755)
    spec = ToolSpec(name=str(script), version_args=("--version",),
                    version_pattern=r"release (\S+)")
    assert find_tool(spec).version == "4.2.1"
    assert find_tool(spec.model_copy(update={"version_pattern": None})).version == "banner line"


def test_a_configured_executable_keeps_its_declared_spec() -> None:
    assert tool_spec("/opt/eda/bin/iverilog", [YOSYS, ICARUS]) == ICARUS.using(
        "/opt/eda/bin/iverilog")
    assert tool_spec("/opt/eda/bin/iverilog", [ICARUS]).version_args == ("-V",)
    assert tool_spec("other", [ICARUS]) == ToolSpec(name="other")


def test_timeout_kills_the_whole_process_group(runner: SandboxRunner) -> None:
    tag = _unique_sleep()
    start = time.monotonic()
    with runner.workspace() as wd:
        run = runner.run(["sh", "-c", f"sleep {tag} & setsid sleep {tag} & wait"], cwd=wd,
                         timeout=0.5)
    assert run.timed_out and not run.ok
    assert time.monotonic() - start < 5
    time.sleep(0.2)
    assert not tagged(tag), "backgrounded (and setsid) grandchildren must be killed too"


def test_no_descendant_outlives_a_run_that_exits(runner: SandboxRunner) -> None:
    tag = _unique_sleep()
    with runner.workspace() as wd:
        run = runner.run(["sh", "-c", f"setsid sh -c 'sleep {tag}' & (sleep {tag} &); echo ok"],
                         cwd=wd)
    assert run.ok and run.stdout == "ok\n"
    time.sleep(0.2)
    assert not tagged(tag), "daemonised children must end with the run"


_sleep_ids = iter(range(1, 10**6))


def _unique_sleep() -> str:
    """A sleep duration (~30 s) no other process on the machine uses, to find it by."""
    return f"30.{os.getpid()}{next(_sleep_ids):06d}"


def test_output_flood_is_capped_and_killed(make_runner: MakeRunner) -> None:
    runner = make_runner(Limits(timeout_s=10, output_bytes=10_000))
    start = time.monotonic()
    with runner.workspace() as wd:
        run = runner.run(["yes", "flood"], cwd=wd)
    assert run.output_overflow and not run.ok
    assert len(run.stdout) <= 10_000
    assert time.monotonic() - start < 5


def test_file_size_limit_stops_disk_fill(make_runner: MakeRunner) -> None:
    runner = make_runner(Limits(timeout_s=10, file_size_mb=1))
    with runner.workspace() as wd:
        run = runner.run(["sh", "-c", "head -c 5000000 /dev/zero > big.bin"], cwd=wd)
        size = (wd / "big.bin").stat().st_size
    assert size <= 1024 * 1024
    assert not run.ok


def test_cpu_limit_applies(make_runner: MakeRunner) -> None:
    runner = make_runner(Limits(timeout_s=20, cpu_s=1))
    with runner.workspace() as wd:
        run = runner.run(["sh", "-c", "while :; do :; done"], cwd=wd)
    assert not run.timed_out, "the CPU rlimit, not the wall clock, should end it"
    assert run.signal is not None or run.returncode != 0


@pytest.mark.skipif(not network_isolation_prefix(), reason="platform forbids network namespaces")
def test_no_network_inside_the_sandbox(runner: SandboxRunner) -> None:
    with runner.workspace() as wd:
        run = runner.run(["cat", "/proc/net/dev"], cwd=wd)
    assert run.network_isolated
    interfaces = [line.split(":")[0].strip() for line in run.stdout.splitlines()[2:]]
    assert interfaces == ["lo"], interfaces


def test_environment_is_minimal(runner: SandboxRunner, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RTLFORGE_SECRET_TOKEN", "hunter2")
    with runner.workspace() as wd:
        run = runner.run(["env"], cwd=wd)
    assert "hunter2" not in run.stdout
    assert f"HOME={wd}" in run.stdout


def test_missing_tool_is_a_typed_error_with_install_hint(runner: SandboxRunner) -> None:
    with pytest.raises(ToolMissingError) as err:
        find_tool("definitely-not-a-real-eda-tool")
    assert "definitely-not-a-real-eda-tool" in str(err.value)
    with runner.workspace() as wd, pytest.raises(ToolMissingError):
        runner.run(["definitely-not-a-real-eda-tool"], cwd=wd)


def test_nonzero_exit_is_reported_not_raised(runner: SandboxRunner) -> None:
    with runner.workspace() as wd:
        run = runner.run(["sh", "-c", "echo oops >&2; exit 3"], cwd=wd)
    assert run.returncode == 3 and "oops" in run.stderr and not run.ok


def test_unknown_executables_are_never_probed_outside_the_sandbox(tmp_path: Path) -> None:
    """Asking an arbitrary binary for --version would run it unsandboxed."""
    marker = tmp_path / "ran"
    script = tmp_path / "not-a-known-tool"
    script.write_text(f"#!/bin/sh\ntouch {marker}\n")
    script.chmod(0o755)
    info = find_tool(str(script))
    assert info.version is None and not marker.exists()


def test_rlimits_are_set_hard_before_the_tool_starts(make_runner: MakeRunner) -> None:
    """The tool's own /proc/self/limits: soft and hard, so the tool cannot raise them back."""
    runner = make_runner(Limits(timeout_s=10, cpu_s=7, file_size_mb=3, address_space_mb=2048))
    with runner.workspace() as wd:
        run = runner.run(["cat", "/proc/self/limits"], cwd=wd)
    rows = {line[:26].strip(): line[26:].split()[:2] for line in run.stdout.splitlines()[1:]}
    assert rows["Max cpu time"] == ["7", "7"]
    assert rows["Max file size"] == [str(3 << 20)] * 2
    assert rows["Max address space"] == [str(2048 << 20)] * 2


def test_stdin_is_fed_and_a_new_session_is_started(runner: SandboxRunner) -> None:
    with runner.workspace() as wd:
        run = runner.run(["sh", "-c", "cat; ps -o sid= -o pgid= -p $$"], cwd=wd, stdin="in\n")
    assert run.ok and run.stdout.startswith("in\n")
    sid, pgid = run.stdout.split()[1:3]
    assert sid == pgid and int(sid) not in (os.getsid(0), os.getpgid(0))


def test_exec_failure_looks_the_same_in_both_modes(runner: SandboxRunner) -> None:
    with runner.workspace() as wd:
        script = wd / "bad-interpreter"
        script.write_text("#!/nonexistent/interpreter\n")
        script.chmod(0o755)
        run = runner.run([str(script)], cwd=wd)
    # Inside the jail bubblewrap reports the failed exec (exit 1) with the program's name.
    assert run.returncode == 1 and "bad-interpreter" in run.stderr


def test_missing_run_directory_is_a_sandbox_error(runner: SandboxRunner, tmp_path: Path) -> None:
    with pytest.raises(SandboxError):
        runner.run(["true"], cwd=tmp_path / "gone")


def test_many_threads_share_one_runner(runner: SandboxRunner) -> None:
    def one(i: int) -> None:
        with runner.workspace() as wd:
            run = runner.run(["sh", "-c", f"cat; echo out{i}; echo err{i} >&2; exit {i % 5}"],
                             cwd=wd, stdin=f"in{i}\n" if i % 2 else None)
        assert run.returncode == i % 5
        assert run.stdout == (f"in{i}\n" if i % 2 else "") + f"out{i}\n"
        assert run.stderr == f"err{i}\n"

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(one, range(50)))


def _spawner_pids() -> set[int]:
    """Our live spawner processes, found the way an operator would: by looking at /proc."""
    pids = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == os.getpid() and b"_spawner.py" in cmdline:
            pids.add(int(entry.name))
    return pids


def test_spawner_death_fails_the_run_in_flight_and_the_next_run_works() -> None:
    before = _spawner_pids()
    runner = SandboxRunner(Limits(timeout_s=30), persistent_jails=False)
    tag = _unique_sleep()
    outcome: list[BaseException | None] = []

    def in_flight() -> None:
        with runner.workspace() as wd:
            try:
                runner.run(["sh", "-c", f"sleep {tag} & wait"], cwd=wd)
                outcome.append(None)
            except SandboxError as exc:
                outcome.append(exc)

    thread = threading.Thread(target=in_flight)
    thread.start()
    deadline = time.monotonic() + 10
    while not tagged(tag) and time.monotonic() < deadline:
        time.sleep(0.02)
    (spawner,) = _spawner_pids() - before
    start = time.monotonic()
    os.kill(spawner, signal.SIGKILL)
    thread.join(10)
    assert isinstance(outcome[0], SandboxError), outcome
    assert time.monotonic() - start < 5, "the death must be noticed at once, not at the deadline"
    time.sleep(0.1)
    assert not tagged(tag), "the in-flight tool's group must be killed"
    with runner.workspace() as wd:
        assert runner.run(["echo", "again"], cwd=wd).stdout == "again\n"
    assert len(_spawner_pids() - before) == 1
    runner.close()


def test_no_process_outlives_the_runner(tmp_path: Path) -> None:
    before = _spawner_pids()
    runner = SandboxRunner(Limits(timeout_s=10), persistent_jails=False)
    with runner.workspace() as wd:
        runner.run(["true"], cwd=wd)
        runner.run(["true"], cwd=wd, limits=Limits(timeout_s=10, no_network=False))
    spawners = _spawner_pids() - before
    # In a jail the network is cut per run; without one the spawner lives in the empty netns.
    expected = 1 if runner.jail() is not None else (2 if network_isolation_prefix() else 1)
    assert len(spawners) == expected
    runner.close()
    assert not any(alive(pid) or Path(f"/proc/{pid}").exists() for pid in spawners)

    # the context manager closes too
    with SandboxRunner(persistent_jails=False) as scoped, scoped.workspace() as wd:
        scoped.run(["true"], cwd=wd)
    assert not _spawner_pids() - before

    collected = SandboxRunner(persistent_jails=False)
    with collected.workspace() as wd:
        collected.run(["true"], cwd=wd)
    del collected
    gc.collect()
    assert not _spawner_pids() - before, "a garbage-collected runner must stop its spawner"


@pytest.mark.slow
def test_spawner_retires_before_its_own_cpu_limit_and_runs_go_on() -> None:
    """The server shares the tools' CPU limit; it must hand over long before hitting it."""
    before = _spawner_pids()
    seen: set[int] = set()
    with SandboxRunner(Limits(timeout_s=10, cpu_s=1),
                       persistent_jails=False) as runner, runner.workspace() as wd:
        for i in range(20_000):  # ~4,000 launches use half a CPU second of the server's time
            assert runner.run(["true"], cwd=wd).ok
            if i % 250 == 0:
                seen |= _spawner_pids() - before
                if len(seen) > 1:
                    break
    assert len(seen) > 1, "the server should have retired and been replaced"
    assert not _spawner_pids() - before


def test_falls_back_to_the_wrapper_chain_when_no_spawner_can_start(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.executable", "/nonexistent/python")
    with SandboxRunner(Limits(timeout_s=10)) as runner, runner.workspace() as wd:
        run = runner.run(["echo", "fine"], cwd=wd)
        assert run.ok and run.stdout == "fine\n"
        assert not runner.use_spawner
