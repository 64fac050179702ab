"""The refinement loop (issue 12, sections 1 and 6): tiers, feedback in the next prompt, cost,
multi-candidate ranking, infrastructure failures, the trace and decisions.jsonl.

Roles and the router come from a test plugin registered on an isolated host (what a third
party does), so these tests do not depend on the built-in roles and routers.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any, ClassVar

import pytest

from rtlforge.agents import hookspecs as agent_hookspecs
from rtlforge.agents.base import (
    AGENT_ROLE_KIND,
    ROUTER_KIND,
    AgentRole,
    RoleSettings,
    Router,
)
from rtlforge.agents.knowledge import plugin as knowledge_plugin
from rtlforge.agents.knowledge.base import KnowledgeEntry, Origin, Provenance
from rtlforge.agents.knowledge.retrieval import KeywordRetriever
from rtlforge.agents.models import AgentAction, Decision, Focus, RouterContext, Tier
from rtlforge.agents.orchestrator import Orchestrator, Scored, rank
from rtlforge.agents.trace import ThoughtEvent, ThoughtKind, read_trace
from rtlforge.core.hookspecs import hookimpl
from rtlforge.core.interfaces import (
    Generation,
    GenerationRequest,
    Generator,
    PPAEstimator,
    SamplingParams,
    ValidationContext,
    Validator,
)
from rtlforge.core.models import (
    Feedback,
    PPAResult,
    StageResult,
    Task,
    ValidationReport,
    Verdict,
)
from rtlforge.plugins.generators import scripted, symbolic
from rtlforge.plugins.generators.scripted import ScriptedGenerator, word_count
from rtlforge.plugins.validators import iverilog
from rtlforge.tasks.loader import load_tasks
from rtlforge.testing.builders import make_candidate, make_plugin_host, make_task
from rtlforge.validate.pipeline import Pipeline

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "tasks"


# ---------------------------------------------------------------------- the test plugin


class _Fast(AgentRole):
    name = "fast"
    routed = True
    defaults = RoleSettings(temperature=0.5, retrieval_k=3)


class _Debug(AgentRole):
    name = "debug"
    routed = True
    defaults = RoleSettings(temperature=0.3, retrieval_k=5, focus=Focus.ERROR)


class _Optimize(AgentRole):
    name = "optimize"
    routed = True
    defaults = RoleSettings(temperature=0.4, retrieval_k=4, focus=Focus.SYNTHESIS)


class _Waveform(AgentRole):
    """A rule-routed specialist: takes tasks whose spec mentions a waveform."""

    name = "waveform"
    defaults = RoleSettings(temperature=0.2, retrieval_k=0)

    def matches(self, task: Task, spec: str) -> str | None:
        return "waveform cue" if "waveform" in spec.lower() else None


class FastThenDebug(Router):
    """First round: ``fast``; afterwards ``debug`` with error focus. Records what it saw."""

    name = "fast-then-debug"

    def __init__(self) -> None:
        self.observed: list[Decision] = []

    def decide(self, ctx: RouterContext, agents: Sequence[str]) -> AgentAction:
        if ctx.history and "debug" in agents:
            return AgentAction(agent="debug", focus=Focus.ERROR, reason="test: after a failure")
        return AgentAction(agent="fast", focus=Focus.FULL, reason="test: first try")

    def state(self, ctx: RouterContext) -> tuple[float, ...]:
        return (float(ctx.iteration), float(len(ctx.history)))

    def observe(self, decision: Decision) -> None:
        self.observed.append(decision)


class _TestAgents:
    """Declares the agents kinds (as the built-in agents plugin does) and test roles."""

    def __init__(self, *roles: type[AgentRole]) -> None:
        self.roles = roles or (_Fast, _Debug)

    @hookimpl
    def register_hookspecs(self, register: Any) -> None:
        register(agent_hookspecs)

    @hookimpl
    def register_plugin_kinds(self, register: Any) -> None:
        register(AGENT_ROLE_KIND)
        register(ROUTER_KIND)

    @hookimpl
    def register_agent_roles(self, register: Any) -> None:
        for role in self.roles:
            register(role)

    @hookimpl
    def register_routers(self, register: Any) -> None:
        register(FastThenDebug)


def _host(*roles: type[AgentRole]) -> Any:
    return make_plugin_host(iverilog, symbolic, scripted, knowledge_plugin,
                            ("test_agents", _TestAgents(*roles)))


class Recording(Generator):
    """Delegates to a generator and keeps every request it was given."""

    name: ClassVar[str] = "recording"

    def __init__(self, inner: Generator) -> None:
        self.inner = inner
        self.requests: list[tuple[GenerationRequest, int]] = []

    def generate(self, requests: Sequence[GenerationRequest], params: SamplingParams
                 ) -> list[list[Generation]]:
        self.requests.extend((r, params.n) for r in requests)
        return self.inner.generate(requests, params)


@dataclass
class MarkerCheck(Validator):
    """A tool-free "simulation": passes a design containing ``// correct``; otherwise fails
    with a VerilogEval-style count taken from a ``// wrong N`` marker (default 5 of 10)."""

    name: ClassVar[str] = "marker-check"
    stage: ClassVar[str] = "simulate"
    order: ClassVar[int] = 200

    def validate(self, ctx: ValidationContext) -> StageResult:
        text = ctx.candidate.files[0].content
        if "// correct" in text:
            return StageResult(name=self.name, verdict=Verdict.PASS)
        wrong = 5
        if "// wrong " in text:
            wrong = int(text.split("// wrong ")[1].split()[0])
        return StageResult(name=self.name, verdict=Verdict.FAIL, feedback=(Feedback(
            category="sim_mismatch", message=f"Mismatches: {wrong} in 10 samples",
            stage=self.name, hint="compare against the spec"),))


@dataclass
class MissingTool(Validator):
    name: ClassVar[str] = "missing-tool"
    stage: ClassVar[str] = "simulate"

    def validate(self, ctx: ValidationContext) -> StageResult:
        return StageResult(name=self.name, verdict=Verdict.INFRA_ERROR, feedback=(Feedback(
            category="tool_missing", message="required tool 'nosuchsim' is not available"),))


def _design(top: str, note: str) -> str:
    return f"```verilog\nmodule {top}(input a, output y);\n  assign y = a; {note}\nendmodule\n```"


def _bundled(task_id: str) -> Task:
    return {t.id: t for t in load_tasks(EXAMPLES)}[task_id]


def _kinds(events: Sequence[ThoughtEvent]) -> set[ThoughtKind]:
    return {e.kind for e in events}


# ---------------------------------------------------------------------- with iverilog

MUX4_SYNTAX_ERROR = """```verilog
module mux4(input [1:0] sel, input [7:0] a, b, c, d, output [7:0] y);
  assign y = sel[1] ? (sel[0] ? d : c) : (sel[0] ? b : a)
endmodule
```"""
MUX4_FIXED = """```verilog
module mux4(input [1:0] sel, input [7:0] a, b, c, d, output [7:0] y);
  assign y = sel[1] ? (sel[0] ? d : c) : (sel[0] ? b : a);
endmodule
```"""


@pytest.mark.tools
def test_a_syntax_error_then_a_fix_passes_in_two_iterations(tmp_path: Path) -> None:
    task = _bundled("mux4")
    # the fix only answers a prompt that points at the failing line (file:line)
    script = {"mux4": {"fast": [MUX4_SYNTAX_ERROR],
                       "debug": [{"text": MUX4_FIXED, "when_prompt_contains": "design.v:3"}]}}
    generator = Recording(ScriptedGenerator(script=script))
    router = FastThenDebug()
    with Orchestrator(generator=generator, host=_host(), router=router,
                      run_dir=tmp_path) as orch:
        result = orch.solve(task)

    assert result.verdict is Verdict.PASS and result.error is None
    assert result.iterations == 2 and result.llm_calls == 2
    assert result.agents == ("fast", "debug")
    assert result.tiers == (Tier.ROUTER, Tier.ROUTER) and result.solved_by is Tier.ROUTER
    first, second = result.records
    assert first.verdict is Verdict.ERROR and first.error_category == "syntax"
    assert first.failed_stage == "lint" and second.stages_passed[-1] == "simulate"
    # cost: the scripted generator counts whitespace-separated words
    assert first.completion_tokens == word_count(MUX4_SYNTAX_ERROR)
    assert second.completion_tokens == word_count(MUX4_FIXED)
    prompts = [r.prompt for r, _ in generator.requests]
    assert first.prompt_tokens == word_count("\n".join(
        [generator.requests[0][0].system or "", prompts[0]]))
    assert result.tokens == sum(r.prompt_tokens + r.completion_tokens for r in result.records)
    # the second prompt carries the first attempt's code and its structured feedback
    assert "design.v:3" not in prompts[0] and "design.v:3" in prompts[1]
    assert "[syntax]" in prompts[1] and "(sel[0] ? b : a)\n" in prompts[1]

    # the trace: one JSONL per task with every kind of step, one Decision per router round
    events = list(read_trace(tmp_path / "traces" / "mux4.jsonl"))
    assert result.trace == str(tmp_path / "traces" / "mux4.jsonl")
    assert {ThoughtKind.ANALYSIS, ThoughtKind.RETRIEVAL, ThoughtKind.GENERATION,
            ThoughtKind.VALIDATION, ThoughtKind.BOTTLENECK, ThoughtKind.DECISION,
            ThoughtKind.PROGRESS} <= _kinds(events)
    assert [e.agent for e in events if e.kind is ThoughtKind.DECISION] == ["fast", "debug"]
    assert events[0].kind is ThoughtKind.ANALYSIS and "symbolic" in events[0].message
    assert events[-1].kind is ThoughtKind.PROGRESS and events[-1].data["final"] is True

    # decisions.jsonl round-trips as Decision, outcomes filled, the router told each one
    lines = (tmp_path / "decisions.jsonl").read_text().splitlines()
    decisions = [Decision.model_validate_json(line) for line in lines]
    assert [d.iteration for d in decisions] == [0, 1]
    assert [d.action.agent for d in decisions] == ["fast", "debug"]
    assert [d.outcome.verdict for d in decisions if d.outcome] == [Verdict.ERROR, Verdict.PASS]
    assert decisions[1].state == (1.0, 1.0) and decisions[1].context.history == (first,)
    assert router.observed == decisions


@pytest.mark.tools
def test_the_documented_generator_that_returns_only_text_repairs_a_task() -> None:
    # docs/guides/generator.md: a generator returns text; extraction is not its job. The
    # orchestrator treated a Generation without a candidate as "no Verilog" (0 of 15 repaired).
    import importlib.util

    path = Path(__file__).resolve().parents[2] / "docs" / "examples" / "generator_plugin.py"
    spec = importlib.util.spec_from_file_location("generator_plugin_example", path)
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    generator = example.CannedGenerator(text="Here it is:\n" + MUX4_FIXED)
    with Orchestrator(generator=generator, host=_host(), router=FastThenDebug()) as orch:
        result = orch.solve(_bundled("mux4"))
    assert result.verdict is Verdict.PASS and result.iterations == 1
    assert result.candidate is not None and "sel[0] ? d : c" in result.candidate.files[0].content
    # an answer with no Verilog at all still says why, from the same extraction rule
    with Orchestrator(generator=example.CannedGenerator(text="I cannot help with that."),
                      host=_host(), router=FastThenDebug(), max_iterations=1) as orch:
        failed = orch.solve(_bundled("mux4"))
    assert failed.verdict is Verdict.ERROR
    assert failed.records[0].error_category == "extraction"


@pytest.mark.tools
def test_a_wrong_design_then_the_right_one_when_the_prompt_carries_the_failing_check() -> None:
    task = make_task("and2", ports=["input a", "input b", "output y"],
                     vectors=[{"a": 0, "b": 0, "y": 0}, {"a": 1, "b": 0, "y": 0},
                              {"a": 1, "b": 1, "y": 1}])
    wrong = "module and2(input a, input b, output y); assign y = a | b; endmodule"
    right = "module and2(input a, input b, output y); assign y = a & b; endmodule"
    # vector 1 (a=1, b=0) fails the OR design: y is 1, expected 1'd0
    script = {"and2": {"fast": [wrong],
                       "debug": [{"text": right, "when_prompt_contains": "expected 1'd0"},
                                 wrong]}}
    with Orchestrator(generator=ScriptedGenerator(script=script), host=_host(),
                      router=FastThenDebug()) as orch:
        result = orch.solve(task)
    assert result.verdict is Verdict.PASS
    assert result.iterations == 2 and result.llm_calls == 2
    assert result.records[0].verdict is Verdict.FAIL
    assert result.records[0].error_category == "sim_mismatch"
    assert result.candidate is not None and "a & b" in result.candidate.files[0].content


KMAP = """\
Implement the circuit described by the Karnaugh map below.

          a
   bc   0   1
   00 | 0 | 1 |
   01 | 1 | 1 |
   11 | 1 | 1 |
   10 | 1 | 1 |
"""


@pytest.mark.tools
def test_a_kmap_task_is_solved_by_the_symbolic_tier_without_an_llm_call() -> None:
    # out = a | b | c; the testbench checks every row of the map
    vectors = [{"a": a, "b": b, "c": c, "out": a | b | c}
               for a in (0, 1) for b in (0, 1) for c in (0, 1)]
    task = make_task("kmap3", ports=["input a", "input b", "input c", "output out"],
                     vectors=vectors, spec=KMAP)
    # an empty script: any LLM call would end the task as infra_error
    generator = Recording(ScriptedGenerator(script={}))
    with Orchestrator(generator=generator, host=_host(), router=FastThenDebug()) as orch:
        result = orch.solve(task)
    assert result.verdict is Verdict.PASS
    assert result.llm_calls == 0 and result.tokens == 0 and generator.requests == []
    assert result.tiers == (Tier.SYMBOLIC,) and result.solved_by is Tier.SYMBOLIC
    assert result.agents == ("symbolic",)


# ---------------------------------------------------------------------- tool-free


def _marker_pipeline(*validators: Validator) -> Pipeline:
    return Pipeline(list(validators) or [MarkerCheck()])


class TestbenchMarkerCheck(MarkerCheck):
    """MarkerCheck as a real simulator is: it judges only a task that has a testbench."""

    __test__ = False
    needs_testbench: ClassVar[bool] = True


TASK = make_task("dut", ports=["input a", "output y"])


def test_a_generator_failure_is_infra_error_and_the_next_task_still_runs() -> None:
    other = TASK.model_copy(update={"id": "other"})
    # no steps for task "dut": the scripted generator raises ScriptExhausted
    script = {"other": {"fast": [_design("dut", "// correct")]}}
    live = LiveSink()
    with Orchestrator(generator=ScriptedGenerator(script=script), host=_host(),
                      router=FastThenDebug(), pipeline=_marker_pipeline(),
                      symbolic=False, sinks=[live]) as orch:
        first, second = list(orch.solve_many([TASK, other]))
    assert first.verdict is Verdict.INFRA_ERROR
    assert first.error is not None and "ScriptExhausted" in first.error
    assert first.iterations == 0
    assert second.verdict is Verdict.PASS and second.error is None
    # the caller's sink sees both tasks (the Error of the first) and is never closed
    assert [e.task_id for e in live.events if e.kind is ThoughtKind.ERROR] == ["dut"]
    assert {e.task_id for e in live.events} == {"dut", "other"} and not live.closed


class LiveSink:
    """A sink with a close(), like a CLI live view that spans a whole run."""

    def __init__(self) -> None:
        self.events: list[ThoughtEvent] = []
        self.closed = False

    def __call__(self, event: ThoughtEvent) -> None:
        self.events.append(event)

    def close(self) -> None:
        self.closed = True


def test_a_missing_tool_is_infra_error_not_fail() -> None:
    script = {"dut": {"fast": [_design("dut", "// wrong 3")] * 3}}
    with Orchestrator(generator=ScriptedGenerator(script=script), host=_host(),
                      router=FastThenDebug(), pipeline=_marker_pipeline(MissingTool()),
                      symbolic=False) as orch:
        result = orch.solve(TASK)
    assert result.verdict is Verdict.INFRA_ERROR
    assert result.error is not None and "nosuchsim" in result.error


def test_the_loop_stops_after_max_iterations_with_the_best_candidate() -> None:
    script = {"dut": {"fast": [_design("dut", "// wrong 4")],
                      "debug": [_design("dut", "// wrong 2"), _design("dut", "// wrong 7")]}}
    with Orchestrator(generator=ScriptedGenerator(script=script), host=_host(),
                      router=FastThenDebug(), pipeline=_marker_pipeline(), symbolic=False,
                      max_iterations=3) as orch:
        result = orch.solve(TASK)
    assert result.verdict is Verdict.FAIL and result.iterations == 3
    assert [r.mismatches for r in result.records] == [4, 2, 7]
    assert result.candidate is not None and "// wrong 2" in result.candidate.files[0].content


def _report(verdict: Verdict, message: str = "") -> ValidationReport:
    feedback = (Feedback(category="sim_mismatch", message=message),) if message else ()
    return ValidationReport(verdict=verdict, stages=(StageResult(
        name="sim", verdict=verdict, feedback=feedback),))


def test_ranking_orders_by_verdict_then_mismatches_then_cells_then_delay() -> None:
    cand = make_candidate("module dut; endmodule")
    items = {
        "error": Scored(cand, _report(Verdict.ERROR), order=1),
        "fail_half": Scored(cand, _report(Verdict.FAIL, "Mismatches: 5 in 10 samples"), 2),
        "fail_tenth": Scored(cand, _report(Verdict.FAIL, "Mismatches: 10 in 100 samples"), 3),
        "fail_uncounted": Scored(cand, _report(Verdict.FAIL, "wrong output"), 4),
        "pass_big": Scored(cand, _report(Verdict.PASS), 5, cells=40, delay_ns=1.0),
        "pass_small_slow": Scored(cand, _report(Verdict.PASS), 6, cells=12, delay_ns=3.0),
        "pass_small_fast": Scored(cand, _report(Verdict.PASS), 7, cells=12, delay_ns=2.0),
        "pass_unmeasured": Scored(cand, _report(Verdict.PASS), 8),
    }
    # the oracle, from the issue: pass > fail > error, then fewer (normalised) mismatches,
    # then fewer cells, then a shorter critical path; unmeasured PPA ranks last among equals
    expected = ["pass_small_fast", "pass_small_slow", "pass_big", "pass_unmeasured",
                "fail_tenth", "fail_half", "fail_uncounted", "error"]
    by_id = {id(item): name for name, item in items.items()}
    assert [by_id[id(s)] for s in rank(reversed(list(items.values())))] == expected


def test_multi_candidate_rounds_keep_the_best_and_show_them_to_the_next_calls() -> None:
    script = {"dut": {
        "fast": [_design("dut", "// wrong 9"), _design("dut", "// wrong 2"),
                 _design("dut", "// wrong 5")],
        # second round: one request per kept candidate (2), the 3 samples split 2 + 1
        "debug": [_design("dut", "// wrong 8"), _design("dut", "// correct"),
                  _design("dut", "// wrong 6")]}}
    generator = Recording(ScriptedGenerator(script=script))
    with Orchestrator(generator=generator, host=_host(), router=FastThenDebug(),
                      pipeline=_marker_pipeline(), symbolic=False, candidates=3,
                      keep=2) as orch:
        result = orch.solve(TASK)
    assert result.verdict is Verdict.PASS and result.iterations == 2
    assert [n for _, n in generator.requests] == [3, 2, 1]
    assert [r.llm_calls for r in result.records] == [1, 2]
    assert [r.candidates for r in result.records] == [3, 3]
    # the best two of round one (2 then 5 mismatches) are the code the next calls see
    second_round = [r.prompt for r, _ in generator.requests[1:]]
    assert "// wrong 2" in second_round[0] and "// wrong 5" in second_round[1]
    assert result.records[0].mismatches == 2  # the record describes the round's best


def test_a_specialist_takes_the_first_round_then_the_router() -> None:
    task = TASK.model_copy(update={"spec": "Determine the circuit from this waveform: ..."})
    script = {"dut": {"waveform": [_design("dut", "// wrong 3")],
                      "debug": [_design("dut", "// correct")]}}
    router = FastThenDebug()
    with Orchestrator(generator=ScriptedGenerator(script=script),
                      host=_host(_Fast, _Debug, _Waveform), router=router,
                      pipeline=_marker_pipeline(), symbolic=False) as orch:
        result = orch.solve(task)
    assert result.verdict is Verdict.PASS
    assert result.agents == ("waveform", "debug")
    assert result.tiers == (Tier.SPECIALIST, Tier.ROUTER)
    assert len(router.observed) == 1  # only the router's round is a Decision
    assert result.records[0].action is not None
    assert result.records[0].action.reason == "rule: waveform cue"


def test_seams_guidance_and_waveform_reach_the_prompt() -> None:
    seen: list[tuple[str, str]] = []

    def guidance(task: Task) -> tuple[str, Sequence[str]]:
        return task.spec + "\nGUIDANCE: register the output.", ("registered-output",)

    def waveform(task: Task, candidate: Any, report: ValidationReport) -> str:
        seen.append((task.id, report.verdict.value))
        return "WAVE t=10 y=0 expected 1"

    script = {"dut": {"fast": [_design("dut", "// wrong 3")],
                      "debug": [{"text": _design("dut", "// correct"),
                                 "when_prompt_contains": ["GUIDANCE", "WAVE t=10"]}]}}
    generator = Recording(ScriptedGenerator(script=script))
    with Orchestrator(generator=generator, host=_host(), router=FastThenDebug(),
                      pipeline=_marker_pipeline(), symbolic=False, guidance=guidance,
                      waveform=waveform) as orch:
        result = orch.solve(TASK)
    assert result.verdict is Verdict.PASS
    assert seen == [("dut", "fail")]
    assert "GUIDANCE" in generator.requests[0][0].prompt


def test_per_role_generators_are_built_once_and_the_optimize_phase_is_skipped_without_ppa(
        ) -> None:
    script = {"dut": {"fast": [_design("dut", "// correct")]}}
    events: list[ThoughtEvent] = []
    roles = {"fast": {"generator": "scripted", "generator_options": {"script": script}},
             "debug": {"generator": "scripted", "generator_options": {"script": script}}}
    with Orchestrator(generator=ScriptedGenerator(script={}), host=_host(_Fast, _Debug,
                                                                         _Optimize),
                      roles=roles, router=FastThenDebug(), pipeline=_marker_pipeline(),
                      symbolic=False, optimize=True, sinks=[events.append]) as orch:
        assert orch.generator_for(orch.roles["fast"]) is orch.generator_for(orch.roles["debug"])
        result = orch.solve(TASK)
    assert result.verdict is Verdict.PASS and result.iterations == 1
    skipped = [e for e in events if "optimize phase skipped" in e.message]
    assert skipped and skipped[0].data["skipped"] == "no PPA estimator"


def test_without_routed_roles_the_generic_agent_runs_and_no_router_is_needed() -> None:
    script = {"dut": {"generic": [_design("dut", "// wrong 1"), _design("dut", "// correct")]}}
    with Orchestrator(generator=ScriptedGenerator(script=script), host=_host(_Waveform),
                      router="no-such-router", pipeline=_marker_pipeline(),
                      symbolic=False) as orch:
        result = orch.solve(TASK)
    assert result.verdict is Verdict.PASS and result.agents == ("generic", "generic")


def test_solve_result_summary_is_json_ready() -> None:
    script = {"dut": {"fast": [_design("dut", "// correct")]}}
    with Orchestrator(generator=ScriptedGenerator(script=script), host=_host(),
                      router=FastThenDebug(), pipeline=_marker_pipeline(),
                      symbolic=False) as orch:
        summary = orch.solve(TASK).summary()
    assert json.loads(json.dumps(summary))["verdict"] == "pass"
    assert summary["llm_calls"] == 1 and summary["agents"] == ["fast"]


class MarkerPPA(PPAEstimator):
    """A tool-free estimator: the cell count is a ``// cells N`` marker in the design."""

    name: ClassVar[str] = "marker-ppa"

    def __init__(self) -> None:
        self.measured: list[int] = []

    def estimate(self, candidate: Any, top: str, runner: Any, *, clock: str | None = None,
                 period_ns: float | None = None) -> PPAResult:
        cells = int(candidate.files[0].content.split("// cells ")[1].split()[0])
        self.measured.append(cells)
        return PPAResult(area_um2=float(cells), delay_ns=1.0, power_mw=0.1, cells=cells)


def test_the_optimize_phase_keeps_only_passing_designs_with_fewer_cells() -> None:
    script = {"dut": {
        "fast": [_design("dut", "// correct // cells 20")],
        "optimize": [_design("dut", "// wrong 1 // cells 5"),  # smaller but wrong: dropped
                     _design("dut", "// correct // cells 30"),  # passes but larger: dropped
                     _design("dut", "// correct // cells 12")]}}  # kept
    estimator = MarkerPPA()
    generator = Recording(ScriptedGenerator(script=script))
    with Orchestrator(generator=generator, host=_host(_Fast, _Debug, _Optimize),
                      router=FastThenDebug(), pipeline=_marker_pipeline(), symbolic=False,
                      optimize=True, estimator=estimator, max_iterations=4) as orch:
        result = orch.solve(TASK)
    assert result.verdict is Verdict.PASS and result.solved_by is Tier.ROUTER
    assert result.agents == ("fast", "optimize", "optimize", "optimize")
    assert result.candidate is not None and "// cells 12" in result.candidate.files[0].content
    assert estimator.measured == [20, 30, 12]  # the failing design is never measured
    # each optimize prompt shows the best passing design so far and its cell count
    optimize_prompts = [r.prompt for r, _ in generator.requests[1:]]
    assert all("// cells 20" in p and "Synthesis: 20 cells" in p for p in optimize_prompts)


def test_the_decomposer_seam_can_solve_the_task_and_its_llm_use_is_counted() -> None:
    calls: list[dict[str, Any]] = []

    def decomposer(**kwargs: Any) -> Any:
        calls.append(kwargs)
        request = GenerationRequest(prompt="sub-modules", task=kwargs["task"],
                                    metadata={"agent": "decomposer"})
        return kwargs["generator"].generate([request], SamplingParams())[0][0].candidate

    script = {"dut": {"decomposer": [_design("dut", "// correct")]}}
    with Orchestrator(generator=ScriptedGenerator(script=script), host=_host(),
                      router=FastThenDebug(), pipeline=_marker_pipeline(), symbolic=False,
                      decomposer=decomposer) as orch:
        result = orch.solve(TASK)
    assert result.verdict is Verdict.PASS and result.solved_by is Tier.DECOMPOSITION
    assert result.tiers == (Tier.DECOMPOSITION,) and result.llm_calls == 1
    assert result.tokens > 0
    assert set(calls[0]) == {"task", "spec", "generator", "trace", "host"}


def test_retrieval_never_returns_the_task_being_solved() -> None:
    when = date(2026, 1, 1)
    provenance = Provenance(source="written for this test", date=when)
    own = KnowledgeEntry(id="ref-dut", kind="reference", title="dut reference",
                         description="a reference implementation of dut", keywords=("dut",),
                         provenance=provenance,
                         origin=Origin(path="/refs/dut.v", digest="0" * 64, task_id="dut"))
    other = KnowledgeEntry(id="pattern-dut", kind="pattern", title="dut pattern",
                           description="how to write a dut", keywords=("dut",),
                           provenance=provenance)
    events: list[ThoughtEvent] = []
    script = {"dut": {"fast": [_design("dut", "// correct")]}}
    with Orchestrator(generator=ScriptedGenerator(script=script), host=_host(),
                      router=FastThenDebug(), pipeline=_marker_pipeline(), symbolic=False,
                      retriever=KeywordRetriever(entries=[own, other]),
                      sinks=[events.append]) as orch:
        orch.solve(TASK)
    retrieval = [e for e in events if e.kind is ThoughtKind.RETRIEVAL]
    assert len(retrieval) == 1 and retrieval[0].data["k"] == 3  # the fast role's depth
    assert [hit["id"] for hit in retrieval[0].data["hits"]] == ["pattern-dut"]


def test_the_testbench_role_gets_its_retrieval_depth_with_the_task_kept_out() -> None:
    """The Testbench role retrieves k = 4 (ChipCraftBrain's setting) once for its attempts,
    and the reference material reaches its prompt; the task's own reference stays out."""
    from rtlforge.agents.roles.specialists import TestbenchRole

    when = date(2026, 1, 1)
    provenance = Provenance(source="written for this test", date=when)
    own = KnowledgeEntry(id="ref-dut", kind="reference", title="dut reference",
                         description="a reference implementation of dut", keywords=("dut",),
                         provenance=provenance,
                         origin=Origin(path="/refs/dut.v", digest="0" * 64, task_id="dut"))
    other = KnowledgeEntry(id="pattern-dut", kind="pattern", title="dut pattern",
                           description="how to write a dut", keywords=("dut",),
                           provenance=provenance)
    events: list[ThoughtEvent] = []
    script = {"dut": {"testbench": ["no testbench here", "still none"],
                      "fast": [_design("dut", "// correct")]}}
    generator = Recording(ScriptedGenerator(script=script))
    with Orchestrator(generator=generator, host=_host(_Fast, _Debug, TestbenchRole),
                      router=FastThenDebug(), pipeline=_marker_pipeline(TestbenchMarkerCheck()),
                      symbolic=False, retriever=KeywordRetriever(entries=[own, other]),
                      sinks=[events.append]) as orch:
        orch.solve(TASK)
    retrieval = [e for e in events if e.kind is ThoughtKind.RETRIEVAL and e.agent == "testbench"]
    assert len(retrieval) == 1 and retrieval[0].data["k"] == 4
    assert [hit["id"] for hit in retrieval[0].data["hits"]] == ["pattern-dut"]
    prompts = [r.prompt for r, _ in generator.requests if r.metadata.get("agent") == "testbench"]
    assert len(prompts) == 2 and all("how to write a dut" in p for p in prompts)
    assert not any("a reference implementation of dut" in p for p in prompts)


def test_a_simulation_stage_that_needs_no_testbench_means_no_testbench_is_written() -> None:
    """A judge that applies without a testbench (CVDP's harness, a behaviour model) already
    judges the task: the testbench role is not asked and the result is not marked unjudged."""
    from rtlforge.agents.roles.specialists import TestbenchRole

    script = {"dut": {"fast": [_design("dut", "// correct")]}}
    generator = Recording(ScriptedGenerator(script=script))
    with Orchestrator(generator=generator,
                      host=_host(_Fast, _Debug, TestbenchRole), router=FastThenDebug(),
                      pipeline=_marker_pipeline(), symbolic=False) as orch:
        result = orch.solve(TASK)
    assert result.passed and result.judge != "none"
    assert [r.metadata.get("agent") for r, _ in generator.requests] == ["fast"]
