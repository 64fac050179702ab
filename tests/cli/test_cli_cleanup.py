"""A CLI run stopped by its timeout, by SIGTERM or by Ctrl-C leaves nothing behind: no run
directory under the runner's base directory (TMPDIR here) and no process working in one; and
host-side work on a task's text (its pass-rule regex) is bounded, so ``--timeout`` holds.

The CLI runs as a real subprocess: signals and interpreter exit are the point.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rtlforge.testing import skip_unless_tools

pytestmark = pytest.mark.tools

REPO = Path(__file__).parents[2]
DESIGN = ("module top_module(input [7:0] a, input [7:0] b, output [8:0] sum);\n"
          "  assign sum = a + b;\nendmodule\n")
#: Never calls $finish: the simulation runs until the runner's timeout (or a signal) stops it.
ENDLESS_TB = """module tb;
  reg [7:0] a, b; wire [8:0] sum;
  top_module dut(.a(a), .b(b), .sum(sum));
  initial begin a = 1; b = 2; end
  always #1 a = a + 1;
endmodule
"""
#: Prints a line on which a backtracking engine takes 2^90 steps for ``^(a+)+$``.
REDOS_TB = """module tb;
  reg [7:0] a, b; wire [8:0] sum;
  top_module dut(.a(a), .b(b), .sum(sum));
  initial begin
    a = 1; b = 2; #1;
    $display("%s!", {90{"a"}});
    $display("ALL OK");
    $finish;
  end
endmodule
"""


def _cli(base: Path, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "TMPDIR": str(base), "PYTHONPATH": str(REPO)}
    return subprocess.Popen([sys.executable, "-m", "rtlforge.cli", *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _left_in(base: Path) -> list[str]:
    """Run directories under ``base``, and live processes whose working directory is in one."""
    left = [p.name for p in base.iterdir()]
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cwd = os.readlink(entry / "cwd")
            state = (entry / "status").read_text()
        except OSError:
            continue
        if cwd.startswith(str(base) + os.sep) and "\nState:\tZ" not in state:
            left.append(f"process {entry.name} in {cwd}")
    return left


def _settled(base: Path, seconds: float = 5.0) -> list[str]:
    deadline = time.monotonic() + seconds
    while (left := _left_in(base)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


def _files(tmp_path: Path, testbench: str) -> tuple[Path, Path]:
    (tmp_path / "design.v").write_text(DESIGN)
    (tmp_path / "tb.v").write_text(testbench)
    base = tmp_path / "runs"
    base.mkdir()
    return base, tmp_path


def _simulating(base: Path, seconds: float = 60.0) -> bool:
    """True once a run directory holds the compiled simulation (vvp is then starting)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        # os.walk skips a directory removed while it looks (the jail probe's is short-lived);
        # Path.glob raises FileNotFoundError then
        if any(".rtlforge-sim.vvp" in files for _, _, files in os.walk(base)):
            time.sleep(0.5)
            return True
        time.sleep(0.05)
    return False


def test_a_run_stopped_by_its_timeout_leaves_nothing(tmp_path: Path) -> None:
    skip_unless_tools("iverilog", "vvp")
    base, folder = _files(tmp_path, ENDLESS_TB)
    proc = _cli(base, "validate", "--testbench", str(folder / "tb.v"),
                str(folder / "design.v"), "--timeout", "1", "--json")
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 1, err  # a design verdict (timeout), not a crash
    assert '"timeout"' in out
    assert _settled(base) == []


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_a_run_stopped_by_a_signal_leaves_nothing(tmp_path: Path, signum: int) -> None:
    skip_unless_tools("iverilog", "vvp")
    base, folder = _files(tmp_path, ENDLESS_TB)
    proc = _cli(base, "validate", "--testbench", str(folder / "tb.v"),
                str(folder / "design.v"), "--timeout", "60")
    try:
        assert _simulating(base), "the simulation never started"
        assert _left_in(base), "nothing to clean up: the test would prove nothing"
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode != 0
    assert "Traceback" not in err
    assert _settled(base) == []


def test_a_backtracking_pass_rule_cannot_hold_the_host_past_the_timeout(tmp_path: Path) -> None:
    """``^(a+)+$`` against 90 a's and a '!' takes a backtracking engine ~2^90 steps: it ran
    past 90 s with ``--timeout 5``. In the linear-time engine the whole run takes seconds."""
    skip_unless_tools("iverilog", "vvp")
    base, folder = _files(tmp_path, REDOS_TB)
    (folder / "task.toml").write_text(
        'id = "redos"\ntop = "top_module"\nspec = "adder"\ntestbench = ["tb.v"]\n\n'
        "[pass_rule]\nkind = \"regex\"\npass_regex = '^ALL OK$'\nfail_regex = '^(a+)+$'\n")
    start = time.monotonic()
    proc = _cli(base, "validate", "--task", str(folder), str(folder / "design.v"),
                "--timeout", "5", "--json")
    try:
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert time.monotonic() - start < 30
    assert proc.returncode == 0, err
    assert '"verdict": "pass"' in out
    assert _settled(base) == []


PASSING_TB = """module tb;
  reg [7:0] a, b; wire [8:0] sum;
  top_module dut(.a(a), .b(b), .sum(sum));
  initial begin
    a = 200; b = 100; #1;
    if (sum !== 9'd300) $display("STATUS: FAIL sum=%0d", sum); else $display("STATUS: PASS");
    $finish;
  end
endmodule
"""


@pytest.mark.parametrize(("design", "code"), [(DESIGN, 0),
                                              (DESIGN.replace("a + b", "a - b"), 1)])
def test_a_finished_run_ends_without_teardown_yet_leaves_nothing(tmp_path: Path, design: str,
                                                                 code: int) -> None:
    """`validate` ends its process without the interpreter's teardown (``cmdline.Finished``):
    the exit handlers still remove every run directory and end every jail and gate worker,
    the exit code is the verdict's and the piped output is whole."""
    import json

    skip_unless_tools("iverilog", "vvp")
    base, folder = _files(tmp_path, PASSING_TB)
    (folder / "design.v").write_text(design)
    proc = _cli(base, "validate", "--testbench", str(folder / "tb.v"), str(folder / "design.v"),
                "--json")
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == code, err
    assert json.loads(out)["verdict"] == ("pass" if code == 0 else "fail")
    assert _settled(base) == []  # a jail's inner process ends with its bubblewrap, shortly


def test_a_live_thread_gets_the_normal_exit(monkeypatch: pytest.MonkeyPatch) -> None:
    """Python waits for a non-daemon thread at exit; ending the process at once would cut it
    short, so the quick end steps aside and raises the usual ``SystemExit``."""
    import threading

    from rtlforge import cli

    ended: list[int] = []
    monkeypatch.setattr(cli.os, "_exit", ended.append)
    release = threading.Event()
    worker = threading.Thread(target=release.wait)
    worker.start()
    try:
        with pytest.raises(SystemExit) as exited:
            cli._end_now(1)
        assert exited.value.code == 1 and ended == []
    finally:
        release.set()
        worker.join()
