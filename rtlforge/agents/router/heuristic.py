"""The default router: a few readable rules, no training (docs/router.md lists them).

The rules, first match wins:

1. ``first-complex`` / ``first-simple``: nothing generated yet: genius (architecture focus)
   when the spec is complex (>= 3 component keywords, > 2500 characters or > 16 ports), else
   fast (full focus).
2. ``passed``: the last candidate passed (an optimise phase): optimize, synthesis focus, area.
3. ``stalled``: two iterations without passing more stages and the same error category:
   genius, architecture focus (a different approach rather than another patch).
4. ``compile-error``: syntax / declaration / width / structural errors: debug, error focus,
   lint flag.
5. ``functional``: wrong outputs: debug, error focus.
6. ``timing`` / ``area``: optimize, synthesis focus, the matching flag.
7. ``unknown``: anything else: genius, full focus.

Continuous parameters are left as None (each role's own defaults), except the flags.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rtlforge.agents.base import Router
from rtlforge.agents.models import AgentAction, Focus, RouterContext
from rtlforge.agents.router.features import complexity_score, error_group, last_error_category
from rtlforge.core.models import Verdict

__all__ = ["HeuristicRouter", "heuristic_action", "pick_available"]

COMPLEX_KEYWORDS = 3
COMPLEX_SPEC_CHARS = 2500
COMPLEX_PORTS = 16
#: If the preferred agent is not offered, the next one in this order that is.
_FALLBACK = ("genius", "debug", "fast", "optimize")


def pick_available(preferred: str, agents: Sequence[str]) -> str:
    """``preferred`` when offered, else the first offered agent in fallback order."""
    if preferred in agents:
        return preferred
    for agent in _FALLBACK:
        if agent in agents:
            return agent
    if not agents:
        raise ValueError("no agents to route to")
    return agents[0]


def _is_complex(ctx: RouterContext) -> bool:
    return (complexity_score(ctx.spec) >= COMPLEX_KEYWORDS or len(ctx.spec) > COMPLEX_SPEC_CHARS
            or ctx.ports > COMPLEX_PORTS)


def _stalled(ctx: RouterContext) -> bool:
    if len(ctx.history) < 2:
        return False
    last, prev = ctx.history[-1], ctx.history[-2]
    return (len(last.stages_passed) <= len(prev.stages_passed)
            and last.error_category is not None and last.error_category == prev.error_category)


def heuristic_action(ctx: RouterContext) -> AgentAction:
    """The rule-chosen action (agent among the routed four; see the module docstring)."""
    if not ctx.history:
        if _is_complex(ctx):
            return AgentAction(agent="genius", focus=Focus.ARCHITECTURE,
                               reason="heuristic: first-complex")
        return AgentAction(agent="fast", focus=Focus.FULL, reason="heuristic: first-simple")
    if ctx.history[-1].verdict is Verdict.PASS:
        return AgentAction(agent="optimize", focus=Focus.SYNTHESIS, area_focus=True,
                           reason="heuristic: passed")
    if _stalled(ctx):
        return AgentAction(agent="genius", focus=Focus.ARCHITECTURE, reason="heuristic: stalled")
    group = error_group(last_error_category(ctx))
    if group in ("syntax", "declaration", "width", "structural"):
        return AgentAction(agent="debug", focus=Focus.ERROR, lint_focus=True,
                           reason="heuristic: compile-error")
    if group == "functional":
        return AgentAction(agent="debug", focus=Focus.ERROR, reason="heuristic: functional")
    if group == "timing":
        return AgentAction(agent="optimize", focus=Focus.SYNTHESIS, timing_focus=True,
                           reason="heuristic: timing")
    if group == "area":
        return AgentAction(agent="optimize", focus=Focus.SYNTHESIS, area_focus=True,
                           reason="heuristic: area")
    return AgentAction(agent="genius", focus=Focus.FULL, reason="heuristic: unknown")


class HeuristicRouter(Router):
    """Rules from the error category, the iteration and the stages passed; the default."""

    name: ClassVar[str] = "heuristic"

    def decide(self, ctx: RouterContext, agents: Sequence[str]) -> AgentAction:
        action = heuristic_action(ctx)
        agent = pick_available(action.agent, agents)
        if agent != action.agent:
            action = action.model_copy(update={
                "agent": agent, "reason": f"{action.reason} ({action.agent} unavailable)"})
        return action
