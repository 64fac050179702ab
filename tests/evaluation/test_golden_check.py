"""pass@k leaves out tasks whose golden fails its own testbench (real Icarus)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from rtlforge.cli import cli
from rtlforge.core.models import SourceFile, Task
from rtlforge.evaluation.evaluate import evaluate_samples
from rtlforge.evaluation.golden import GoldenCheck
from rtlforge.validate.pipeline import Pipeline

pytestmark = pytest.mark.tools

AND = "module and2(input a, input b, output y);\n  assign y = a & b;\nendmodule\n"
OR = AND.replace("&", "|")
TB = """module tb;
  reg a, b; wire y; integer errors = 0, i;
  and2 dut(.a(a), .b(b), .y(y));
  initial begin
    for (i = 0; i < 4; i = i + 1) begin {a, b} = i; #1; if (y !== (a & b)) errors = errors + 1; end
    $display("Mismatches: %0d in 4 samples", errors);
    $finish;
  end
endmodule
"""
BAD_TB = TB.replace("integer errors = 0, i;", "integer errors = 0, i")  # a syntax error


def task(tid: str, golden: str, tb: str = TB) -> Task:
    return Task(id=tid, spec="AND gate", top="and2", testbench_top="tb",
                testbench=(SourceFile(name="tb.v", content=tb),),
                golden=(SourceFile(name="golden.v", content=golden),))


TASKS = {"good": task("good", AND), "wrong_golden": task("wrong_golden", OR),
         "bad_tb": task("bad_tb", AND, BAD_TB)}
SAMPLES = [("good", AND), ("good", OR), ("wrong_golden", AND), ("wrong_golden", OR),
           ("bad_tb", AND)]


def test_broken_tasks_are_left_out_of_pass_at_k_and_listed() -> None:
    pipeline = Pipeline.build()
    result = evaluate_samples(SAMPLES, TASKS, pipeline, ks=(1,))
    # only "good" counts: 1 of its 2 samples passes
    assert result.pass_at_k[1] == pytest.approx(0.5)
    assert set(result.broken_tasks) == {"wrong_golden", "bad_tb"}
    assert "golden gets 'fail' from its own testbench" in result.broken_tasks["wrong_golden"]
    assert "testbench does not compile" in result.broken_tasks["bad_tb"]
    assert "tb.v" in result.broken_tasks["bad_tb"]
    summary = result.summary()
    assert summary["pass_at_k_tasks"] == 1 and summary["broken_tasks_in_pass_at_k"] is False

    included = evaluate_samples(SAMPLES, TASKS, pipeline, ks=(1,), include_broken=True)
    # good 1/2, wrong_golden 1/2 (its testbench is right, its golden is not), bad_tb 0/1
    assert included.pass_at_k[1] == pytest.approx(1 / 3)
    assert included.summary()["pass_at_k_tasks"] == 3


def test_the_golden_is_checked_once_per_task() -> None:
    pipeline = Pipeline.build()
    calls: list[str] = []
    real = pipeline.validate

    def spy(t: Task, c: Any) -> Any:
        calls.append(t.id)
        return real(t, c)

    pipeline.validate = spy  # type: ignore[method-assign]
    checker = GoldenCheck(pipeline)
    first = checker.check(TASKS["wrong_golden"])
    again = checker.check(TASKS["wrong_golden"])
    assert first == again and not first.usable and first.verdict == "fail"
    assert calls == ["wrong_golden"]
    assert checker.check(TASKS["good"]).usable


def test_cli_eval_lists_broken_tasks_and_can_include_them(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    for tid, golden in (("good", AND), ("wrong_golden", OR)):
        d = suite / tid
        d.mkdir(parents=True)
        (d / "tb.v").write_text(TB)
        (d / "golden.v").write_text(golden)
        (d / "task.toml").write_text(
            f'id = "{tid}"\ntop = "and2"\nspec = "AND"\ntestbench = ["tb.v"]\n'
            'testbench_top = "tb"\ngolden = ["golden.v"]\n')
    samples = tmp_path / "s.jsonl"
    samples.write_text("".join(json.dumps({"task_id": t, "completion": c}) + "\n"
                               for t, c in (("good", AND), ("wrong_golden", OR))))
    args = ["eval", str(samples), "--tasks", str(suite), "-k", "1", "--json",
            "--out", str(tmp_path / "r.jsonl")]
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert out["pass_at_k"]["pass@1"] == 1.0 and list(out["broken_tasks"]) == ["wrong_golden"]
    assert "task wrong_golden: its golden gets 'fail'" in res.stderr
    assert out["methods"]["s"]["pass_at_k"]["pass@1"] == 1.0
    res = CliRunner().invoke(cli, [*args, "--include-broken-tasks"])
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert out["pass_at_k"]["pass@1"] == 0.5 and out["broken_tasks_in_pass_at_k"] is True
