"""The jail (rtlforge.sandbox.jail), workspaces, SandboxRunner.put and the bounded gate."""

from __future__ import annotations

import gc
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from rtlforge.cli import cli
from rtlforge.core.errors import (
    InvalidSourceError,
    IsolationUnavailableError,
    SandboxError,
    SecurityViolation,
)
from rtlforge.core.models import Candidate, SourceFile, Task, Verdict
from rtlforge.plugins.validators.iverilog import IverilogLint
from rtlforge.sandbox.jail import Jail, JailProbe
from rtlforge.sandbox.runner import Limits, SandboxRunner
from rtlforge.validate.pipeline import Pipeline

needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None,
                                 reason="bubblewrap is not installed")


@pytest.fixture(scope="module")
def runner() -> Iterator[SandboxRunner]:
    with SandboxRunner(Limits(timeout_s=20)) as r:
        yield r


def _sh(runner: SandboxRunner, script: str) -> tuple[int | None, str]:
    with runner.workspace() as wd:
        run = runner.run(["sh", "-c", script], cwd=wd)
    return run.returncode, run.output


# ------------------------------------------------------------------------------ the jail


@needs_bwrap
def test_jail_runs_as_nobody_without_capabilities_or_network(runner: SandboxRunner) -> None:
    rc, out = _sh(runner, "id -u; id -g; grep CapEff /proc/self/status; ls /sys/class/net "
                          "2>/dev/null || cat /proc/net/dev")
    assert rc == 0, out
    lines = out.split()
    assert lines[:2] == ["65534", "65534"]
    assert "CapEff:\t0000000000000000" in out
    assert "eth0" not in out and "ens" not in out  # only the loopback of an empty netns


@needs_bwrap
def test_jail_sees_only_system_dirs_and_its_own_run_directory(runner: SandboxRunner,
                                                              tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET")
    home_file = Path.home() / ".rtlforge-jail-probe"
    home_file.write_text("HOME-SECRET")
    try:
        with runner.workspace() as wd, runner.workspace() as other:
            (other / "neighbour.txt").write_text("NEIGHBOUR")
            run = runner.run(["sh", "-c", f"cat {secret} {home_file} {other}/neighbour.txt; "
                              f"ls {Path.cwd()}; ls /tmp; echo done"], cwd=wd)
        assert "done" in run.stdout
        for text in ("TOP-SECRET", "HOME-SECRET", "NEIGHBOUR", "pyproject.toml"):
            assert text not in run.output
    finally:
        home_file.unlink()


@needs_bwrap
def test_jail_cannot_write_outside_its_run_directory(runner: SandboxRunner,
                                                     tmp_path: Path) -> None:
    target = tmp_path / "outside"
    target.mkdir()
    with runner.workspace() as wd:
        run = runner.run(["sh", "-c", f"touch {target}/x /usr/x /x; echo inside > here.txt"],
                         cwd=wd)
        assert (wd / "here.txt").read_text() == "inside\n"
    assert run.stderr.count("touch:") == 3, run.stderr  # each write refused inside
    assert not list(target.iterdir())
    assert not Path("/usr/x").exists() and not Path("/x").exists()


def test_tools_run_only_in_live_workspaces(runner: SandboxRunner, tmp_path: Path) -> None:
    with pytest.raises(SandboxError, match="not a live workspace"):
        runner.run(["true"], cwd=tmp_path)
    with runner.workspace() as wd:
        pass
    with pytest.raises(SandboxError, match="not a live workspace"):
        runner.run(["true"], cwd=wd)


def test_unknown_isolation_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match="isolation"):
        SandboxRunner(isolation="chroot")
    monkeypatch.setenv("RTLFORGE_SANDBOX", "docker")
    with pytest.raises(ValueError, match="RTLFORGE_SANDBOX"):
        SandboxRunner()


def test_without_bubblewrap_untrusted_input_is_refused_loudly(
        monkeypatch: pytest.MonkeyPatch) -> None:
    real_which = shutil.which
    monkeypatch.setattr(shutil, "which",
                        lambda name, *a, **k: None if name == "bwrap" else real_which(name, *a,
                                                                                      **k))
    runner = SandboxRunner()
    with pytest.raises(IsolationUnavailableError, match="RTLFORGE_SANDBOX=none"):
        runner.jail()
    task = Task(id="t", spec="", top="m")
    report = Pipeline([IverilogLint()], runner=runner).validate(
        task, Candidate.from_source("module m; endmodule\n"))
    assert report.verdict is Verdict.INFRA_ERROR
    assert "bubblewrap" in report.feedback[0].message


def test_a_failed_jail_probe_says_why_in_bubblewraps_words_and_leaves_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    failing = subprocess.Popen(["sh", "-c", "echo 'bwrap: setting up uid map: Permission "
                                "denied' >&2; exit 1"], stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE)
    probe_dir = tmp_path / "probe"
    probe_dir.mkdir()
    probe = JailProbe(failing, probe_dir)
    for _ in range(2):  # asked again, the same answer
        with pytest.raises(IsolationUnavailableError,
                           match=r"setting up uid map: Permission denied.*RTLFORGE_SANDBOX=none"):
            probe.result()
    assert not probe_dir.exists()


@needs_bwrap
def test_a_jail_probe_never_asked_is_reaped_with_its_directory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    jail = Jail.discover(prove=False)
    probe = jail.start_probe()
    proc = probe._proc
    assert sum(p.name.startswith("rtlforge-probe-") for p in tmp_path.iterdir()) == 1
    del probe
    gc.collect()
    assert proc.returncode is not None  # waited for: no zombie left
    assert not any(p.name.startswith("rtlforge-probe-") for p in tmp_path.iterdir())
    jail.start_probe().result()  # and a proof on this machine succeeds


def test_explicit_opt_out_runs_without_a_jail(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RTLFORGE_SANDBOX", "none")
    with SandboxRunner() as runner, runner.workspace() as wd:
        assert runner.isolation == "none" and runner.jail() is None
        assert runner.run(["echo", "hi"], cwd=wd).stdout == "hi\n"


# ------------------------------------------------------------------------------ put


def test_put_normalises_line_endings_before_gate_and_tool(runner: SandboxRunner) -> None:
    with runner.workspace() as wd:
        (written,) = runner.put(wd, [SourceFile(name="a.v", content="module m;\r\nwire w;\r"
                                                "endmodule\r\n")], role="design")
        assert (wd / "a.v").read_bytes() == b"module m;\nwire w;\nendmodule\n"
        assert written.content == "module m;\nwire w;\nendmodule\n"


@pytest.mark.parametrize(("content", "why"), [
    ("module m; // \ud800\nendmodule\n", "lone surrogate"),
    ("module m;\0 endmodule\n", "NUL"),
    ("// x\n" * 1_000_001, "refused"),
])
def test_put_refuses_text_tools_would_misread(runner: SandboxRunner, content: str,
                                              why: str) -> None:
    with runner.workspace() as wd:
        with pytest.raises(InvalidSourceError, match=why) as info:
            runner.put(wd, [SourceFile(name="bad.v", content=content)], role="design")
        assert info.value.file == "bad.v" and "bad.v" in str(info.value)
        assert not (wd / "bad.v").exists()


def test_put_refuses_paths(runner: SandboxRunner) -> None:
    with runner.workspace() as wd, pytest.raises(InvalidSourceError, match="plain file name"):
        runner.put(wd, [SourceFile.model_construct(name="../x.v", content="")], role="design")


def test_files_written_behind_puts_back_are_gated_before_the_next_tool(
        runner: SandboxRunner) -> None:
    with runner.workspace() as wd:
        (wd / "sneaky.inc").write_text('initial $system("id");\n')
        with pytest.raises(SecurityViolation, match=r"\$system"):
            runner.run(["true"], cwd=wd)
        (wd / "sneaky.inc").write_text("// harmless now\n")
        assert runner.run(["true"], cwd=wd).ok
        # What a tool itself writes is its output: not gated on the next run.
        runner.run(["sh", "-c", "echo '$system' > out.txt"], cwd=wd)
        assert runner.run(["true"], cwd=wd).ok


def test_a_design_may_not_read_the_testbench(runner: SandboxRunner) -> None:
    task = Task(id="t", spec="", top="top_module", testbench=(SourceFile(
        name="tb.v", content="module tb; top_module d(); initial $display(\"ok\"); "
                             "endmodule\n"),))
    design = Candidate.from_source(
        'module top_module; reg [7:0] m [0:3]; initial $readmemh("tb.v", m); endmodule\n')
    report = Pipeline([IverilogLint()], runner=runner).validate(task, design)
    assert report.verdict is Verdict.FAIL
    assert report.stages[0].name == "security" and "tb.v" in report.feedback[0].message


def test_invalid_text_is_a_typed_error_not_a_crash(runner: SandboxRunner) -> None:
    task = Task(id="t", spec="", top="m")
    report = Pipeline([IverilogLint()], runner=runner).validate(
        task, Candidate.from_source('module m; initial $display("\udcff"); endmodule\n'))
    assert report.verdict is Verdict.ERROR
    assert report.feedback[0].category == "invalid_source"
    assert "design.v" in report.feedback[0].message


# ------------------------------------------------------------------------------ bounded gate


BOMB = "".join(f"`define M{i + 1} `M{i} `M{i} `M{i} `M{i}\n" for i in range(14))
BOMB = "`define M0 x x x x x x x x\n" + BOMB + "module m; wire w = `M14; endmodule\n"


def test_gate_refuses_expansion_bombs_within_its_budget() -> None:
    with SandboxRunner(gate_timeout_s=3) as runner, runner.workspace() as wd:
        start = time.monotonic()
        with pytest.raises(SecurityViolation, match=r"too large|too expensive"):
            runner.put(wd, [SourceFile(name="bomb.v", content=BOMB)], role="design")
        assert time.monotonic() - start < 10


def test_gate_that_runs_out_of_budget_says_too_expensive() -> None:
    # A budget no real check fits in: the worker is killed and the input refused, not hung.
    with SandboxRunner(gate_timeout_s=0.001) as runner, runner.workspace() as wd:
        with pytest.raises(SecurityViolation, match="too expensive to check") as info:
            runner.put(wd, [SourceFile(name="big.v", content="module m;\n" + "wire w;\n" *
                                       200_000 + "endmodule\n")], role="design")
        assert info.value.construct == "gate budget"


def test_gate_checks_in_another_process(runner: SandboxRunner) -> None:
    with runner.workspace() as wd:
        runner.put(wd, [SourceFile(name="a.v", content="module m; endmodule\n")],
                   role="design")
    worker = runner.gate._idle[0]
    assert worker.proc.pid != os.getpid() and worker.proc.poll() is None


# ------------------------------------------------------------------------------ doctor


@needs_bwrap
def test_doctor_reports_a_working_jail() -> None:
    result = CliRunner().invoke(cli, ["doctor", "--json"])
    assert result.exit_code == 0, result.output
    import json

    report = json.loads(result.output.strip().splitlines()[-1])
    assert report["sandbox"] == "ok" and report["uid_inside"] == "65534"
    assert report["gate"] == "ok"


@pytest.mark.parametrize(("design", "says"), [
    ('`define S system\nmodule top_module; initial $`S("id"); endmodule\n', "space"),
    ("module top_module; initial force tb.errors = 0; endmodule\n", "own ports"),
])
def test_refusals_tell_the_author_what_to_change(runner: SandboxRunner, design: str,
                                                 says: str) -> None:
    task = Task(id="t", spec="", top="top_module", testbench=(SourceFile(
        name="tb.v", content="module tb; integer errors; top_module dut(); endmodule\n"),))
    report = Pipeline([IverilogLint()], runner=runner).validate(
        task, Candidate.from_source(design))
    assert report.verdict is Verdict.FAIL and report.stages[0].name == "security"
    assert says in (report.feedback[0].hint or "")


_RELATIVE_RUN = """
from rtlforge.core.models import Candidate, Task
from rtlforge.core.plugins import PluginHost
from rtlforge.validate.pipeline import Pipeline
from rtlforge.sandbox.jail import interpreter
import sys
tb = '''module tb; reg a; wire y; inv dut(.a(a), .y(y));
initial begin a = 0; #1 $display("Mismatches: %0d in 1 samples", y !== 1); $finish; end
endmodule'''
task = Task(id="inv", spec="", top="inv",
            testbench=({"name": "tb.v", "content": tb},))
report = Pipeline.build(PluginHost.default()).validate(task, Candidate.from_source(
    "module inv(input a, output y); assign y = ~a; endmodule\\n"))
print(sys.executable, interpreter(), report.verdict.value, [f.message for f in report.feedback])
"""


@pytest.mark.tools
def test_python_started_by_a_relative_path_still_runs_in_the_jail(tmp_path: Path) -> None:
    """``../venv/bin/python x.py`` leaves ``..`` through the caller's directory in
    sys.executable, a directory no jail mounts: every jailed Python (gate, drivers) failed."""
    import subprocess
    import sys

    here = tmp_path / "work"
    here.mkdir()
    relative = os.path.relpath(sys.executable, here)
    assert relative.startswith("..")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    proc = subprocess.run([relative, "-c", _RELATIVE_RUN], cwd=here, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    started_by, resolved, verdict = proc.stdout.split()[:3]
    assert ".." in started_by and ".." not in resolved
    assert verdict == "pass", proc.stdout
