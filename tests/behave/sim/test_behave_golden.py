"""Goldens and agents' models are DSL files: checked, fitted to the interface, interpreted."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from rtlforge.behave.sim.check import check_model
from rtlforge.behave.sim.golden import (
    GoldenUnavailable,
    TaskModelError,
    golden_model,
    load_task_model,
)
from rtlforge.behave.sim.stimulus import StimulusConfig
from rtlforge.behave.sim.task import load_behave_task

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "behave"
SMALL = StimulusConfig(sequences=4, transactions=20)

#: An agent's rv_accum model with the 9-bit accumulator bug (sums wrap at 512).
WRAPS9 = '''
from rtlforge.behave.model.dsl import *


class Out(Record):
    out_sum: UInt[10]


class Mine(Model):
    total: UInt[9]
    seen: UInt[2]

    def reset(self):
        self.total = 0
        self.seen = 0

    def process(self, in_data: UInt[8]) -> Out:
        self.total = wrap(self.total + in_data, 9)
        if self.seen == 3:
            self.seen = 0
            out = self.total
            self.total = 0
            return Out(out_sum=out)
        self.seen = wrap(self.seen + 1, 2)
        return
'''


def test_bundled_goldens_are_dsl_models() -> None:
    for name in ("add8", "counter_cfg", "rv_accum"):
        task = load_behave_task(EXAMPLES / name)
        model = golden_model(task)
        assert set(model.inputs) == {e.name for e in task.input_endpoints}
        assert check_model(task, model, stimulus=SMALL).verdict == "pass"


def test_an_agents_model_is_checked_against_the_golden() -> None:
    task = load_behave_task(EXAMPLES / "rv_accum")
    result = check_model(task, load_task_model(task, WRAPS9), stimulus=SMALL)
    assert result.verdict == "fail" and result.first_failure is not None
    first = result.first_failure
    assert first.kind == "value" and first.expected["out_sum"] > 511
    assert first.observed == {"out_sum": first.expected["out_sum"] - 512}
    right = WRAPS9.replace("UInt[9]", "UInt[10]").replace("wrap(self.total + in_data, 9)",
                                                           "self.total + in_data")
    assert check_model(task, load_task_model(task, right), stimulus=SMALL).verdict == "pass"


def test_model_outside_the_dsl_names_line_and_construct() -> None:
    task = load_behave_task(EXAMPLES / "rv_accum")
    with pytest.raises(TaskModelError) as info:
        load_task_model(task, WRAPS9.replace("        return\n", "        while True:\n"
                                             "            pass\n"))
    lines = WRAPS9.splitlines()
    assert info.value.line == lines.index("        return") + 1
    assert info.value.construct == "while" and "while" in str(info.value)


def test_model_that_does_not_fit_the_interface() -> None:
    task = load_behave_task(EXAMPLES / "rv_accum")
    with pytest.raises(TaskModelError) as info:
        load_task_model(task, WRAPS9.replace("in_data", "x").replace("UInt[10]", "UInt[11]"))
    text = str(info.value)
    assert info.value.construct == "interface"
    assert "`x` is not an input endpoint" in text and "`in_data` is missing" in text
    assert "`out_sum` is uint11, the task declares uint10" in text


def test_golden_that_does_not_check_is_a_task_error(tmp_path: Path) -> None:
    shutil.copytree(EXAMPLES / "add8", tmp_path / "add8")
    golden = tmp_path / "add8" / "golden.py"
    golden.write_text(golden.read_text().replace("return AddOut(sum=a + b)",
                                                 "return AddOut(sum=eval('a'))"))
    task = load_behave_task(tmp_path / "add8")
    with pytest.raises(GoldenUnavailable) as info:
        golden_model(task)
    assert info.value.field == "golden" and info.value.line == 16
    assert "eval" in str(info.value) and "golden.py:16" in str(info.value)
    result = check_model(task, golden_model(load_behave_task(EXAMPLES / "add8")),
                         stimulus=SMALL)
    assert result.verdict == "infra_error" and "eval" in result.message


def test_golden_branch_goal_coverage() -> None:
    task = load_behave_task(EXAMPLES / "counter_cfg")
    cov = check_model(task, golden_model(task), stimulus=SMALL).coverage
    # `if en:` and `if at_limit:`: two sites, four outcomes; random stimulus takes them all
    assert cov.goals_total == 4 and cov.goals_hit == 4 and cov.unhit_goals == ()
    assert cov.branch_goals == {"process:L22:T": True, "process:L22:F": True,
                                "process:L23:T": True, "process:L23:F": True}
    # one transaction takes one side of `if en:` and at most one of `if at_limit:`
    one = check_model(task, golden_model(task), stimulus=StimulusConfig(
        sequences=1, transactions=1, edge_sweep=False)).coverage
    assert one.goals_total == 4
    assert one.goals_hit is not None and 1 <= one.goals_hit <= 2
    assert len(one.unhit_goals) == 4 - one.goals_hit
    assert [one.branch_goals[g] for g in ("process:L22:T", "process:L22:F")].count(True) == 1
