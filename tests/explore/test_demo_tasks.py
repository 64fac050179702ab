"""The explore demo's tasks trade off after synthesis: its front is not one point.

At 8 bits the ``+``, ripple and carry-lookahead adders of ``add8_carry`` map to one netlist on
the generic liberty, so the demo used to show a collapsed front. The demo's ``add32`` answers
are measured here with the default estimator, as ``make demo`` measures them, and read with the
report's own findings: the ``+`` and ripple adders still collapse (and the report says so), and
the Kogge-Stone adder trades area and power for delay against them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rtlforge.core.extract import extract_verilog
from rtlforge.core.models import Candidate
from rtlforge.core.plugins import PluginHost
from rtlforge.evaluation.evaluate import PPAMeasure, SampleDetail
from rtlforge.evaluation.findings import find
from rtlforge.sandbox.runner import SandboxRunner

ROOT = Path(__file__).resolve().parents[2]
RECORDED = ROOT / "examples" / "explore" / "recorded.jsonl"
DEMO_TASKS = ("add32", "mul8u", "seq_det_1011", "traffic_light")


def test_the_demo_explores_tasks_that_are_recorded() -> None:
    makefile = (ROOT / "Makefile").read_text()
    demo = makefile[makefile.index("rtlforge explore"):].split("--method")[0]
    assert [t for t in DEMO_TASKS if f"--task {t}" in demo] == list(DEMO_TASKS)
    recorded = {json.loads(x)["task_id"] for x in RECORDED.read_text().splitlines()}
    assert set(DEMO_TASKS) <= recorded


@pytest.mark.tools
@pytest.mark.requires_tools("yosys", "sta")
def test_the_demo_adders_trade_off_after_synthesis() -> None:
    lines = [json.loads(x) for x in RECORDED.read_text().splitlines()]
    pareto = sorted((x for x in lines if x["task_id"] == "add32" and x["method"] == "pareto"),
                    key=lambda x: x["iteration"])
    assert [x["note"] for x in pareto] == ["add32_plus", "add32_ripple", "add32_kogge_stone",
                                           "add32_carry_select"]
    estimator = PluginHost().create("ppa_estimator", "yosys-sta")
    runner = SandboxRunner()
    try:
        details = []
        for x in pareto:
            code = extract_verilog(x["completion"])
            ppa = estimator.estimate(Candidate.from_source(code), "add32", runner)
            details.append(SampleDetail(
                index=x["iteration"], task_id="add32", method="pareto", trial=1,
                iteration=x["iteration"], verdict="pass", code=code, source=x["note"],
                ppa=PPAMeasure(ppa=ppa)))
    finally:
        runner.close()
    findings = find(details, None)
    by_note = {g.members[0].source: g for g in findings.groups}
    plus = by_note["add32_plus"]
    # + and ripple: two designs, one netlist (the report's collapse note)
    assert [d.source for d in plus.members] == ["add32_plus", "add32_ripple"]
    assert plus.collapsed and findings.collapsed == (plus,)
    ks, csel = by_note["add32_kogge_stone"], by_note["add32_carry_select"]
    # the front has two points that trade: Kogge-Stone is faster, + is smaller and cooler
    assert findings.front == (plus, ks) and not csel.on_front
    assert ks.delay < 0.9 * plus.delay and ks.area > 1.05 * plus.area
    assert ks.power > plus.power
    # carry-select is dominated by Kogge-Stone
    assert csel.delay > ks.delay and csel.area > ks.area and csel.power > ks.power
