"""The PPO router: an actor-critic policy over the hybrid action, and its PPO update.

torch is imported inside the functions that need it (it is in the ``train`` extra); the router
class itself imports without it, so ``rtlforge plugins`` lists it on a machine without torch.

Training (:mod:`rtlforge.agents.router.trainer`) collects trajectories of :class:`Step`, scores
them with :func:`gae` (lambda 0.95, gamma 0.99) and updates with the clipped PPO objective.
Exploration is epsilon-greedy (a uniformly random agent and focus with probability epsilon,
0.3 decaying x0.995 per episode), the first 20 episodes follow the heuristic router, and recorded
trajectories (``decisions.jsonl`` lines) are replayed into the same updates. Those three kinds
of step are off-policy; :func:`ppo_update` weighs them by ``pi_old / mu`` (see there for why
that decides whether PPO learns at all).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import Field

from rtlforge.agents.base import Router
from rtlforge.agents.models import AgentAction, RouterContext
from rtlforge.agents.router.actions import AGENTS, UNIT_NAMES, from_action, to_action
from rtlforge.agents.router.features import state_vector
from rtlforge.agents.router.heuristic import HeuristicRouter
from rtlforge.core.errors import ConfigError
from rtlforge.core.options import PluginOptions

if TYPE_CHECKING:
    from rtlforge.agents.router.trainer import PPOSettings

__all__ = ["PPORouter", "Step", "agent_mask", "gae", "ppo_update", "raw_from_units",
           "stable_seed"]

RAW_LIMIT = 6.0  # |pre-sigmoid| of an encoded unit (nets.RAW_LIMIT, kept torch-free here)


def gae(rewards: Sequence[float], values: Sequence[float], dones: Sequence[bool], *,
        gamma: float = 0.99, lam: float = 0.95, last_value: float = 0.0
        ) -> tuple[list[float], list[float]]:
    """Generalised advantage estimation over one trajectory: (advantages, returns).

    delta_t = r_t + gamma * V(s_{t+1}) * (1 - done_t) - V(s_t) and
    A_t = delta_t + gamma * lam * (1 - done_t) * A_{t+1}; returns are A_t + V(s_t).
    ``last_value`` is V of the state after the last step (ignored when that step is done).
    """
    n = len(rewards)
    if not len(values) == len(dones) == n:
        raise ValueError("rewards, values and dones must have the same length")
    advantages = [0.0] * n
    running = 0.0
    for t in reversed(range(n)):
        alive = 0.0 if dones[t] else 1.0
        next_value = values[t + 1] if t + 1 < n else last_value
        delta = rewards[t] + gamma * next_value * alive - values[t]
        running = delta + gamma * lam * alive * running
        advantages[t] = running
    return advantages, [a + v for a, v in zip(advantages, values, strict=True)]


def raw_from_units(units: Sequence[float]) -> tuple[float, ...]:
    """Pre-sigmoid values whose sigmoid is ``units`` (clipped so 0 and 1 stay finite)."""
    out = []
    for u in units:
        u = min(1 - 1e-6, max(1e-6, float(u)))
        out.append(max(-RAW_LIMIT, min(RAW_LIMIT, math.log(u / (1 - u)))))
    return tuple(out)


def agent_mask(agents: Sequence[str]) -> tuple[bool, ...]:
    """Which of the routed agents are offered; all of them when none is."""
    mask = tuple(a in agents for a in AGENTS)
    return mask if any(mask) else (True,) * len(AGENTS)


def stable_seed(*parts: object) -> int:
    """A seed from ``parts`` that is the same in every process (BLAKE2b, not ``hash()``)."""
    text = "\x1f".join(str(p) for p in parts).encode("utf-8")
    return int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "little") >> 1


@dataclass
class Step:
    """One transition of a trajectory, as the PPO update needs it."""

    state: tuple[float, ...]
    agent: int
    focus: int
    raw: tuple[float, ...]  # pre-sigmoid continuous outputs
    reward: float
    mask: tuple[bool, ...] = (True,) * len(AGENTS)
    #: Log-probabilities of the taken agent, focus and continuous values under the policy that
    #: acted (epsilon mixed in); None: a deterministic policy (the heuristic warm-up, recorded
    #: decisions), whose discrete choices had probability 1 and whose continuous values were
    #: not sampled, so the continuous head does not learn from this step.
    behaviour: tuple[float, float, float] | None = None

    @classmethod
    def from_action(cls, state: tuple[float, ...], action: AgentAction, reward: float,
                    mask: tuple[bool, ...] = (True,) * len(AGENTS)) -> Step:
        enc = from_action(action)
        return cls(state, enc.agent, enc.focus, raw_from_units(enc.units), reward, mask)


def ppo_update(net: Any, optimizer: Any, trajectories: Sequence[Sequence[Step]],
               settings: PPOSettings, generator: Any) -> dict[str, float]:
    """One PPO update (``settings.epochs`` passes of minibatches) over whole trajectories.

    Each trajectory ends its episode (done at its last step), so GAE never looks across
    episodes. Old log-probabilities and values come from ``net`` before the update. The
    clipped surrogate is taken per action head (agent, focus, continuous) and summed, as
    hybrid-action PPO does: one joint ratio lets the continuous heads' noise clip the others.

    Steps the current policy did not choose (epsilon-greedy picks, the heuristic warm-up,
    replayed decisions) are off-policy. Treating them as on-policy is biased in a way that
    matters here: a baseline that is off for a state (the critic is learning too, and the
    advantages are normalised over the batch) then pushes every sampled action of that
    state the same way, which reinforces whatever the policy already prefers; the policy
    collapses onto one agent everywhere. So each head's surrogate is weighted by
    ``pi_old(a) / mu(a)`` (``mu``: the behaviour probability, :attr:`Step.behaviour`),
    truncated at ``settings.max_importance``, with the ratio still clipped around
    ``pi_old`` (the trust region): decoupled PPO, which is exact for the on-policy part
    (weight 1) and the expected on-policy gradient for the rest.
    """
    import torch

    steps = [s for traj in trajectories for s in traj]
    if not steps:
        return {}
    states = torch.tensor([s.state for s in steps], dtype=torch.float32)
    agents = torch.tensor([s.agent for s in steps])
    focus = torch.tensor([s.focus for s in steps])
    raw = torch.tensor([s.raw for s in steps], dtype=torch.float32)
    masks = torch.tensor([s.mask for s in steps], dtype=torch.bool)
    behaviour = torch.tensor([s.behaviour if s.behaviour is not None else (0.0, 0.0, 0.0)
                              for s in steps], dtype=torch.float32)
    sampled_units = torch.tensor([[1.0, 1.0, float(s.behaviour is not None)] for s in steps])
    with torch.no_grad():
        old = net(states, masks)
        old_logp = old.head_log_probs(agents, focus, raw)
        values = old.value.tolist()
        weights = ((old_logp - behaviour).exp().clamp(max=settings.max_importance)
                   * sampled_units)
    advantages: list[float] = []
    returns: list[float] = []
    i = 0
    for traj in trajectories:
        n = len(traj)
        if n == 0:
            continue
        adv, ret = gae([s.reward * settings.reward_scale for s in traj], values[i:i + n],
                       [False] * (n - 1) + [True], gamma=settings.gamma, lam=settings.lam)
        advantages += adv
        returns += ret
        i += n
    adv_t = torch.tensor(advantages, dtype=torch.float32)
    if len(steps) > 1:
        adv_t = (adv_t - adv_t.mean()) / (adv_t.std() + 1e-8)
    ret_t = torch.tensor(returns, dtype=torch.float32)
    totals = {"loss": 0.0, "policy_loss": 0.0, "value_loss": 0.0, "entropy": 0.0,
              "approx_kl": 0.0, "clipfrac": 0.0}
    batches = 0
    net.train()
    for _ in range(settings.epochs):
        order = torch.randperm(len(steps), generator=generator)
        for start in range(0, len(steps), settings.minibatch_size):
            mb = order[start:start + settings.minibatch_size]
            pol = net(states[mb], masks[mb])
            logp = pol.head_log_probs(agents[mb], focus[mb], raw[mb])
            log_ratio = logp - old_logp[mb]
            ratio = log_ratio.exp()
            a = adv_t[mb].unsqueeze(-1)
            clipped = ratio.clamp(1 - settings.clip, 1 + settings.clip)
            surrogate = torch.min(ratio * a, clipped * a) * weights[mb]
            policy_loss = -surrogate.sum(-1).mean()
            value_loss = (pol.value - ret_t[mb]).pow(2).mean()
            entropy = pol.entropy().mean()
            loss = (policy_loss + settings.value_coef * value_loss
                    - settings.entropy_coef * entropy)
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(net.parameters(), settings.max_grad_norm)
            optimizer.step()
            with torch.no_grad():
                totals["loss"] += loss.item()
                totals["policy_loss"] += policy_loss.item()
                totals["value_loss"] += value_loss.item()
                totals["entropy"] += entropy.item()
                totals["approx_kl"] += ((ratio - 1) - log_ratio).mean().item()
                totals["clipfrac"] += ((ratio - 1).abs() > settings.clip).float().mean().item()
            batches += 1
    net.eval()
    return {k: v / max(batches, 1) for k, v in totals.items()}


class PPORouter(Router):
    """The trained PPO policy (option ``path``: a ``rtlforge train`` router checkpoint).

    Decides greedily (the most likely agent and focus, the continuous means) unless ``sample``
    is set. Without ``path`` it is the untrained router of the training warm-up: it decides
    exactly like the heuristic router, saying so in each action's ``reason``.
    """

    name: ClassVar[str] = "ppo"

    class Options(PluginOptions):
        path: str | None = Field(None, description="router checkpoint (OUT/final of "
                                 "`rtlforge train` with trainer: router, router: ppo)")
        sample: bool = Field(False, description="sample actions instead of the greedy choice")
        seed: int = Field(0, description="seed of sampled actions (with sample=true)")

    def __init__(self, path: str | None = None, sample: bool = False, seed: int = 0) -> None:
        self.path, self.sample, self.seed = path, sample, seed
        self.net: Any = None
        self._warmup = HeuristicRouter()
        if path is not None:
            if not Path(path).exists():
                raise ConfigError(f"router 'ppo': no checkpoint at {path}")
            try:
                from rtlforge.agents.router.nets import load_router
            except ImportError as exc:
                raise ConfigError("router 'ppo' needs torch: pip install 'rtlforge[train]'"
                                  ) from exc
            self.net = load_router(path, "ppo").net

    def state(self, ctx: RouterContext) -> tuple[float, ...]:
        return state_vector(ctx)

    def decide(self, ctx: RouterContext, agents: Sequence[str]) -> AgentAction:
        if self.net is None:
            action = self._warmup.decide(ctx, agents)
            return action.model_copy(update={"reason": f"ppo (untrained): {action.reason}"})
        import torch

        mask = agent_mask(agents)
        with torch.no_grad():
            pol = self.net(torch.tensor([state_vector(ctx)], dtype=torch.float32),
                           torch.tensor([mask]))
            if self.sample:
                gen = torch.Generator().manual_seed(
                    stable_seed(self.seed, ctx.task_id, ctx.iteration))
                agent = int(torch.multinomial(pol.agent.probs[0], 1, generator=gen))
                focus = int(torch.multinomial(pol.focus.probs[0], 1, generator=gen))
                noise = torch.randn(len(UNIT_NAMES), generator=gen)
                raw = pol.units.mean[0] + pol.units.stddev[0] * noise
            else:
                agent = int(pol.agent.probs[0].argmax())
                focus = int(pol.focus.probs[0].argmax())
                raw = pol.units.mean[0]
            units = torch.sigmoid(raw).tolist()
        action = to_action(agent, focus, units, reason="ppo")
        if action.agent not in agents:  # none of the routed four is offered
            from rtlforge.agents.router.heuristic import pick_available

            action = action.model_copy(update={"agent": pick_available(action.agent, agents)})
        return action
