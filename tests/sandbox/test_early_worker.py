"""A gate worker started before the runner (what `rtlforge validate` does first): it runs under
the same jail, limits, environment and command line the runner would give it; an adopted one
answers the first check with no other worker started; one that never got ready, or one the
runner would not use, changes nothing but the time; and none outlives its runner or the
process. The oracles are the command lines actually handed to ``Popen``, the workers actually
started, the process table and the directory listing."""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Any

import pytest

from rtlforge.core.errors import IsolationUnavailableError, SecurityViolation
from rtlforge.core.models import SourceFile
from rtlforge.sandbox import gate as gate_module
from rtlforge.sandbox.gate import EarlyWorker
from rtlforge.sandbox.jail import Jail, JailProbe
from rtlforge.sandbox.runner import Limits, SandboxRunner

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")

CLEAN = [SourceFile(name="a.v", content="module a; endmodule\n")]
UNSAFE = [SourceFile(name="a.v", content='module a; initial $system("id"); endmodule\n')]


def _runner_starts(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The threads gate workers are started on through a runner (not adopted ones)."""
    made: list[int] = []
    real = gate_module._Worker.start.__func__  # type: ignore[attr-defined]

    def start(cls: type, runner: SandboxRunner, memory_mb: int) -> object:
        made.append(threading.get_ident())
        return real(cls, runner, memory_mb)

    monkeypatch.setattr(gate_module._Worker, "start", classmethod(start))
    return made


def _gate_popens(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """Every ``Popen`` of a gate worker: its argv, environment and pipes (its run directory as
    ``RUN``, the jail's private ``/dev`` directory, one per jail as root, as ``DEV``)."""
    seen: list[dict[str, Any]] = []
    real = subprocess.Popen

    def recording(argv: list[str], *args: Any, **kwargs: Any) -> Any:
        if any("_gate_worker" in str(a) for a in argv):
            run = str(kwargs["cwd"])
            seen.append({
                "argv": [re.sub(r"rtlforge-dev-[^/]+", "DEV", str(a).replace(run, "RUN"))
                         for a in argv],
                "env": {k: v.replace(run, "RUN") for k, v in kwargs["env"].items()},
                "pipes": (kwargs.get("stdin"), kwargs.get("stdout"), kwargs.get("stderr")),
                "session": kwargs.get("start_new_session"),
            })
        return real(argv, *args, **kwargs)

    monkeypatch.setattr(subprocess, "Popen", recording)
    return seen


def _alive(proc: subprocess.Popen[bytes]) -> bool:
    return proc.poll() is None


def test_an_early_worker_starts_exactly_as_the_runner_would_start_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _gate_popens(monkeypatch)
    early = EarlyWorker.start(base_dir=tmp_path)
    assert early is not None
    early.close()
    with SandboxRunner(Limits(timeout_s=10), base_dir=tmp_path) as runner:
        runner.gate.check(CLEAN, role="design")  # the runner starts its own worker
    assert len(seen) == 2
    assert seen[0] == seen[1]
    argv = seen[0]["argv"]
    assert "--as=2147483648" in argv and "--cpu=36000" in argv  # the gate's memory and CPU
    assert argv[argv.index("--bind") + 1] == "RUN"  # the worker's run directory, nothing else
    assert list(tmp_path.iterdir()) == []


def test_an_adopted_worker_answers_the_first_checks_and_no_other_starts(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    made = _runner_starts(monkeypatch)
    early = EarlyWorker.start(base_dir=tmp_path)
    assert early is not None
    proc = early.worker.proc
    with SandboxRunner(Limits(timeout_s=10), base_dir=tmp_path) as runner:
        runner.adopt(early)
        assert runner.jail() is early.jail  # no second discovery
        runner.gate.check(CLEAN, role="design")
        with pytest.raises(SecurityViolation, match=r"\$system"):
            runner.gate.check(UNSAFE, role="design")
        runner.prestart()  # a worker is idle: the prestart starts none
        with runner.workspace() as wd:
            runner.put(wd, CLEAN, role="design")
            assert runner.run(["true"], cwd=wd).ok
        assert made == []
        assert _alive(proc)
    assert not _alive(proc)
    assert list(tmp_path.iterdir()) == []


def test_an_early_worker_that_never_got_ready_is_replaced_and_judges_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    made = _runner_starts(monkeypatch)
    with monkeypatch.context() as patch:  # a worker that exits before it says it is ready
        patch.setattr(gate_module, "_worker_code", lambda: "import sys; sys.exit(3)")
        early = EarlyWorker.start(base_dir=tmp_path)
    assert early is not None
    assert early.worker.proc.wait(timeout=20) == 3
    with SandboxRunner(Limits(timeout_s=10), base_dir=tmp_path) as runner:
        runner.adopt(early)
        runner.gate.check(CLEAN, role="design")  # not "too expensive to check": a new worker
        with pytest.raises(SecurityViolation):
            runner.gate.check(UNSAFE, role="design")
        assert len(made) == 1
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("runner_kwargs", [{"unsafe_skip_gate": True},
                                           {"gate_memory_mb": 1024}])
def test_a_worker_the_runner_would_not_use_is_closed(tmp_path: Path,
                                                     runner_kwargs: dict[str, Any]) -> None:
    early = EarlyWorker.start(base_dir=tmp_path)
    assert early is not None
    proc = early.worker.proc
    with SandboxRunner(Limits(timeout_s=10), base_dir=tmp_path, **runner_kwargs) as runner:
        runner.adopt(early)
        assert not _alive(proc)
        assert list(tmp_path.glob("rtlforge-gate-*")) == []


def test_no_early_worker_where_isolation_is_off(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RTLFORGE_SANDBOX", "none")
    assert EarlyWorker.start(base_dir=tmp_path) is None
    assert list(tmp_path.iterdir()) == []


def _failing_probe(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Every jail probe fails the way bubblewrap does without user namespaces."""
    def start_probe(self: Jail) -> JailProbe:
        probe_dir = Path(tempfile.mkdtemp(dir=tmp_path, prefix="probe-"))
        proc = subprocess.Popen(
            ["sh", "-c", "echo 'bwrap: No permissions to create new namespace' >&2; exit 1"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        return JailProbe(proc, probe_dir)

    monkeypatch.setattr(Jail, "start_probe", start_probe)


def test_a_worker_whose_jail_failed_its_probe_is_closed_and_the_runner_says_why(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _failing_probe(monkeypatch, tmp_path)
    early = EarlyWorker.start(base_dir=tmp_path)
    assert early is not None  # started before the probe's answer: it is not waited for
    proc = early.worker.proc
    assert not early.proven()
    with SandboxRunner(Limits(timeout_s=10), base_dir=tmp_path) as runner:
        runner.adopt(early)
        assert not _alive(proc)
        with pytest.raises(IsolationUnavailableError, match="No permissions to create new"):
            runner.jail()  # its own probe fails the same way: bubblewrap's words
    assert list(tmp_path.iterdir()) == []
