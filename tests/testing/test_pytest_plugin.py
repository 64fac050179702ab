"""The rtlforge pytest plugin, run the way a plugin author's suite runs it (pytester)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest
from conftest import REPO

pytest_plugins = ["pytester"]

PLUGIN = "rtlforge.testing.pytest_plugin"

#: A third party's test module: a validator of its own, checked with every fixture.
AUTHOR_TESTS = '''
import pytest

from rtlforge import hookimpl
from rtlforge.core.interfaces import Validator
from rtlforge.core.models import StageResult, Verdict
from rtlforge.testing import ScriptedRun, make_candidate, make_task, requires_tools

TASK = make_task("and2", ports=["input a", "input b", "output y"],
                 vectors=[{"a": 1, "b": 1, "y": 1}, {"a": 0, "b": 1, "y": 0}])


class MySim(Validator):
    """Compiles with "mysim-compile", runs "mysim-run" and reads its summary line."""

    name = "mysim"
    stage = "simulate"

    def validate(self, ctx):
        build = ctx.runner.run(["mysim-compile", "-o", "image", *ctx.design_files,
                                *ctx.testbench_files], cwd=ctx.workdir, timeout=ctx.timeout)
        if not build.ok:
            return StageResult(name=self.name, verdict=Verdict.ERROR, log=build.stderr)
        run = ctx.runner.run(["mysim-run", "image"], cwd=ctx.workdir, timeout=ctx.timeout)
        passed = "Mismatches: 0 " in run.stdout
        return StageResult(name=self.name, verdict=Verdict.PASS if passed else Verdict.FAIL)


class Plugin:
    @hookimpl
    def register_validators(self, register):
        register(MySim)


@pytest.fixture
def rtlforge_plugins():
    return [("mine", Plugin())]


def test_plugin_host_holds_only_my_plugin(plugin_host):
    assert plugin_host.names("validator") == ["mysim"]
    assert plugin_host.failures == {}


@pytest.mark.parametrize(("compile_rc", "stdout", "verdict"), [
    (0, "Mismatches: 0 in 2 samples", Verdict.PASS),
    (0, "Mismatches: 1 in 2 samples", Verdict.FAIL),
    (1, "", Verdict.ERROR),
])
def test_verdicts(fake_runner, validation_context, compile_rc, stdout, verdict):
    fake_runner.script["mysim-compile"] = ScriptedRun(returncode=compile_rc, stderr="oops")
    fake_runner.script["mysim-run"] = ScriptedRun(stdout=stdout)
    ctx = validation_context(TASK, make_candidate("module and2(input a, b, output y); endmodule"))
    assert MySim().validate(ctx).verdict is verdict


@requires_tools("surely-no-such-tool-on-path")
def test_skipped_without_the_tool():
    raise AssertionError("must not run")


@pytest.mark.requires_tools("sh")
def test_runs_with_the_tool():
    pass
'''

#: What a validator asked the fake runner for, written where the outer test can read it.
RECORDING_TESTS = '''
import json, os
from rtlforge.core.interfaces import Validator
from rtlforge.core.models import StageResult, Verdict
from rtlforge.testing import ScriptedRun, make_candidate, make_task


class Synth(Validator):
    name = "synth"
    stage = "synth"

    def validate(self, ctx):
        ctx.runner.run(["yosys", "-q", "-p", f"synth -top {ctx.top}", *ctx.design_files],
                       cwd=ctx.workdir, timeout=ctx.timeout, env={"YOSYS_FLAG": "1"})
        return StageResult(name=self.name, verdict=Verdict.PASS)


def test_record(fake_runner, validation_context):
    fake_runner.script["yosys"] = ScriptedRun()
    ctx = validation_context(make_task("top", ports=["input a", "output y"]),
                             make_candidate({"top.v": "module top(input a, output y); endmodule",
                                             "lib.v": "module lib; endmodule"}), timeout=9.5)
    Synth().validate(ctx)
    with open(os.environ["RECORD_TO"], "w") as fh:
        json.dump({"calls": [{"argv": list(c.argv), "cwd": str(c.cwd), "timeout": c.timeout,
                              "env": c.env} for c in fake_runner.calls],
                   "puts": [[p.role, p.names] for p in fake_runner.puts],
                   "workdir": str(ctx.workdir)}, fh)


def test_unscripted_tool(fake_runner, validation_context):
    ctx = validation_context(make_task("top"), make_candidate("module top; endmodule"))
    Synth().validate(ctx)
'''


def test_a_third_party_test_module_passes_with_the_fixtures(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_author=AUTHOR_TESTS)
    result = pytester.runpytest("-p", PLUGIN, "-rs")
    result.assert_outcomes(passed=5, skipped=1)
    result.stdout.fnmatch_lines(["*needs surely-no-such-tool-on-path on PATH*"])


def test_the_fake_runner_records_what_a_validator_asked_for(
        pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    record = tmp_path / "record.json"
    monkeypatch.setenv("RECORD_TO", str(record))
    pytester.makepyfile(test_recording=RECORDING_TESTS)
    result = pytester.runpytest("-p", PLUGIN)
    result.assert_outcomes(passed=1, failed=1)
    # The unscripted tool fails the author's test, naming the tool, instead of passing quietly.
    result.stdout.fnmatch_lines(["*UnscriptedToolError*'yosys'*script has no result*"])
    seen = json.loads(record.read_text())
    assert seen["calls"] == [{
        "argv": ["yosys", "-q", "-p", "synth -top top", "top.v", "lib.v"],
        "cwd": seen["workdir"], "timeout": 9.5, "env": {"YOSYS_FLAG": "1"},
    }]
    assert seen["puts"] == [["testbench", []], ["design", ["top.v", "lib.v"]],
                            ["testbench", []]]


def test_tiny_model_skips_with_a_reason_without_the_train_extra(
        pytester: pytest.Pytester) -> None:
    pytester.makeconftest("import sys\nsys.modules['torch'] = None  # as if not installed\n")
    pytester.makepyfile(test_tiny="def test_uses_it(tiny_model):\n    raise AssertionError\n")
    result = pytester.runpytest_subprocess("-p", PLUGIN, "-rs")
    result.assert_outcomes(skipped=1)
    assert "the tiny model needs torch: pip install 'rtlforge[train]'" in result.stdout.str()


def _fake_distribution(site: Path) -> None:
    """A dist-info carrying rtlforge's own pytest11 entry points, as an install writes it."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    entries = project["entry-points"]["pytest11"]
    dist = site / "rtlforge_pytest_probe-0.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: rtlforge-pytest-probe\n"
                                   "Version: 0.0\n")
    (dist / "entry_points.txt").write_text(
        "[pytest11]\n" + "".join(f"{name} = {value}\n" for name, value in entries.items()))


@pytest.mark.parametrize("also", [
    ["-p", PLUGIN],  # entry point and -p
    [],  # entry point alone
])
def test_the_entry_point_and_an_explicit_load_together(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, also: list[str]) -> None:
    site = pytester.path / "site"
    _fake_distribution(site)
    monkeypatch.setenv("PYTHONPATH", f"{site}:{REPO}")
    pytester.makeconftest(f"pytest_plugins = [{PLUGIN!r}]\n")  # and a conftest naming it
    pytester.makepyfile(test_twice="def test_fixture(fake_runner):\n    assert not "
                                   "fake_runner.calls\n")
    result = pytester.runpytest_subprocess(*also)
    result.assert_outcomes(passed=1)


def test_importing_the_plugin_loads_no_ml_framework() -> None:
    code = textwrap.dedent(f"""
        import sys, {PLUGIN}, rtlforge.testing
        rtlforge.testing.requires_tools  # the lazily imported names, too
        heavy = [m for m in ('torch', 'transformers', 'tokenizers') if m in sys.modules]
        assert not heavy, heavy
    """)
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
