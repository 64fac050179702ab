"""The explore report shows each candidate's extracted source and the stored estimator's
liberty and clock period (the archive keeps PPA flat, without them)."""

from __future__ import annotations

from pathlib import Path

from rtlforge.core.models import ValidationReport, Verdict
from rtlforge.evaluation.evaluate import PPAMeasure
from rtlforge.explore.models import ExploreRecord
from rtlforge.explore.report import write_explore_report


def _record(iteration: int, source: str | None, verdict: Verdict = Verdict.PASS) -> ExploreRecord:
    passed = verdict is Verdict.PASS
    return ExploreRecord.model_validate({
        "key": ExploreRecord.make_key("m", "t", 1, iteration, 0), "method": "m", "task": "t",
        "trial": 1, "iteration": iteration, "sample": 0, "verdict": verdict, "source": source,
        "completion": f"```verilog\n{source}\n```", "generator": "replay",
        "report": ValidationReport(verdict=verdict, task_id="t"),
        "ppa": PPAMeasure(power=0.5, delay=1.0, area=4.0, cells=7) if passed else None,
        "golden": {"power": 1.0, "delay": 1.0, "area": 2.0},
        "objectives": [2.0, 1.0, 0.5] if passed else None, "hvc": 1.0 if passed else None})


def test_explore_report_shows_sources_and_the_estimator_settings(tmp_path: Path) -> None:
    records = [_record(1, "module t(input a, output y); assign y = a; endmodule"),
               _record(2, None, Verdict.ERROR)]
    config = {"methods": {"m": {"generator": "replay", "template": "pareto",
                                "history": "all"}},
              "iterations": 2, "trials": 1, "estimator": "yosys-sta",
              "settings": {"estimator": {"name": "yosys-sta", "liberty": "sky130.lib",
                                         "period_ns": 4.0, "yosys": "pyosys 0.70"}}}
    golden = {"t": PPAMeasure(power=1.0, delay=1.0, area=2.0, cells=3)}
    summary, paths = write_explore_report(tmp_path, records, golden, config=config,
                                          checkpoints=(1, 2))
    assert summary["environment"]["liberty"] == "sky130.lib"
    assert summary["environment"]["clock_period_ns"] == [4.0]
    assert summary["environment"]["tools"]["pyosys"] == "0.70"  # the synthesis tool, stored
    text = paths["report.html"].read_text()
    assert "module t(input a, output y); assign y = a; endmodule" in text
    assert text.count('<details class="circuit">') == 2
    assert "no Verilog was extracted" in text
    assert "clock period (ns)</td><td>4<" in text and "report generated" in text
