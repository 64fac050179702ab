"""A router plugin: try the offered agents in turn.

A router sees a ``RouterContext`` (the task, the iteration, the history of attempts and the
last feedback; never the golden) and returns an ``AgentAction``: which agent works next and
how. It is told every decision's outcome afterwards through ``observe``, which a learning
router may use.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rtlforge import hookimpl
from rtlforge.agents.base import Router
from rtlforge.agents.models import AgentAction, Focus, RouterContext
from rtlforge.core.hookspecs import Register


class RoundRobinRouter(Router):
    """Agent ``(offset + iteration) mod len(agents)``; error focus once an attempt failed."""

    name: ClassVar[str] = "round-robin"

    def __init__(self, *, offset: int = 0) -> None:
        """Args:
            offset: which of the offered agents the first iteration goes to.
        """
        self.offset = offset

    def decide(self, ctx: RouterContext, agents: Sequence[str]) -> AgentAction:
        agent = agents[(self.offset + ctx.iteration) % len(agents)]
        focus = Focus.ERROR if ctx.feedback else Focus.FULL
        return AgentAction(agent=agent, focus=focus, reason=f"round-robin: turn {ctx.iteration}")


@hookimpl
def register_routers(register: Register) -> None:
    register(RoundRobinRouter)
