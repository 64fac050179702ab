"""The learned routers' networks and checkpoints (imports torch: load this module lazily).

- :class:`ActorCritic`: the PPO policy. A shared trunk (2 x 256, LayerNorm + ReLU) with heads
  for the agent and focus logits, the means of seven pre-sigmoid Gaussians (the continuous
  parameters and flags, bounded by the sigmoid) and the state value.
- :class:`WorldModel`: the MPC planner's model: from a state and an action, the next state's 40
  structural features, the reward and the probability that the episode ends.

A router checkpoint is an rtlforge checkpoint directory (:func:`rtlforge.trainers.checkpoints.
save_checkpoint`) whose trainer state says which router it is for and ``router.pt`` holding the
network's weights.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from rtlforge.agents.router.actions import AGENTS, FOCUSES, UNIT_NAMES
from rtlforge.agents.router.features import FEATURES, STATE_DIM, STRUCTURAL_DIMS
from rtlforge.core.errors import ConfigError

__all__ = [
    "ACTION_DIM",
    "WEIGHTS_FILE",
    "ActorCritic",
    "LoadedRouter",
    "Policy",
    "WorldModel",
    "encode_actions",
    "load_router",
    "save_router",
]

WEIGHTS_FILE = "router.pt"
N_UNITS = len(UNIT_NAMES)
#: One-hot agent, one-hot focus, then the seven units: the world model's action input.
ACTION_DIM = len(AGENTS) + len(FOCUSES) + N_UNITS


def _trunk(inputs: int, hidden: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(inputs, hidden), nn.LayerNorm(hidden), nn.ReLU(),
                         nn.Linear(hidden, hidden), nn.LayerNorm(hidden), nn.ReLU())


@dataclass
class Policy:
    """The action distributions for a batch of states (agent logits already masked)."""

    agent: torch.distributions.Categorical
    focus: torch.distributions.Categorical
    units: torch.distributions.Normal  # over pre-sigmoid values
    value: torch.Tensor

    def log_prob(self, agent: torch.Tensor, focus: torch.Tensor, raw: torch.Tensor
                 ) -> torch.Tensor:
        return (self.agent.log_prob(agent) + self.focus.log_prob(focus)
                + self.units.log_prob(raw).sum(-1))

    def head_log_probs(self, agent: torch.Tensor, focus: torch.Tensor, raw: torch.Tensor
                       ) -> torch.Tensor:
        """Per head (agent, focus, continuous): shape (batch, 3); the heads' ratios are clipped
        separately, so noise in the continuous part cannot clip away the agent's gradient."""
        return torch.stack([self.agent.log_prob(agent), self.focus.log_prob(focus),
                            self.units.log_prob(raw).sum(-1)], dim=-1)

    def entropy(self) -> torch.Tensor:
        return self.agent.entropy() + self.focus.entropy() + self.units.entropy().sum(-1)


class ActorCritic(nn.Module):
    def __init__(self, state_dim: int = STATE_DIM, hidden: int = 256) -> None:
        super().__init__()
        self.state_dim, self.hidden = state_dim, hidden
        self.trunk = _trunk(state_dim, hidden)
        self.agent_head = nn.Linear(hidden, len(AGENTS))
        self.focus_head = nn.Linear(hidden, len(FOCUSES))
        self.unit_head = nn.Linear(hidden, N_UNITS)
        self.log_std = nn.Parameter(torch.full((N_UNITS,), -0.5))
        self.value_head = nn.Linear(hidden, 1)
        for head in (self.agent_head, self.focus_head, self.unit_head):
            nn.init.zeros_(head.weight)  # uniform choices at the start
            nn.init.zeros_(head.bias)

    def forward(self, states: torch.Tensor, agent_mask: torch.Tensor | None = None) -> Policy:
        h = self.trunk(states)
        logits = self.agent_head(h)
        if agent_mask is not None:
            logits = logits.masked_fill(~agent_mask, -1e9)
        std = self.log_std.clamp(-3.0, 1.0).exp().expand(states.shape[0], N_UNITS)
        return Policy(agent=torch.distributions.Categorical(logits=logits),
                      focus=torch.distributions.Categorical(logits=self.focus_head(h)),
                      units=torch.distributions.Normal(self.unit_head(h), std),
                      value=self.value_head(h).squeeze(-1))


class WorldModel(nn.Module):
    def __init__(self, state_dim: int = STATE_DIM, hidden: int = 256) -> None:
        super().__init__()
        self.state_dim, self.hidden = state_dim, hidden
        self.trunk = _trunk(state_dim + ACTION_DIM, hidden)
        self.next_head = nn.Linear(hidden, STRUCTURAL_DIMS)
        self.reward_head = nn.Linear(hidden, 1)
        self.done_head = nn.Linear(hidden, 1)

    def forward(self, states: torch.Tensor, actions: torch.Tensor
                ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(next structural features, reward, done logit) for each (state, encoded action)."""
        h = self.trunk(torch.cat([states, actions], dim=-1))
        return self.next_head(h), self.reward_head(h).squeeze(-1), self.done_head(h).squeeze(-1)


def encode_actions(agent: torch.Tensor, focus: torch.Tensor, units: torch.Tensor
                   ) -> torch.Tensor:
    """The world model's action input for a batch: one-hot agent, one-hot focus, units."""
    return torch.cat([nn.functional.one_hot(agent, len(AGENTS)).float(),
                      nn.functional.one_hot(focus, len(FOCUSES)).float(), units], dim=-1)


def save_router(path: str | Path, net: nn.Module, *, router: str, step: int,
                extra: dict[str, Any] | None = None, optimizer: Any = None) -> Path:
    """Write ``net`` as a checkpoint the ``router`` plugin loads (``path`` replaced atomically)."""
    from rtlforge.trainers.checkpoints import save_checkpoint

    state = {"router": router, "state_dim": net.state_dim, "hidden": net.hidden,
             "features": [f.name for f in FEATURES], **(extra or {})}
    return save_checkpoint(path, step=step, state=state, optimizer=optimizer,
                           save_model=lambda d: torch.save(net.state_dict(), d / WEIGHTS_FILE))


@dataclass
class LoadedRouter:
    net: nn.Module
    state: dict[str, Any]
    step: int


def load_router(path: str | Path, router: str) -> LoadedRouter:
    """The network a :func:`save_router` checkpoint holds; a ConfigError names what is wrong.

    A checkpoint is untrusted input: the weights are read with ``weights_only=True`` (a pickle
    holding code is refused, never run), and anything malformed (garbage weights, shapes that
    do not fit, missing or mistyped metadata) is a ConfigError, not a traceback.
    """
    import pickle

    try:
        return _load_router(path, router)
    except ConfigError:
        raise
    except (pickle.UnpicklingError, EOFError, KeyError, TypeError, ValueError, AttributeError,
            RuntimeError, OSError) as exc:
        raise ConfigError(f"router {router!r}: {path} is not a usable router checkpoint: "
                          f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}") from exc


def _load_router(path: str | Path, router: str) -> LoadedRouter:
    from rtlforge.trainers.checkpoints import load_checkpoint
    from rtlforge.trainers.errors import CheckpointError

    try:
        found = load_checkpoint(path, restore_rng=False)
    except CheckpointError as exc:
        raise ConfigError(f"router {router!r}: {exc}") from exc
    state = found.state
    if state.get("router") != router:
        raise ConfigError(f"{path} is a checkpoint for router {state.get('router')!r}, "
                          f"not {router!r}")
    names: Sequence[str] = state.get("features", ())
    if list(names) != [f.name for f in FEATURES]:
        raise ConfigError(f"{path} was trained on different state features; retrain it")
    cls = ActorCritic if router == "ppo" else WorldModel
    net = cls(state_dim=int(state["state_dim"]), hidden=int(state["hidden"]))
    weights = found.path / WEIGHTS_FILE
    if not weights.is_file():
        raise ConfigError(f"{path} has no {WEIGHTS_FILE}")
    net.load_state_dict(torch.load(weights, map_location="cpu", weights_only=True))
    net.eval()
    return LoadedRouter(net=net, state=state, step=found.step)
