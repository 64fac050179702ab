"""The router's hybrid action: two discrete choices and seven bounded continuous values.

A policy outputs an agent index, a focus index and seven numbers in [0, 1] (sigmoid outputs):
temperature, token budget, retrieval depth, retry budget, then the lint / timing / area flags.
:func:`to_action` maps them onto an :class:`~rtlforge.agents.models.AgentAction` with the ranges
below; :func:`from_action` is the inverse a recorded decision is replayed with.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rtlforge.agents.models import ROUTED_AGENTS, AgentAction, Focus

__all__ = [
    "AGENTS",
    "FOCUSES",
    "RANGES",
    "ROLE_DEFAULTS",
    "UNIT_NAMES",
    "EncodedAction",
    "from_action",
    "to_action",
]

AGENTS: tuple[str, ...] = ROUTED_AGENTS
FOCUSES: tuple[Focus, ...] = tuple(Focus)
#: The continuous outputs, in head order; the last three are flags (on above 0.5).
UNIT_NAMES: tuple[str, ...] = ("temperature", "max_tokens", "retrieval_k", "retry_budget",
                               "lint_focus", "timing_focus", "area_focus")
#: (low, high) of each continuous parameter: value = low + unit * (high - low).
RANGES: dict[str, tuple[float, float]] = {
    "temperature": (0.1, 1.0),
    "max_tokens": (256.0, 4096.0),
    "retrieval_k": (3.0, 20.0),
    "retry_budget": (0.0, 1.0),
}
#: The paper's per-agent sampling (temperature, retrieval k) and our token budget: what a
#: recorded action that left a parameter to the role's default is replayed as.
ROLE_DEFAULTS: dict[str, dict[str, float]] = {
    "genius": {"temperature": 0.7, "retrieval_k": 15, "max_tokens": 4096},
    "fast": {"temperature": 0.5, "retrieval_k": 3, "max_tokens": 1024},
    "debug": {"temperature": 0.3, "retrieval_k": 5, "max_tokens": 2048},
    "optimize": {"temperature": 0.4, "retrieval_k": 4, "max_tokens": 2048},
}


@dataclass(frozen=True)
class EncodedAction:
    """An action as a policy sees it: indices into AGENTS / FOCUSES and seven units."""

    agent: int
    focus: int
    units: tuple[float, ...]


def _clip01(x: float) -> float:
    return min(1.0, max(0.0, float(x)))


def _scale(name: str, unit: float) -> float:
    low, high = RANGES[name]
    return low + _clip01(unit) * (high - low)


def to_action(agent: int, focus: int, units: Sequence[float], *, reason: str = "policy"
              ) -> AgentAction:
    """The :class:`AgentAction` for a policy's outputs (units outside [0, 1] are clipped)."""
    if len(units) != len(UNIT_NAMES):
        raise ValueError(f"expected {len(UNIT_NAMES)} continuous outputs, got {len(units)}")
    return AgentAction(
        agent=AGENTS[agent], focus=FOCUSES[focus],
        temperature=round(_scale("temperature", units[0]), 4),
        max_tokens=round(_scale("max_tokens", units[1])),
        retrieval_k=round(_scale("retrieval_k", units[2])),
        retry_budget=round(_scale("retry_budget", units[3]), 4),
        lint_focus=units[4] > 0.5, timing_focus=units[5] > 0.5, area_focus=units[6] > 0.5,
        reason=reason)


def _unit(name: str, value: float) -> float:
    low, high = RANGES[name]
    return _clip01((value - low) / (high - low))


def from_action(action: AgentAction) -> EncodedAction:
    """The policy outputs that produce ``action`` (flags as 0.75 / 0.25, inside each half).

    Parameters left as None take the agent's :data:`ROLE_DEFAULTS`; an agent outside the
    routed four cannot be encoded (ValueError).
    """
    if action.agent not in AGENTS:
        raise ValueError(f"agent {action.agent!r} is not one of the routed agents {AGENTS}")
    defaults = ROLE_DEFAULTS[action.agent]
    temperature = action.temperature if action.temperature is not None else defaults["temperature"]
    tokens = action.max_tokens if action.max_tokens is not None else defaults["max_tokens"]
    k = action.retrieval_k if action.retrieval_k is not None else defaults["retrieval_k"]
    units = (_unit("temperature", temperature), _unit("max_tokens", tokens),
             _unit("retrieval_k", k), _unit("retry_budget", action.retry_budget),
             0.75 if action.lint_focus else 0.25, 0.75 if action.timing_focus else 0.25,
             0.75 if action.area_focus else 0.25)
    return EncodedAction(AGENTS.index(action.agent), FOCUSES.index(action.focus), units)
