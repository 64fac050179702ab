"""``rtlforge refine`` on the public layouts through the task loaders: VerilogEval v2's
spec-to-rtl folder (the fixture in tests/tasks) and RTLLM v2 as distributed (../shared)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from rtlforge.agents.roles.common import FEEDBACK_HEADING
from rtlforge.cli import cli

ROOT = Path(__file__).resolve().parents[2]
VERILOGEVAL = ROOT / "tests" / "tasks" / "fixtures" / "verilogeval" / "dataset_spec-to-rtl"
RTLLM = ROOT.parent / "shared" / "benchmarks" / "rtllm"

XOR_WRONG = "```verilog\nmodule TopModule(input a, input b, output out);\n" \
            "  assign out = a & b;\nendmodule\n```"
XOR_RIGHT = "```verilog\nmodule TopModule(input a, input b, output out);\n" \
            "  assign out = a ^ b;\nendmodule\n```"
COUNT4 = """```verilog
module TopModule(input clk, input reset, output reg [3:0] q);
  always @(posedge clk) if (reset) q <= 4'd0; else q <= q + 4'd1;
endmodule
```"""


def _refine(tmp_path: Path, tasks: Path, fmt: str, script: dict, *extra: str):  # type: ignore[no-untyped-def]
    path = tmp_path / "script.json"
    path.write_text(json.dumps(script), encoding="utf-8")
    return CliRunner().invoke(cli, [
        "refine", "--tasks", str(tasks), "--format", fmt, *extra, "--generator", "scripted",
        "--generator-option", f"path={path}", "--run-dir", str(tmp_path / "run"), "--json"])


@pytest.mark.tools
def test_refine_on_the_verilogeval_layout(tmp_path: Path) -> None:
    script = {"Prob001_xor2": {"*": [XOR_WRONG, {"text": XOR_RIGHT,
                                                 "when_prompt_contains": FEEDBACK_HEADING}]},
              "Prob002_count4": {"*": [COUNT4]}}
    result = _refine(tmp_path, VERILOGEVAL, "verilogeval", script)
    assert result.exit_code == 0, result.output
    lines = {row["task_id"]: row for row in map(json.loads, result.stdout.splitlines())}
    assert set(lines) == {"Prob001_xor2", "Prob002_count4"}
    assert lines["Prob001_xor2"]["verdict"] == "pass"
    assert lines["Prob001_xor2"]["iterations"] == 2 and lines["Prob001_xor2"]["llm_calls"] == 2
    assert lines["Prob002_count4"]["iterations"] == 1
    # the spec's port list reached the prompt although VerilogEval tasks declare no ports
    decisions = (tmp_path / "run" / "decisions.jsonl").read_text().splitlines()
    assert len(decisions) == 3
    assert (tmp_path / "run" / "report.html").is_file()


@pytest.mark.tools
@pytest.mark.shared
@pytest.mark.skipif(not RTLLM.is_dir(), reason=f"RTLLM data not found at {RTLLM}")
def test_refine_on_the_rtllm_layout(tmp_path: Path) -> None:
    from rtlforge.tasks.rtllm import load_rtllm_task

    # the loader renames the reference to the testbench's top, as a model is asked to name it
    task = load_rtllm_task(RTLLM / "Arithmetic" / "Adder" / "adder_8bit")
    text = "\n".join(f.content for f in task.golden)
    header = text[:text.index(");") + 2]
    script = {"adder_8bit": {"*": [f"```verilog\n{header}\nendmodule\n```",
                                   {"text": f"```verilog\n{text}\n```",
                                    "when_prompt_contains": FEEDBACK_HEADING}]}}
    result = _refine(tmp_path, RTLLM, "rtllm", script, "--task", "adder_8bit")
    assert result.exit_code == 0, result.output
    [row] = [json.loads(line) for line in result.stdout.splitlines()]
    assert row["verdict"] == "pass" and row["iterations"] == 2


@pytest.mark.tools
def test_a_guidance_gate_file_picks_the_configuration_and_is_recorded(tmp_path: Path) -> None:
    from rtlforge.agents.guidance.gate import GuidanceGate

    gate = tmp_path / "gate.json"
    GuidanceGate().save(gate)
    script = {"Prob002_count4": {"*": [COUNT4]}}
    result = _refine(tmp_path, VERILOGEVAL, "verilogeval", script, "--task", "Prob002_count4",
                     "--guidance-gate", str(gate))
    assert result.exit_code == 0, result.output
    settings = json.loads((tmp_path / "run" / "settings.json").read_text())
    assert settings["guidance_gate"]["file"] == str(gate)
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "something else"}', encoding="utf-8")
    (tmp_path / "other").mkdir()
    refused = _refine(tmp_path / "other", VERILOGEVAL, "verilogeval", script,
                      "--guidance-gate", str(bad))
    assert refused.exit_code == 2 and "not a guidance gate file" in refused.output
