"""The six built-in roles: the paper's settings, their templates, waveform routing and the
cleaned waveform table (on a table written here in VerilogEval's layout)."""

from __future__ import annotations

import string

import pytest

from rtlforge.agents import plugin as agents_plugin
from rtlforge.agents.base import ROLE_FIELDS, AgentContext, RoleTemplate
from rtlforge.agents.knowledge import plugin as knowledge_plugin
from rtlforge.agents.models import ROUTED_AGENTS, AgentAction, Focus
from rtlforge.agents.roles import (
    BUILTIN_ROLES,
    DebugRole,
    FastRole,
    GeniusRole,
    OptimizeRole,
    TestbenchRole,
    WaveformRole,
)
from rtlforge.agents.roles.interface import clock_port, interface_ports, reset_port
from rtlforge.agents.roles.specialists import waveform_cue
from rtlforge.agents.roles.waveform_table import parse_waveform_table, render_table
from rtlforge.core.models import Port, Task
from rtlforge.testing import make_plugin_host

# A spec in VerilogEval v2's layout (interface bullets, cue sentence, a time table), ours.
WAVE_SPEC = """
I would like you to implement a module named TopModule with the following
interface. All input and output ports are one bit unless otherwise
specified.

 - input  clk
 - input  d
 - output q

This is a sequential circuit. Read the simulation waveforms to determine
what the circuit does, then implement it.

  time  clk d   q
  0ns   0   0   x
  5ns   1   0   0
  10ns  0   1   0
  15ns  1   1   1
  20ns  0   0   1

Assume all sequential logic is triggered on the positive edge of the
clock.
"""


def context(task: Task, *, spec: str | None = None, action: AgentAction | None = None,
            **fields: object) -> AgentContext:
    return AgentContext(task=task, spec=spec if spec is not None else task.spec,
                        action=action or AgentAction(agent="x"), iteration=0, max_iterations=5,
                        **fields)  # type: ignore[arg-type]


def test_the_papers_settings_are_the_defaults() -> None:
    expected = {  # role: (temperature, retrieval_k, focus, routed), from the issue text
        "genius": (0.7, 15, Focus.FULL, True), "fast": (0.5, 3, Focus.FULL, True),
        "debug": (0.3, 5, Focus.ERROR, True), "optimize": (0.4, 4, Focus.SYNTHESIS, True),
    }
    for cls in (GeniusRole, FastRole, DebugRole, OptimizeRole):
        s = cls().settings
        assert (s.temperature, s.retrieval_k, s.focus, cls.routed) == expected[cls.name]
    assert not WaveformRole.routed and not TestbenchRole.routed
    assert tuple(r.name for r in BUILTIN_ROLES if r.routed) == ROUTED_AGENTS


def test_the_specialists_have_the_papers_settings() -> None:
    """ChipCraftBrain's agent settings (as issue 25 quotes them): the Waveform agent samples at
    temperature 0.4 with retrieval k 15, the Testbench agent at 0.6 with k 4 (ours were 0.2 / 3
    and 0.3 / 0; docs/agents-roles.md)."""
    waveform, testbench = WaveformRole().settings, TestbenchRole().settings
    assert (waveform.temperature, waveform.retrieval_k) == (0.4, 15)
    assert (testbench.temperature, testbench.retrieval_k) == (0.6, 4)
    assert "{knowledge}" in RoleTemplate.load("testbench").user  # k 4 reaches the prompt


def test_every_role_has_its_own_template_using_only_role_fields() -> None:
    names = set()
    for cls in BUILTIN_ROLES:
        template = RoleTemplate.load(cls.name)
        assert template.name == cls.name == cls.defaults.template
        names.add(template.user)
        used = {f for text in (template.user, template.system or "")
                for _, f, _, _ in string.Formatter().parse(text) if f}
        assert used <= ROLE_FIELDS and {"spec", "top"} <= used
        assert "```verilog" in template.user
    assert len(names) == len(BUILTIN_ROLES)  # no two roles share a prompt


def test_the_hook_registers_all_six_roles() -> None:
    host = make_plugin_host(("agents", agents_plugin), ("knowledge", knowledge_plugin))
    assert set(host.names("agent_role")) >= {r.name for r in BUILTIN_ROLES}
    assert host.create("agent_role", "debug", temperature=0.1).settings.temperature == 0.1


def test_first_iteration_prompt_has_no_empty_sections() -> None:
    task = Task(id="t", spec="Add a and b.", top="adder",
                ports=(Port(name="a", direction="input", width=4),
                       Port(name="y", direction="output", width=4)))
    request = FastRole().build_request(context(task))
    assert "Ports (use exactly these names" in request.prompt
    assert "input [3:0] a" in request.prompt
    assert "previous attempt" not in request.prompt and "validation reported" not in request.prompt
    assert request.metadata["agent"] == "fast"


def test_debug_prompt_carries_code_feedback_window_and_action_flags() -> None:
    task = Task(id="t", spec="Invert a.", top="inv")
    ctx = context(task, action=AgentAction(agent="debug", focus=Focus.ERROR, lint_focus=True),
                  code="module inv(input a, output y); assign y = a; endmodule",
                  feedback="sim_mismatch: y was 1, expected 0", waveform="*  5ns  1  1  0")
    prompt = DebugRole().build_request(ctx).prompt
    assert "```verilog\nmodule inv(input a, output y); assign y = a; endmodule\n```" in prompt
    assert "y was 1, expected 0" in prompt and "*  5ns  1  1  0" in prompt
    assert "Concentrate on the reported errors" in prompt and "lint-clean" in prompt


@pytest.mark.parametrize(("spec", "rule"), [
    (WAVE_SPEC, "waveform: simulation-waveforms"),
    ("See the timing diagram below for the handshake.", "waveform: timing-diagram"),
    ("Study the waveform and build the circuit.", "waveform: read-the-waveform"),
    ("Determine what this circuit does and implement it.",
     "waveform: determine-what-the-circuit-does"),
    ("time a b y\n0ns 0 0 0\n5ns 0 1 1\n", "waveform: waveform-table"),
    ("Build a PWM unit that generates a square waveform with a duty cycle.", None),
    ("Implement a 4-bit counter with synchronous reset.", None),
])
def test_waveform_role_is_rule_routed_by_spec_cues(spec: str, rule: str | None) -> None:
    task = Task(id="t", spec=spec, top="TopModule")
    assert waveform_cue(spec) == rule
    assert WaveformRole().matches(task, spec) == rule
    assert FastRole().matches(task, spec) is None


def test_spec_interface_bullets_give_the_ports() -> None:
    task = Task(id="t", spec=WAVE_SPEC + "\n - output out (32 bits)\n", top="TopModule")
    ports = interface_ports(task)
    assert [(p.name, p.direction, p.width) for p in ports] == [
        ("clk", "input", 1), ("d", "input", 1), ("q", "output", 1), ("out", "output", 32)]
    assert clock_port(task) == "clk" and reset_port(task) is None
    declared = Task(id="t", spec="", top="m", ports=(Port(name="rst_n", direction="input"),))
    assert reset_port(declared) == "rst_n" and clock_port(declared) is None


def test_waveform_table_is_parsed_and_rendered_cleaned() -> None:
    table = parse_waveform_table(WAVE_SPEC)
    assert table is not None
    assert table.columns == ("time", "clk", "d", "q")
    assert table.rows[1] == ("5ns", "1", "0", "0") and len(table.rows) == 5
    rendered = render_table(table, inputs={"clk", "d"}, outputs={"q"}, clock="clk")
    assert rendered == (
        "Waveform table (5 rows; inputs: clk, d; outputs: q):\n"
        "row  time  clk  d  |  q\n"
        "1    0ns   0    0  |  x\n"
        "2    5ns   1    0  |  0  <- clk rises\n"
        "3    10ns  0    1  |  0\n"
        "4    15ns  1    1  |  1  <- clk rises\n"
        "5    20ns  0    0  |  1")


def test_waveform_prompt_replaces_the_table_and_walks_the_method() -> None:
    task = Task(id="t", spec=WAVE_SPEC, top="TopModule")
    prompt = WaveformRole().build_request(context(task)).prompt
    assert "2    5ns   1    0  |  0  <- clk rises" in prompt
    assert "  5ns   1   0   0" not in prompt  # the raw rows are gone, the prose stays
    assert "Assume all sequential logic is triggered" in prompt
    for step in ("Inputs and outputs", "Tabulate", "Find the relation", "Check every row",
                 "Only then write the code"):
        assert step in prompt


def test_testbench_prompt_names_the_status_lines_and_hides_the_design() -> None:
    task = Task(id="t", spec="A counter.", top="cnt",
                ports=(Port(name="clk", direction="input"), Port(name="q", direction="output")))
    ctx = context(task, code="module cnt(); endmodule", feedback="only 2 scenario(s)")
    prompt = TestbenchRole().build_request(ctx).prompt
    assert "module cnt(); endmodule" not in prompt
    assert "only 2 scenario(s)" in prompt
    for marker in ("Mismatches: %0d in %0d samples", "TEST PASSED", "TEST FAILED",
                   "always #5 clk = ~clk;", "// Scenario N"):
        assert marker in prompt
