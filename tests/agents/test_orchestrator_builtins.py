"""The loop with the built-in roles and seams: a generated testbench for a task without one,
waveform windows only for roles that show them, decomposition only for complex specs."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, ClassVar

import pytest

from rtlforge.agents import plugin as agents_plugin
from rtlforge.agents.base import Router
from rtlforge.agents.guidance import plugin as guidance_plugin
from rtlforge.agents.knowledge import plugin as knowledge_plugin
from rtlforge.agents.models import AgentAction, RouterContext
from rtlforge.agents.orchestrator import Orchestrator
from rtlforge.agents.trace import ThoughtKind
from rtlforge.core.hookspecs import hookimpl
from rtlforge.core.models import Port, Task, Verdict
from rtlforge.plugins.generators import scripted, symbolic
from rtlforge.plugins.generators.scripted import ScriptedGenerator
from rtlforge.plugins.validators import iverilog
from rtlforge.testing.builders import make_plugin_host

AND_TASK = Task(id="and2", spec="Output y is the logical AND of inputs a and b.", top="and2",
                ports=(Port(name="a", direction="input"), Port(name="b", direction="input"),
                       Port(name="y", direction="output")))

TESTBENCH = """```verilog
`timescale 1ns/1ps
module tb;
  reg a, b; wire y; integer mismatches = 0, samples = 0;
  and2 dut(.a(a), .b(b), .y(y));
  task check(input expected);
    begin
      samples = samples + 1;
      if (y !== expected) begin
        mismatches = mismatches + 1;
        $display("FAIL test=%0d time=%0t: a=%b b=%b gives y=%b, expected=%b",
                 samples, $time, a, b, y, expected);
      end
    end
  endtask
  initial begin
    // Scenario 1: both low
    a = 0; b = 0; #5 check(0);
    // Scenario 2: a high
    a = 1; b = 0; #5 check(0);
    // Scenario 3: b high
    a = 0; b = 1; #5 check(0);
    // Scenario 4: both high
    a = 1; b = 1; #5 check(1);
    // Scenario 5: back to low
    a = 0; b = 0; #5 check(0);
    $display("Mismatches: %0d in %0d samples", mismatches, samples);
    if (mismatches == 0) $display("TEST PASSED"); else $display("TEST FAILED");
    $finish;
  end
endmodule
```"""
HEADER = "```verilog\nmodule and2(input a, input b, output y);\n"
OR_DESIGN = HEADER + "  assign y = a | b;\nendmodule\n```"
AND_DESIGN = HEADER + "  assign y = a & b;\nendmodule\n```"


class AlwaysFast(Router):
    name: ClassVar[str] = "always-fast"

    def decide(self, ctx: RouterContext, agents: Sequence[str]) -> AgentAction:
        return AgentAction(agent="fast" if not ctx.history else "debug", reason="test")


class _Routers:
    @hookimpl
    def register_routers(self, register: Any) -> None:
        register(AlwaysFast)


def _host() -> Any:
    return make_plugin_host(iverilog, symbolic, scripted, knowledge_plugin, agents_plugin,
                            guidance_plugin, ("test_routers", _Routers()))


@pytest.mark.tools
def test_a_task_without_testbench_is_judged_by_a_checked_generated_one(tmp_path: Any) -> None:
    script = {"and2": {
        # the first testbench answer has no testbench module: refused, asked once more
        "testbench": ["I cannot write that.", TESTBENCH],
        "fast": [OR_DESIGN],
        "debug": [{"text": AND_DESIGN, "when_prompt_contains": "expected=0"}]}}
    with Orchestrator(generator=ScriptedGenerator(script=script), host=_host(),
                      router="always-fast", symbolic=False, run_dir=tmp_path) as orch:
        result = orch.solve(AND_TASK)
    assert result.judge == "generated"
    assert result.verdict is Verdict.PASS and result.agents == ("fast", "debug")
    # two testbench calls plus two design calls are all counted
    assert result.llm_calls == 4
    first = result.records[0]
    assert first.verdict is Verdict.FAIL and first.mismatches == 2  # at (1, 0) and (0, 1)
    refusal = [e for e in orch_events(result) if e.kind is ThoughtKind.BOTTLENECK
               and e.agent == "testbench"]
    assert refusal and "no testbench" in refusal[0].message


def orch_events(result: Any) -> list[Any]:
    from rtlforge.agents.trace import read_trace

    return list(read_trace(result.trace)) if result.trace else []


def test_a_task_with_its_own_testbench_never_calls_the_testbench_role(tmp_path: Any) -> None:
    task = AND_TASK.model_copy(update={"spec": AND_TASK.spec})
    with Orchestrator(generator=ScriptedGenerator(script={"and2": {"fast": [AND_DESIGN]}}),
                      host=_host(), router="always-fast", symbolic=False, run_dir=tmp_path,
                      testbench=False) as orch:
        result = orch.solve(task)
    assert result.judge == "none"  # no testbench and the agent switched off: lint only
    assert "testbench" not in result.agents and result.llm_calls == 1


def test_the_builtin_roles_and_seams_are_wired_by_default() -> None:
    with Orchestrator(generator=ScriptedGenerator(script={}), host=_host(),
                      router="always-fast") as orch:
        assert set(orch.routed) == {"genius", "fast", "debug", "optimize"}
        assert [r.name for r in orch.specialists] == ["waveform"]
        assert orch.decomposer is not None and orch.waveform is not None
        # the debug role shows waveform windows; the fast role's template does not
        assert orch.roles["debug"].template.uses("waveform")
        assert not orch.roles["fast"].template.uses("waveform")


def test_guidance_enriches_the_spec_once_at_the_top_of_the_loop(tmp_path: Any) -> None:
    task = AND_TASK.model_copy(update={
        "id": "fifo", "spec": "A synchronous FIFO with full and empty flags."})
    with Orchestrator(generator=ScriptedGenerator(script={"fifo": {"*": ["no design"]}}),
                      host=_host(), router="always-fast", symbolic=False, testbench=False,
                      max_iterations=1, run_dir=tmp_path) as orch:
        result = orch.solve(task)
        spec, applied = orch.guidance(task)
    assert "fifo" in applied and spec.startswith(task.spec) and len(spec) > len(task.spec)
    analysis = orch_events(result)[0]
    assert analysis.kind is ThoughtKind.ANALYSIS and analysis.data["guidance"] == list(applied)


COUNT4_WRONG = """```verilog
module TopModule(input clk, input reset, output reg [3:0] q);
  always @(posedge clk) if (reset) q <= 4'd0; else q <= q + 4'd2;
endmodule
```"""


@pytest.mark.tools
def test_the_debug_prompt_shows_the_signals_around_the_first_mismatch() -> None:
    from pathlib import Path

    from rtlforge.plugins.generators.scripted import ScriptedGenerator as Scripted
    from rtlforge.tasks.verilogeval import load_verilogeval

    root = Path(__file__).resolve().parents[1] / "tasks" / "fixtures" / "verilogeval"
    task = {t.id: t for t in load_verilogeval(root / "dataset_spec-to-rtl")}["Prob002_count4"]
    generator = Scripted(script={task.id: {"fast": [COUNT4_WRONG], "debug": [COUNT4_WRONG]}})
    prompts: list[str] = []
    inner = generator.generate
    generator.generate = lambda reqs, params: (  # type: ignore[method-assign]
        prompts.extend(r.prompt for r in reqs) or inner(reqs, params))
    with Orchestrator(generator=generator, host=_host(), router="always-fast", symbolic=False,
                      max_iterations=2) as orch:
        result = orch.solve(task)
    assert result.verdict is Verdict.FAIL and result.agents == ("fast", "debug")
    assert "Signals around the first mismatch" not in prompts[0]
    window = prompts[1].split("Signals around the first mismatch", 1)[1]
    # q counts by 2 instead of 1: the first disagreeing row has reference 1 and design 2
    assert "q_ref" in window and "q_dut" in window
    assert re.search(r"\*\s+\d+ps\s+0\s+1\s+4'b0001\s+4'b0010\s+<- first mismatch", window)


def test_a_failed_decomposition_still_counts_its_llm_calls() -> None:
    task = AND_TASK.model_copy(update={
        "id": "system", "spec": AND_TASK.spec + " It is part of a system with an ALU, a "
                                "register file, a counter and an FSM controller."})
    script = {"system": {"decompose": ["not a plan", "still not a plan"], "fast": [AND_DESIGN]}}
    with Orchestrator(generator=ScriptedGenerator(script=script), host=_host(),
                      router="always-fast", symbolic=False, testbench=False,
                      max_iterations=1) as orch:
        result = orch.solve(task)
    assert result.tiers == ("router",)  # no decomposed design: the loop took over
    assert result.llm_calls == 3  # two plan attempts and one design
