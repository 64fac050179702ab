"""The two specialists no router picks: the Waveform role (rule-routed by the spec's wording)
and the Testbench role (called by the loop when a task has no testbench).

Waveform cues were chosen from how VerilogEval v2 words such problems: "Read the simulation
waveforms to determine what the circuit does, then implement it." followed by a ``time``
table. A plain mention of "waveform" is not enough on its own (a PWM spec "generates a square
waveform"); it needs the table with it.
"""

from __future__ import annotations

import re
from typing import ClassVar

from rtlforge.agents.base import AgentContext, RoleSettings
from rtlforge.agents.models import Focus
from rtlforge.agents.roles.common import BuiltinRole
from rtlforge.agents.roles.interface import clock_port, interface_ports
from rtlforge.agents.roles.waveform_table import parse_waveform_table, render_table, replace_table
from rtlforge.core.models import Task

__all__ = ["WAVEFORM_CUES", "TestbenchRole", "WaveformRole", "waveform_cue"]

#: (rule name, pattern): any one of these in the spec routes the task to the waveform role.
WAVEFORM_CUES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("simulation-waveforms", re.compile(r"\bsimulation\s+wave\s*forms?\b", re.IGNORECASE)),
    ("read-the-waveform", re.compile(r"\b(?:read|from|given|study|examine)\s+(?:the\s+)?"
                                     r"(?:following\s+)?wave\s*forms?\b", re.IGNORECASE)),
    ("timing-diagram", re.compile(r"\btiming\s+diagrams?\b", re.IGNORECASE)),
    ("determine-what-the-circuit-does", re.compile(
        r"\bdetermine\s+what\s+(?:the|this)\s+(?:circuit|module|design)\s+does\b",
        re.IGNORECASE)),
)


def waveform_cue(spec: str) -> str | None:
    """The rule that makes ``spec`` a waveform problem (``"waveform: timing-diagram"``), or
    None. A waveform table alone (a ``time`` header with rows) counts too."""
    for rule, pattern in WAVEFORM_CUES:
        if pattern.search(spec):
            return f"waveform: {rule}"
    if parse_waveform_table(spec) is not None:
        return "waveform: waveform-table"
    return None


class WaveformRole(BuiltinRole):
    """Circuits given as waveforms: a structured, row-checked method over a cleaned table."""

    name: ClassVar[str] = "waveform"
    description: ClassVar[str] = "rule-routed: infers the circuit from a waveform table"
    routed: ClassVar[bool] = False
    #: ChipCraftBrain's Waveform agent: temperature 0.4, retrieval k 15 (docs/agents-roles.md)
    defaults: ClassVar[RoleSettings] = RoleSettings(
        template="waveform", temperature=0.4, retrieval_k=15, max_tokens=4096,
        focus=Focus.FULL)

    def matches(self, task: Task, spec: str) -> str | None:
        return waveform_cue(spec)

    def fields(self, ctx: AgentContext) -> dict[str, object]:
        values = super().fields(ctx)
        table = parse_waveform_table(ctx.spec)
        if table is not None:
            ports = interface_ports(ctx.task)
            rendered = render_table(
                table, inputs={p.name for p in ports if p.direction == "input"},
                outputs={p.name for p in ports if p.direction == "output"},
                clock=clock_port(ctx.task))
            values["spec"] = replace_table(ctx.spec, table, rendered).strip()
        return values


class TestbenchRole(BuiltinRole):
    """Writes a self-checking testbench (see :mod:`rtlforge.agents.testbench` for the checks
    its answer must pass and for why it never overrules a real testbench)."""

    __test__ = False  # a class named Test* is not a pytest test class

    name: ClassVar[str] = "testbench"
    description: ClassVar[str] = "writes a self-checking testbench when a task has none"
    routed: ClassVar[bool] = False
    #: ChipCraftBrain's Testbench agent: temperature 0.6, retrieval k 4 (docs/agents-roles.md)
    defaults: ClassVar[RoleSettings] = RoleSettings(
        template="testbench", temperature=0.6, retrieval_k=4, max_tokens=4096,
        focus=Focus.FULL)

    def fields(self, ctx: AgentContext) -> dict[str, object]:
        values = super().fields(ctx)
        # the testbench is written from the spec alone: showing the design would let its bugs
        # leak into the expected values (retrieved reference material is other designs, with
        # the task's own kept out by the retriever's leakage guard)
        values["code"] = ""
        values["waveform"] = ""
        values["feedback"] = (f"Problems rtlforge found in your previous testbench (fix all of "
                              f"them):\n{ctx.feedback.strip()}" if ctx.feedback.strip() else "")
        return values
