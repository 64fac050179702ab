"""An agent-role plugin: a specialist for specs with an asynchronous reset.

A role is settings (sampling, retrieval depth, focus, which generator) plus a prompt template;
the orchestrator builds a fresh context for every call and the role turns it into a
``GenerationRequest``. A role that is not ``routed`` is a specialist: the orchestrator hands it
the tasks its ``matches`` accepts, before the router is asked.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

from rtlforge import hookimpl
from rtlforge.agents.base import AgentRole, RoleSettings, RoleTemplate
from rtlforge.core.hookspecs import Register
from rtlforge.core.models import Task

_ASYNC_RESET = re.compile(r"\basynchronous(ly)?\s+(active[- ]low\s+)?reset", re.IGNORECASE)

TEMPLATE = RoleTemplate(
    name="reset-first",
    system="You write synthesisable Verilog-2005. Answer with one ```verilog block.",
    user=("Write module `{top}`.\n\n{spec}\n\n{ports}\n\n"
          "The reset is asynchronous: put it in the sensitivity list of every register "
          "(always @(posedge clk or posedge rst), or negedge for an active-low reset) and "
          "test it first in the block.\n\n{knowledge}\n\n{code}\n\n{feedback}\n\n{focus}"),
)


class ResetFirstRole(AgentRole):
    """States the asynchronous-reset idiom before anything else; low temperature."""

    name: ClassVar[str] = "reset-first"
    description: ClassVar[str] = "specs with an asynchronous reset, T=0.2, k=3"
    defaults: ClassVar[RoleSettings] = RoleSettings(temperature=0.2, retrieval_k=3)

    def __init__(self, **overrides: Any) -> None:
        super().__init__(**overrides)
        if "template" not in overrides:  # an agents file may still point at another one
            self.template = TEMPLATE

    def matches(self, task: Task, spec: str) -> str | None:
        return "asynchronous-reset" if _ASYNC_RESET.search(spec) else None


@hookimpl
def register_agent_roles(register: Register) -> None:
    register(ResetFirstRole)
