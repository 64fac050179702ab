"""`rtlforge behave check` / `check-model`: verdicts, JSON, exit codes, the plugin hook."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from rtlforge.behave import plugin
from rtlforge.behave.cli import behave
from rtlforge.behave.model import load_model
from rtlforge.behave.sim.golden import goal_report
from rtlforge.core.plugins import PluginHost

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "behave"
SMALL = ["--sequences", "3", "--transactions", "20"]


def _run(*args: str | Path) -> tuple[int, str]:
    result = CliRunner().invoke(behave, [str(a) for a in args])
    return result.exit_code, result.output


def test_plugin_registers_the_group() -> None:
    host = PluginHost(load_entrypoints=False, plugins=[("behave", plugin)])
    group = click.Group("rtlforge")
    for impl in host.pm.hook.register_commands.get_hookimpls():
        impl.function(cli=group)
    assert set(group.commands["behave"].commands) >= {"check", "check-model", "agent",
                                                       "area-time"}


@pytest.mark.tools
@pytest.mark.requires_tools("iverilog", "vvp")
def test_check_rtl_pass_and_fail() -> None:
    code, out = _run("check", EXAMPLES / "rv_accum" / "slow.v", "--task", EXAMPLES / "rv_accum",
                     "--json", *SMALL)
    data = json.loads(out)
    assert code == 0 and data["verdict"] == "pass" and data["first_failure"] is None
    assert data["goals"]["total"] == 2 and data["coverage"]["completed"] > 0
    code, out = _run("check", EXAMPLES / "add8" / "wrong_nocarry.v", "--task",
                     EXAMPLES / "add8", "--json", *SMALL)
    data = json.loads(out)
    assert code == 1 and data["verdict"] == "fail" and data["mismatches"] > 0
    first = data["first_failure"]
    a, b = first["inputs"]["a"], first["inputs"]["b"]
    assert first["expected"] == {"sum": a + b} and first["observed"] == {"sum": (a + b) % 256}


def test_check_model_pass_json() -> None:
    code, out = _run("check-model", EXAMPLES / "rv_accum" / "golden.py", "--task",
                     EXAMPLES / "rv_accum", "--json", *SMALL)
    data = json.loads(out)
    assert code == 0 and data["verdict"] == "pass" and data["artifact"] == "model"
    assert set(data) >= {"verdict", "mismatches", "first_failure", "coverage", "goals"}
    assert data["goals"]["hit"] == ["process:L20:T", "process:L20:F"]
    assert data["goals"]["unresolved"] == [] == data["goals"]["bounded_unreachable"]


def test_check_model_fail_shows_first_failure(tmp_path: Path) -> None:
    wrong = tmp_path / "mine.py"
    wrong.write_text((EXAMPLES / "add8" / "golden.py").read_text()
                     .replace("sum=a + b", "sum=wrap(a + b, 8)"))
    code, out = _run("check-model", wrong, "--task", EXAMPLES / "add8", *SMALL)
    assert code == 1 and "verdict: fail" in out and "expected {'sum':" in out


def test_bad_task_dir_is_usage(tmp_path: Path) -> None:
    code, out = _run("check-model", EXAMPLES / "add8" / "golden.py", "--task", tmp_path)
    assert code == 2 and "behave.toml" in out


def test_model_that_does_not_check_is_an_error_verdict_with_line(tmp_path: Path) -> None:
    """The model under test is the artifact: like a design that does not compile under
    `rtlforge validate`, it gets verdict error (exit 1), not a usage error."""
    bad = tmp_path / "mine.py"
    bad.write_text((EXAMPLES / "add8" / "golden.py").read_text()
                   .replace("return AddOut(sum=a + b)", "return AddOut(sum=open('x'))"))
    code, out = _run("check-model", bad, "--task", EXAMPLES / "add8", "--json")
    result = json.loads(out)
    assert code == 1 and result["verdict"] == "error"
    assert "line 16" in result["message"] and "open" in result["message"]


def test_golden_that_does_not_check_is_usage(tmp_path: Path) -> None:
    shutil.copytree(EXAMPLES / "add8", tmp_path / "add8")
    golden = tmp_path / "add8" / "golden.py"
    golden.write_text(golden.read_text().replace("class AddOut(Record):",
                                                 "import os\n\nclass AddOut(Record):"))
    code, out = _run("check-model", EXAMPLES / "add8" / "golden.py", "--task",
                     tmp_path / "add8")
    assert code == 2 and "golden" in out and "import" in out


COUNT16 = '''
class Out(Record):
    top: Bool


class Count(Model):
    n: UInt[4]

    def reset(self):
        self.n = 0

    def process(self, en: Bool) -> Out:
        if en:
            self.n = wrap(self.n + 1, 4)
        if self.n == 15:
            return Out(top=True)
        return Out(top=False)
'''


def test_goal_report_proves_bounded_unreachable() -> None:
    pytest.importorskip("z3")
    model = load_model(COUNT16)
    sim = model.instance()
    sim.clear_coverage()
    sim.process({"en": True})
    hit = sim.hit_goals()
    goals = {g.name: (g.site, g.outcome) in hit for g in model.goals()}
    # one transaction took `if en:` true and `if n == 15:` false; `en` false was not tried
    # (reachable in one step) and n == 15 needs 15 counting steps from reset (not in 4)
    report = goal_report(model, goals, budget_s=5.0, steps=4, timeout_ms=2000)
    assert report.total == 4 and set(report.hit) == {"process:L13:T", "process:L15:F"}
    assert report.bounded_unreachable == ("process:L15:T",)
    assert report.unresolved == ("process:L13:F",) and report.steps == 4
    off = goal_report(model, goals, budget_s=0)
    assert off.solver == "off" and len(off.unresolved) == 2 and off.bounded_unreachable == ()
