"""The alternative planner: a learned world model plus model-predictive control.

For each decision, :func:`plan` draws ``sequences`` (64) random action sequences of ``horizon``
(3) steps over the offered agents, rolls each through the world model (next structural
features, reward, episode end), scores it by its discounted predicted return (a step after a
predicted end counts with the probability the episode is still running) and returns the first
action of the best. The draws are seeded from the task and iteration, so a decision is
reproducible across processes.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from pydantic import Field

from rtlforge.agents.base import Router
from rtlforge.agents.models import AgentAction, RouterContext
from rtlforge.agents.router.actions import AGENTS, FOCUSES, UNIT_NAMES, to_action
from rtlforge.agents.router.features import STRUCTURAL_DIMS, state_vector
from rtlforge.agents.router.policy import agent_mask, stable_seed
from rtlforge.core.errors import ConfigError
from rtlforge.core.options import PluginOptions

__all__ = ["MPCRouter", "plan"]


def plan(model: Any, state: Sequence[float], mask: Sequence[bool], *, sequences: int = 64,
         horizon: int = 3, gamma: float = 0.99, seed: int = 0
         ) -> tuple[int, int, list[float], float]:
    """(agent, focus, units, predicted return) of the best sequence's first action."""
    import torch

    gen = torch.Generator().manual_seed(seed)
    allowed = torch.tensor([i for i, ok in enumerate(mask) if ok])
    agents = allowed[torch.randint(len(allowed), (sequences, horizon), generator=gen)]
    focus = torch.randint(len(FOCUSES), (sequences, horizon), generator=gen)
    units = torch.rand((sequences, horizon, len(UNIT_NAMES)), generator=gen)
    from rtlforge.agents.router.nets import encode_actions

    s = torch.tensor([list(state)], dtype=torch.float32).repeat(sequences, 1)
    spec_part = s[:, STRUCTURAL_DIMS:]
    total = torch.zeros(sequences)
    alive = torch.ones(sequences)
    with torch.no_grad():
        for t in range(horizon):
            nxt, reward, done_logit = model(s, encode_actions(agents[:, t], focus[:, t],
                                                              units[:, t]))
            total += (gamma ** t) * alive * reward
            alive = alive * (1 - torch.sigmoid(done_logit))
            s = torch.cat([nxt, spec_part], dim=-1)
    best = int(total.argmax())
    return (int(agents[best, 0]), int(focus[best, 0]), units[best, 0].tolist(),
            float(total[best]))


class MPCRouter(Router):
    """World model + MPC (option ``path``: a router checkpoint trained with ``router: mpc``)."""

    name: ClassVar[str] = "mpc"

    class Options(PluginOptions):
        path: str = Field(description="router checkpoint (OUT/final of `rtlforge train` with "
                          "trainer: router, router: mpc)")
        sequences: int = Field(64, ge=1, description="random action sequences per decision")
        horizon: int = Field(3, ge=1, description="steps each sequence looks ahead")
        gamma: float = Field(0.99, gt=0.0, le=1.0,
                             description="discount of later steps' predicted rewards")
        seed: int = Field(0, description="seed of the sequence draws (with task and iteration)")

    def __init__(self, path: str, sequences: int = 64, horizon: int = 3, gamma: float = 0.99,
                 seed: int = 0) -> None:
        if not Path(path).exists():
            raise ConfigError(f"router 'mpc': no checkpoint at {path}")
        try:
            from rtlforge.agents.router.nets import load_router
        except ImportError as exc:
            raise ConfigError("router 'mpc' needs torch: pip install 'rtlforge[train]'") from exc
        self._setup(load_router(path, "mpc").net, sequences, horizon, gamma, seed)

    @classmethod
    def from_model(cls, model: Any, *, sequences: int = 64, horizon: int = 3,
                   gamma: float = 0.99, seed: int = 0) -> MPCRouter:
        """A planner over a world model in memory (the trainer evaluates its own this way)."""
        router = cls.__new__(cls)
        router._setup(model, sequences, horizon, gamma, seed)
        return router

    def _setup(self, model: Any, sequences: int, horizon: int, gamma: float, seed: int) -> None:
        self.model = model
        self.sequences, self.horizon, self.gamma, self.seed = sequences, horizon, gamma, seed

    def state(self, ctx: RouterContext) -> tuple[float, ...]:
        return state_vector(ctx)

    def decide(self, ctx: RouterContext, agents: Sequence[str]) -> AgentAction:
        mask = agent_mask(agents)
        agent, focus, units, predicted = plan(
            self.model, state_vector(ctx), mask, sequences=self.sequences,
            horizon=self.horizon, gamma=self.gamma,
            seed=stable_seed(self.seed, ctx.task_id, ctx.iteration))
        action = to_action(agent, focus, units, reason=f"mpc: predicted return {predicted:.3g}")
        if action.agent not in agents:
            from rtlforge.agents.router.heuristic import pick_available

            action = action.model_copy(update={"agent": pick_available(AGENTS[agent], agents)})
        return action
