"""Hierarchical decomposition: complexity detection, plan parsing and ordering, duplicate
removal, port synchronisation, and a scripted end-to-end build of a four-component system
(tests/fixtures/decompose: a spec, a self-checking testbench and canned model answers, all
written for these tests)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rtlforge.agents.decompose import (
    Decomposer,
    DecompositionError,
    assemble,
    build_order,
    component_keywords,
    is_complex,
    parse_plan,
    synchronise,
)
from rtlforge.agents.decompose.verilog import module_ports, split_modules
from rtlforge.agents.trace import ThoughtKind, Trace
from rtlforge.core.errors import InfraError
from rtlforge.core.models import SourceFile, Task, Verdict
from rtlforge.tasks.loader import load_task, load_tasks

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "tests" / "fixtures" / "decompose"
ANSWERS = FIXTURE / "answers"
ORDER = ("ctrl_fsm", "alu8", "regfile4x8", "datapath", "op_counter")


def answer(name: str) -> str:
    return (ANSWERS / f"{name}.txt").read_text(encoding="utf-8")


class Script:
    """A scripted ``call_llm``: canned answers per purpose (in turn; the last one repeats)."""

    def __init__(self, **overrides: list[str] | str) -> None:
        self.answers: dict[str, list[str]] = {
            "decompose": [answer("decompose")], "top": [answer("top")],
            **{f"submodule:{n}": [answer(n)] for n in ORDER}}
        for key, value in overrides.items():
            self.answers[key.replace("__", ":")] = [value] if isinstance(value, str) else value
        self.calls: list[tuple[str, str | None, str]] = []

    def __call__(self, system: str | None, prompt: str, *, purpose: str) -> str:
        self.calls.append((purpose, system, prompt))
        texts = self.answers[purpose]
        seen = sum(1 for p, _, _ in self.calls if p == purpose)
        return texts[min(seen, len(texts)) - 1]

    def prompts(self, purpose: str) -> list[str]:
        return [prompt for p, _, prompt in self.calls if p == purpose]


def plan_json(modules: list[dict[str, object]]) -> str:
    return json.dumps({"modules": modules})


def module(name: str, deps: tuple[str, ...] = (), **extra: object) -> dict[str, object]:
    return {"name": name, "purpose": f"the {name} block", "dependencies": list(deps),
            "ports": [{"name": "clk", "direction": "input", "width": 1},
                      {"name": "q", "direction": "output", "width": 8}], **extra}


@pytest.fixture(scope="module")
def task():
    return load_task(FIXTURE)


# ------------------------------------------------------------------------------ complexity


@pytest.mark.parametrize(("spec", "expected"), [
    ("A UART with a FIFO and a baud counter.", ("fifo", "uart", "counter")),
    ("An ALU, a register file and a finite state machine controller.",
     ("alu", "register file", "fsm")),
    ("Two counters, another counter, and COUNTERS everywhere.", ("counter",)),
    ("An FSM, i.e. a state machine.", ("fsm",)),
    ("We encounter an alu_op signal and a decoders_enable wire.", ()),
    ("A 4-to-1 mux feeding a shift register and an 8x8 RAM.",
     ("shift register", "memory", "multiplexer")),
    ("Compute CRC-32 over a stream.", ("crc",)),
])
def test_component_keywords_match_whole_words_once_each(spec, expected):
    assert component_keywords(spec) == expected


def test_complexity_threshold_is_three_distinct_components():
    assert is_complex("a FIFO, a UART and a counter")
    assert not is_complex("a FIFO and a UART, plus another FIFO")
    assert is_complex("a FIFO and a UART", threshold=2)


def test_the_papers_soc_example_is_decomposed():
    """ChipCraftBrain's own case study (the RISC-V SoC): its one-line description names five
    components (the RISC-V core, cache, bus, UART, GPIO), so it is decomposed. Before the
    cpu, bus and gpio keywords it found two (cache, UART) and stayed one module."""
    spec = "RISC-V SoC with cache, bus, UART, and GPIO"
    assert component_keywords(spec) == ("uart", "cache", "cpu", "bus", "gpio")
    assert is_complex(spec)
    soc = Task(id="soc", spec=spec, top="soc")
    assert Decomposer(Script()).applies(soc)


@pytest.mark.parametrize(("spec", "expected"), [
    ("A 5-stage RISC-V pipeline with a register file.", ("register file", "cpu", "pipeline")),
    ("An RV32I processor core.", ("cpu",)),
    ("A microprocessor on an AXI interconnect with two buses.", ("cpu", "bus")),
    # signal names, not components: a data or address bus, a busy flag
    ("An 8-bit data bus, a 16-bit address bus and a busy flag.", ()),
    # a pipelined multiplier is one component (the word is an adjective there)
    ("A pipelined multiplier.", ("multiplier",)),
])
def test_soc_component_keywords(spec, expected):
    assert component_keywords(spec) == expected


def test_bundled_tasks_are_simple_and_the_system_fixture_is_not(task):
    # every bundled spec describes one component (a counter, a FIFO, an FSM, ...)
    bundled = load_tasks(REPO / "examples" / "tasks")
    assert len(bundled) >= 10
    assert [t.id for t in bundled if is_complex(t.spec)] == []
    assert component_keywords(task.spec) == ("alu", "register file", "fsm", "counter")
    assert Decomposer(Script()).applies(task)
    assert not Decomposer(Script()).applies(bundled[0])


# ------------------------------------------------------------------------------ the plan


def test_parse_plan_reads_a_fenced_plan_among_prose_and_ignores_unknown_keys():
    plan = parse_plan(answer("decompose"), top="alu_system")
    assert plan.names == ("ctrl_fsm", "datapath", "alu8", "regfile4x8", "op_counter")
    datapath = plan.module("datapath")
    assert datapath.dependencies == ("alu8", "regfile4x8")
    assert [(p.name, p.direction, p.width) for p in datapath.ports][3:5] == [
        ("wr_addr", "input", 2), ("wr_data", "input", 8)]
    assert "output [7:0] alu_y" in datapath.header()


def test_parse_plan_reads_bare_json_and_a_bare_list():
    mods = [module(f"m{i}") for i in range(4)]
    assert parse_plan(f"Plan: {plan_json(mods)} -- done").names == ("m0", "m1", "m2", "m3")
    assert parse_plan(json.dumps(mods)).names == ("m0", "m1", "m2", "m3")


def test_parse_plan_prefers_the_plan_over_other_bracketed_text():
    mods = [module(f"m{i}") for i in range(4)]
    text = f"The bus is [7:0] wide, and [1, 2] are examples.\n{plan_json(mods)}"
    assert parse_plan(text).names == ("m0", "m1", "m2", "m3")


@pytest.mark.parametrize("text", ["[" * 200_000, "{" * 300, "[" * 5000 + "]" * 5000, None,
                                  "x" * 300_000])
def test_parse_plan_survives_absurd_answers(text):
    with pytest.raises(DecompositionError):
        parse_plan(text)


@pytest.mark.parametrize(("text", "message"), [
    ("I would split it into an ALU and a FIFO.", "holds no JSON"),
    ('```json\n{"modules": [{"name": "a",}]}\n```', "not valid JSON"),
    (plan_json([module(f"m{i}") for i in range(3)]), "has 3 sub-modules; it needs 4 to 8"),
    (plan_json([module(f"m{i}") for i in range(9)]), "has 9 sub-modules; it needs 4 to 8"),
    ('{"parts": []}', 'needs a "modules" list'),
    (plan_json([module("2fast"), *(module(f"m{i}") for i in range(3))]),
     "'2fast' is not a Verilog identifier"),
    (plan_json([module("reg"), *(module(f"m{i}") for i in range(3))]),
     "'reg' is a Verilog keyword"),
    (plan_json([module("m0"), *(module(f"m{i}") for i in range(3))]), "repeated: ['m0']"),
    (plan_json([module("m0", ("ghost",)), *(module(f"m{i}") for i in range(1, 4))]),
     "depends on unknown module(s) ['ghost']"),
    (plan_json([module("m0", ("m0",)), *(module(f"m{i}") for i in range(1, 4))]),
     "depends on itself"),
    (plan_json([module("m0", ("m2",)), module("m1"), module("m2", ("m3",)),
                module("m3", ("m0",))]), "cycle: m0 -> m2 -> m3 -> m0"),
    (plan_json([module("top"), *(module(f"m{i}") for i in range(3))]),
     "named like the top module 'top'"),
    (plan_json([module("m0", ports=[{"name": "a", "direction": "sideways"}]),
                *(module(f"m{i}") for i in range(1, 4))]),
     "sub-module 1 ('m0'): ports.0.direction"),
    (plan_json([module("m0", ports=[{"name": "a", "direction": "input"},
                                    {"name": "a", "direction": "output"}]),
                *(module(f"m{i}") for i in range(1, 4))]), "duplicate port name(s) ['a']"),
    (plan_json([module("m0", ports=[{"name": "a", "direction": "input", "width": 0}]),
                *(module(f"m{i}") for i in range(1, 4))]), "width"),
])
def test_parse_plan_refuses_bad_plans_with_a_clear_message(text, message):
    with pytest.raises(DecompositionError) as err:
        parse_plan(text, top="top")
    assert message in str(err.value)


def test_build_order_puts_dependencies_first_and_breaks_ties_by_plan_order():
    # ctrl_fsm is listed first and free; datapath waits for alu8 and regfile4x8, then goes
    # before op_counter because it is listed earlier
    assert build_order(parse_plan(answer("decompose"))) == ORDER
    chain = parse_plan(plan_json([module("d", ("c",)), module("c", ("b",)),
                                  module("b", ("a",)), module("a")]))
    assert build_order(chain) == ("a", "b", "c", "d")


# ------------------------------------------------------------------------------ Verilog


def test_assemble_keeps_the_sub_modules_own_file_and_one_copy_of_each_helper():
    answers = [
        ("sub_a", "module helper(); endmodule\nmodule sub_a(input x); helper h(); endmodule\n"),
        ("sub_b", "module sub_b(input y); endmodule\nmodule helper(); wire other; endmodule\n"),
        ("top", "module top(input x);\n  sub_a a(.x(x));\nendmodule\n"
                "module sub_a(input x); /* the top's copy */ endmodule\n"),
    ]
    files, removed = assemble(answers, "top")
    assert [f.name for f in files] == ["sub_a.v", "sub_b.v", "top.v"]
    texts = {f.name: f.content for f in files}
    assert [n for n, _ in split_modules(texts["sub_a.v"])] == ["helper", "sub_a"]
    assert [n for n, _ in split_modules(texts["sub_b.v"])] == ["sub_b"]
    assert [n for n, _ in split_modules(texts["top.v"])] == ["top"]
    assert "the top's copy" not in texts["top.v"]
    assert len(removed) == 2
    assert any("'helper' in sub_b" in r for r in removed)
    assert any("'sub_a' in top" in r and "its own file" in r for r in removed)


SUB = "module sub(input clk, input [7:0] din, input en, output [3:0] q);\nendmodule\n"


def sync(top: str, planned: tuple[str, ...] = ("clk", "din", "en", "q")):
    files = (SourceFile(name="sub.v", content=SUB), SourceFile(name="top.v", content=top))
    ports = {"sub": module_ports(SUB, "sub")}
    return synchronise(files, ports, {"sub": list(planned)})


def test_synchronise_renames_plan_names_and_case_slips_deterministically():
    top = ("module top(input c, input [7:0] d, output [3:0] y);\n"
           "  sub u (.CLK(c), .data_in(d), .en(1'b1), .q(y));\nendmodule\n")
    files, fixes, issues = sync(top, planned=("clk", "data_in", "en", "q"))
    assert issues == []
    assert len(fixes) == 2
    assert "sub u (.clk(c), .din(d), .en(1'b1), .q(y));" in files[1].content
    assert files[0].content == SUB


def test_synchronise_reports_what_it_cannot_fix():
    top = ("module top(input c, input [3:0] d, output [3:0] y);\n"
           "  wire [3:0] narrow;\n"
           "  sub u (.clk(c), .din(narrow), .bogus(d), .q(y));\n"
           "  sub v (c, d);\n"
           "  ghost g (.a(c));\nendmodule\n")
    _, fixes, issues = sync(top)
    assert fixes == []
    found = {(i.kind, i.instance, i.port) for i in issues}
    assert found == {("width", "u", "din"), ("unknown_port", "u", "bogus"),
                     ("missing_port", "u", "en"), ("count", "v", None),
                     ("unknown_module", "", None)}
    ghost = next(i for i in issues if i.kind == "unknown_module")
    assert "'ghost', which no file defines" in ghost.message


def test_synchronise_knows_modules_of_the_tasks_support_files():
    top = "module top(input c, output [3:0] y);\n  lib_cell l (.a(c), .q(y));\nendmodule\n"
    support = (SourceFile(name="lib.v", content="module lib_cell(input a, output [3:0] q);"
                                                 "\nendmodule\n"),)
    files = (SourceFile(name="top.v", content=top),)
    assert synchronise(files, {}, {}, support=support)[2] == []
    assert [i.kind for i in synchronise(files, {}, {})[2]] == ["unknown_module"]


@pytest.mark.parametrize("text", [
    "module top;\n" + "sub #" * 5000 + "\nendmodule\n",
    "module top;\n  sub u (.clk(c), .din(",
    "module top;\n" + "sub u (" * 3000,
])
def test_synchronise_survives_broken_instantiations(text):
    files = (SourceFile(name="sub.v", content=SUB), SourceFile(name="top.v", content=text))
    out, _, _ = synchronise(files, {"sub": module_ports(SUB, "sub")}, {})
    assert [f.name for f in out] == ["sub.v", "top.v"]


# ------------------------------------------------------------------------------ the build


def build(task, script, **options):
    decomposer = Decomposer(script, lint=False, validate=False, **options)
    trace = Trace(task.id)
    return decomposer.build(task, trace=trace), trace


def test_scripted_build_orders_injects_headers_fixes_ports_and_drops_duplicates(task):
    script = Script()
    result, trace = build(task, script)
    assert result.error is None
    assert result.order == ORDER
    assert [p for p, _, _ in script.calls] == [
        "decompose", *(f"submodule:{n}" for n in ORDER), "top"]
    assert result.llm_calls == 7
    assert [f.name for f in result.files] == [f"{n}.v" for n in ORDER] + ["alu_system.v"]
    assert result.candidate is not None and result.candidate.top == "alu_system"
    # the first sub-module sees no headers; datapath sees the real ones built before it,
    # including alu8's generated output name (result), not the plan's (y)
    assert "already built" not in script.prompts("submodule:ctrl_fsm")[0]
    datapath_prompt = script.prompts("submodule:datapath")[0]
    assert "module ctrl_fsm (" in datapath_prompt and "output reg [7:0] result" not in \
        datapath_prompt and "output [7:0] result" in datapath_prompt
    assert "module op_counter" not in datapath_prompt
    assert "module op_counter (" in script.prompts("top")[0]
    alu = next(m for m in result.modules if m.name == "alu8")
    assert alu.drift == ("planned port 'y' is missing", "port 'result' was not planned")
    # port synchronisation: datapath's .y (plan) became .result, the top's .Rst became .rst
    files = {f.name: f.content for f in result.files}
    assert ".result(alu_y)" in files["datapath.v"] and ".y(alu_y)" not in files["datapath.v"]
    assert ".rst(rst), .en(exec)" in files["alu_system.v"]
    assert len(result.fixes) == 2 and result.interface_feedback == ()
    # the top's copy of ctrl_fsm was dropped; the sub-module's own file keeps its version
    assert [n for n, _ in split_modules(files["alu_system.v"])] == ["alu_system"]
    assert "EXEC: state <= DONE;" in files["ctrl_fsm.v"]
    assert len(result.duplicates_removed) == 1 and "ctrl_fsm" in result.duplicates_removed[0]
    kinds = [e.kind for e in trace.events]
    assert kinds[:3] == [ThoughtKind.ANALYSIS, ThoughtKind.PROPOSAL, ThoughtKind.DECISION]
    assert kinds.count(ThoughtKind.GENERATION) == 6 and kinds[-1] is ThoughtKind.PROGRESS
    assert all(e.agent == "decompose" and e.task_id == "alu_system" for e in trace.events)


def test_an_unusable_plan_is_asked_again_with_the_reason(task):
    script = Script(decompose=["not json at all {", answer("decompose")])
    result, _ = build(task, script)
    assert result.error is None and result.llm_calls == 8
    retry = script.prompts("decompose")[1]
    assert "could not be used: the decomposition is not valid JSON" in retry


@pytest.mark.parametrize(("plans", "message"), [
    (["```json\n{\"modules\": [\n```"], "not valid JSON"),
    ([plan_json([module(f"m{i}") for i in range(3)])], "has 3 sub-modules"),
    ([plan_json([module("m0", ("m1",)), module("m1", ("m0",)), module("m2"), module("m3")])],
     "cycle: m0 -> m1 -> m0"),
])
def test_a_plan_that_stays_unusable_is_a_typed_failure(task, plans, message):
    script = Script(decompose=plans)
    result, trace = build(task, script)
    assert result.failed_step == "plan" and result.candidate is None
    assert message in (result.error or "") and "after 2 attempt(s)" in (result.error or "")
    assert result.llm_calls == 2 and [p for p, _, _ in script.calls] == ["decompose"] * 2
    assert trace.events[-1].kind is ThoughtKind.ERROR


def test_a_sub_module_answer_without_the_module(task):
    script = Script(submodule__alu8="I cannot write Verilog today.")
    result, _ = build(task, script)
    assert result.failed_step == "submodule" and result.candidate is None
    assert "sub-module alu8" in (result.error or "") and "no Verilog module" in result.error
    assert len(script.prompts("submodule:alu8")) == 2
    assert "could not be used: no Verilog module" in script.prompts("submodule:alu8")[1]


def test_a_sub_module_under_another_name_is_renamed(task):
    script = Script(submodule__op_counter=answer("op_counter").replace("op_counter", "cnt4"))
    result, _ = build(task, script)
    counter = next(m for m in result.modules if m.name == "op_counter")
    assert counter.fixes == ("renamed module 'cnt4' to 'op_counter'",)
    assert "module op_counter (" in next(f.content for f in result.files
                                         if f.name == "op_counter.v")


def test_a_top_instantiating_an_unknown_module_is_retried_then_reported(task):
    bad_top = answer("top").replace("op_counter counter", "op_counter_v2 counter")
    script = Script(top=bad_top)
    result, trace = build(task, script)
    assert len(script.prompts("top")) == 2
    assert "op_counter_v2" in script.prompts("top")[1] and "does not match" in \
        script.prompts("top")[1]
    assert result.candidate is not None and result.error is None
    assert [fb.category for fb in result.interface_feedback] == ["missing_module"]
    assert any("'op_counter_v2', which no file defines" in fb.message
               for fb in result.interface_feedback)
    assert ThoughtKind.BOTTLENECK in [e.kind for e in trace.events]


def test_a_failing_model_call_is_a_typed_failure(task):
    def broken(system, prompt, *, purpose):
        if purpose == "top":
            raise InfraError("endpoint unreachable")
        return Script()(system, prompt, purpose=purpose)

    result, _ = build(task, broken)
    assert result.failed_step == "top" and result.candidate is None
    assert "endpoint unreachable" in (result.error or "")


# ------------------------------------------------------------------------------ with tools


@pytest.mark.tools
def test_scripted_build_lints_and_passes_the_testbench(task):
    from rtlforge.core.plugins import PluginHost

    decomposer = Decomposer(Script(), host=PluginHost())
    assert decomposer(task) is not None  # the orchestrator's seam: the candidate
    result = decomposer.build(task)
    assert result.lint is not None and result.lint.verdict is Verdict.PASS
    assert [s.name for s in result.lint.stages] == ["security", "verilator-lint"]
    assert not [fb for fb in result.lint_feedback if fb.severity == "error"]
    assert result.report is not None and result.report.verdict is Verdict.PASS, result.report
    assert result.passed


@pytest.mark.tools
def test_the_combined_lint_locates_an_error_in_its_sub_module_file(task):
    from rtlforge.core.plugins import PluginHost

    broken = answer("alu8").replace("2'd2: result = a & b;", "2'd2: result = a & missing;")
    result = Decomposer(Script(submodule__alu8=broken), host=PluginHost()).build(task)
    assert result.lint is not None and result.lint.verdict is Verdict.ERROR
    errors = [fb for fb in result.lint_feedback if fb.severity == "error"]
    assert errors and errors[0].file == "alu8.v" and "missing" in errors[0].message
    assert result.report is not None and result.report.verdict is not Verdict.PASS
