"""The sandboxed runner: timeouts, group kill, rlimits, output cap, network, missing tools."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from rtlforge.core.errors import ToolMissingError
from rtlforge.core.runner import Limits, SandboxRunner, find_tool, network_isolation_prefix


@pytest.fixture
def runner() -> SandboxRunner:
    return SandboxRunner(Limits(timeout_s=10))


def test_runs_tool_in_its_directory_and_records_it(runner: SandboxRunner) -> None:
    with runner.workspace() as wd:
        (wd / "hello.txt").write_text("hi")
        run = runner.run(["cat", "hello.txt"], cwd=wd)
    assert run.ok and run.stdout == "hi"
    assert run.tool is not None and run.tool.name == "cat" and run.tool.path
    assert not wd.exists(), "workspace must be removed afterwards"


@pytest.mark.tools
def test_known_tools_record_their_version() -> None:
    assert "Icarus Verilog" in (find_tool("iverilog").version or "")
    assert "Yosys" in (find_tool("yosys").version or "")


def test_timeout_kills_the_whole_process_group(runner: SandboxRunner, tmp_path: Path) -> None:
    marker = tmp_path / "grandchild.pid"
    script = f"sleep 30 & echo $! > {marker}; wait"
    start = time.monotonic()
    with runner.workspace() as wd:
        run = runner.run(["sh", "-c", script], cwd=wd, timeout=0.5)
    assert run.timed_out and not run.ok
    assert time.monotonic() - start < 5
    pid = int(marker.read_text())
    time.sleep(0.1)
    assert not _alive(pid), "the backgrounded grandchild must be killed too"


def _alive(pid: int) -> bool:
    """True if the process exists and is not a zombie waiting for an absent reaper."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "\nState:\tZ" not in status


def test_output_flood_is_capped_and_killed(tmp_path: Path) -> None:
    runner = SandboxRunner(Limits(timeout_s=10, output_bytes=10_000))
    start = time.monotonic()
    with runner.workspace() as wd:
        run = runner.run(["yes", "flood"], cwd=wd)
    assert run.output_overflow and not run.ok
    assert len(run.stdout) <= 10_000
    assert time.monotonic() - start < 5


def test_file_size_limit_stops_disk_fill() -> None:
    runner = SandboxRunner(Limits(timeout_s=10, file_size_mb=1))
    with runner.workspace() as wd:
        run = runner.run(["sh", "-c", "head -c 5000000 /dev/zero > big.bin"], cwd=wd)
        size = (wd / "big.bin").stat().st_size
    assert size <= 1024 * 1024
    assert not run.ok


def test_cpu_limit_applies() -> None:
    runner = SandboxRunner(Limits(timeout_s=20, cpu_s=1))
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
