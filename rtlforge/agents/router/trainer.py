"""The ``router`` trainer: ``rtlforge train CONFIG.yaml`` with ``trainer: router``.

Trains the PPO policy (``router: ppo``) or the MPC world model (``router: mpc``) from the
synthetic environment and/or recorded ``decisions.jsonl`` files, writing ``OUT/metrics.jsonl``
(one line per step), ``OUT/checkpoints/checkpoint-N``, ``OUT/final`` (the checkpoint the router
plugins load with ``path=``) and ``OUT/train_summary.json``.

One step is: PPO: ``episodes_per_step`` synthetic episodes plus ``replay_per_step`` recorded
trajectories, then one PPO update; MPC: ``episodes_per_step`` synthetic episodes added to the
transition buffer (which starts with every recorded transition), then ``epochs`` passes of
world-model training over it.
"""

from __future__ import annotations

import json
import math
import random
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field, ValidationError, model_validator

from rtlforge.agents.models import AgentAction, Decision, RouterContext
from rtlforge.agents.router.actions import AGENTS, FOCUSES, UNIT_NAMES, from_action, to_action
from rtlforge.agents.router.features import STRUCTURAL_DIMS, state_vector
from rtlforge.agents.router.heuristic import heuristic_action
from rtlforge.agents.router.policy import Step, raw_from_units, stable_seed
from rtlforge.agents.router.reward import router_reward
from rtlforge.agents.router.synthetic import (
    SyntheticRouterEnv,
    evaluate_router,
    run_episode,
    run_episodes,
)
from rtlforge.core.interfaces import Trainer
from rtlforge.core.models import Verdict
from rtlforge.trainers.config import StrictModel, TrainerConfig, resolve_out_dir
from rtlforge.trainers.errors import TrainerInfraError
from rtlforge.trainers.loop import run_steps
from rtlforge.trainers.metrics import ProgressCallback
from rtlforge.trainers.rng import seed_everything

__all__ = ["MPCSettings", "PPOSettings", "RouterData", "RouterTrainer", "RouterTrainerConfig",
           "Transition", "load_decisions", "trajectories_from_decisions"]


class PPOSettings(StrictModel):
    learning_rate: float = Field(1e-3, gt=0)
    gamma: float = Field(0.99, gt=0, le=1)
    lam: float = Field(0.95, ge=0, le=1)
    clip: float = Field(0.2, gt=0)
    epochs: int = Field(4, ge=1)
    minibatch_size: int = Field(32, ge=1)
    # 64 episodes (~120 decisions) per update: with 8, one update sees about one sample per
    # (state kind, agent) pair and follows the noise of single outcomes
    episodes_per_step: int = Field(64, ge=0)
    replay_per_step: int = Field(8, ge=0)
    epsilon: float = Field(0.3, ge=0, le=1)  # epsilon-greedy: random agent and focus
    epsilon_decay: float = Field(0.995, gt=0, le=1)  # per episode
    warmup_episodes: int = Field(20, ge=0)  # the heuristic acts for the first episodes
    value_coef: float = Field(0.5, ge=0)
    entropy_coef: float = Field(0.01, ge=0)
    reward_scale: float = Field(0.01, gt=0)  # rewards span ~[-150, 200]; the critic sees ~1
    max_grad_norm: float = Field(10.0, gt=0)
    max_importance: float = Field(2.0, gt=0)  # truncation of pi_old / mu on off-policy steps
    anneal_lr: bool = True  # learning rate linearly down to a tenth over the run's steps
    hidden: int = Field(256, ge=8)


class MPCSettings(StrictModel):
    sequences: int = Field(64, ge=1)
    horizon: int = Field(3, ge=1)
    gamma: float = Field(0.99, gt=0, le=1)
    learning_rate: float = Field(1e-3, gt=0)
    episodes_per_step: int = Field(16, ge=0)  # behaviour: heuristic with epsilon random actions
    epsilon: float = Field(0.5, ge=0, le=1)
    epochs: int = Field(2, ge=1)
    batch_size: int = Field(64, ge=1)
    reward_scale: float = Field(0.01, gt=0)
    hidden: int = Field(256, ge=8)


class RouterData(StrictModel):
    synthetic: bool = True  # roll out in rtlforge.agents.router.synthetic
    max_iterations: int = Field(3, ge=1)  # the synthetic environment's iteration budget
    decisions: list[str] = Field(default_factory=list)  # decisions.jsonl files to replay


class RouterTrainerConfig(TrainerConfig):
    """A router training run; no ``model:`` (the network is small and built here)."""

    trainer: Literal["router"] = "router"
    model: None = None  # type: ignore[assignment]  # TrainerConfig's LLM section does not apply
    router: Literal["ppo", "mpc"] = "ppo"
    threads: int = Field(1, ge=1)
    data: RouterData = RouterData()
    ppo: PPOSettings = PPOSettings()
    mpc: MPCSettings = MPCSettings()
    eval_episodes: int = Field(200, ge=1)  # synthetic episodes of evaluate()

    @model_validator(mode="after")
    def _some_data(self) -> RouterTrainerConfig:
        if not self.data.synthetic and not self.data.decisions:
            raise ValueError("data: set synthetic: true or list decisions files (or both)")
        return self


# -------------------------------------------------------------------------------- replay data


def load_decisions(paths: Iterable[str | Path]) -> list[Decision]:
    """Every Decision line with an outcome; a torn last line is skipped, a bad one is named."""
    out: list[Decision] = []
    for path in paths:
        try:
            lines = Path(path).read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise TrainerInfraError(f"cannot read decisions file {path}: {exc.strerror}"
                                    ) from None
        for n, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                decision = Decision.model_validate_json(line)
            except ValidationError as exc:
                if n == len(lines):
                    continue  # a run killed mid-write
                raise TrainerInfraError(f"{path}:{n}: not a Decision line: "
                                        f"{exc.errors()[0]['msg']}") from None
            if decision.outcome is not None:
                out.append(decision)
    return out


def _previous(decision: Decision) -> Any:
    return decision.context.history[-1] if decision.context.history else None


def trajectories_from_decisions(decisions: Sequence[Decision]) -> list[list[Step]]:
    """Decisions grouped into one trajectory per task run (a new one when the task changes or
    the iteration does not increase); decisions for agents outside the routed four are dropped."""
    trajectories: list[list[Step]] = []
    current: list[Step] = []
    last_key: tuple[str, int] | None = None
    for d in decisions:
        if last_key is None or d.task_id != last_key[0] or d.iteration <= last_key[1]:
            if current:
                trajectories.append(current)
            current = []
        last_key = (d.task_id, d.iteration)
        if d.action.agent not in AGENTS or d.outcome is None:
            continue
        state = d.state if d.state is not None and len(d.state) == len(
            state_vector(d.context)) else state_vector(d.context)
        current.append(Step.from_action(tuple(state), d.action,
                                        router_reward(_previous(d), d.outcome)))
    if current:
        trajectories.append(current)
    return trajectories


class Transition(StrictModel):
    """A world-model sample: state, encoded action, next structural features, reward, done."""

    state: tuple[float, ...]
    agent: int
    focus: int
    units: tuple[float, ...]
    next_features: tuple[float, ...]
    reward: float
    done: bool


def _transition(ctx: RouterContext, action: AgentAction, outcome: Any) -> Transition:
    nxt = ctx.model_copy(update={"iteration": ctx.iteration + 1,
                                 "history": (*ctx.history, outcome)})
    enc = from_action(action)
    done = outcome.verdict is Verdict.PASS or ctx.iteration + 1 >= ctx.max_iterations
    return Transition(state=state_vector(ctx), agent=enc.agent, focus=enc.focus,
                      units=enc.units, next_features=state_vector(nxt)[:STRUCTURAL_DIMS],
                      reward=router_reward(ctx.history[-1] if ctx.history else None, outcome),
                      done=done)


# -------------------------------------------------------------------------------- the trainer


class RouterTrainer(Trainer):
    name: ClassVar[str] = "router"
    config_class: ClassVar[type[RouterTrainerConfig]] = RouterTrainerConfig
    reports_progress: ClassVar[bool] = True

    def __init__(self, config: RouterTrainerConfig, *, host: Any = None,
                 progress: ProgressCallback | None = None) -> None:
        """Args:
            config: the validated training config (the YAML file's ``RouterTrainerConfig``).
            host: where the reward, validators and estimators the config names come from
                (default: ``PluginHost.default()``).
            progress: called with each metrics record once it is written (the CLI draws
                its progress bar with it).
        """
        try:
            import torch
        except ImportError as exc:
            raise TrainerInfraError("the router trainer needs torch: "
                                    "pip install 'rtlforge[train]'") from exc
        from rtlforge.agents.router.nets import ActorCritic, WorldModel

        self.config, self.progress = config, progress
        self.out_dir = resolve_out_dir(config)
        torch.set_num_threads(config.threads)
        seed_everything(config.seed)
        self._gen = torch.Generator().manual_seed(config.seed)
        self.rng = random.Random(config.seed)
        self.env = (SyntheticRouterEnv(config.seed, max_iterations=config.data.max_iterations)
                    if config.data.synthetic else None)
        self.decisions = load_decisions(config.data.decisions)
        self.step = 0
        self.episodes = 0
        #: behaviour log-probs of the actions sampled since the last update, by id(action)
        self._behaviour: dict[int, tuple[Any, ...]] = {}
        if config.router == "ppo":
            # one environment per episode of a step: a step's episodes run in lockstep, so
            # the policy is called once per iteration for all of them
            self.envs = [SyntheticRouterEnv(stable_seed(config.seed, "ppo", i),
                                            max_iterations=config.data.max_iterations)
                         for i in range(config.ppo.episodes_per_step)
                         ] if config.data.synthetic else []
            self.net: Any = ActorCritic(hidden=config.ppo.hidden)
            lr = config.ppo.learning_rate
            self.replay = trajectories_from_decisions(self.decisions)
        else:
            self.net = WorldModel(hidden=config.mpc.hidden)
            lr = config.mpc.learning_rate
            self.buffer = [_transition(d.context, d.action, d.outcome) for d in self.decisions
                           if d.action.agent in AGENTS]
        self.net.eval()
        self.optimizer = torch.optim.Adam(self.net.parameters(), lr=lr)
        if config.checkpoint.resume_from:
            self.resume(Path(config.checkpoint.resume_from))

    # ---------------------------------------------------------------- acting

    @property
    def epsilon(self) -> float:
        """The exploration rate of the next episode (0.3 x 0.995 per episode by default)."""
        return self._epsilon_at(self.episodes)

    def _epsilon_at(self, episode: int) -> float:
        p = self.config.ppo
        return p.epsilon * p.epsilon_decay ** episode

    def _ppo_choose(self, first_episode: int, slots: list[int],
                    contexts: list[RouterContext]) -> list[AgentAction]:
        """The behaviour policy for a batch of running episodes (slot ``i`` is episode
        ``first_episode + i``): the heuristic during the warm-up, else epsilon-greedy around
        the policy (a uniformly random agent and focus with probability epsilon).

        A sampled action's behaviour log-probabilities (agent and focus with epsilon mixed
        in, the continuous sample) are kept for the update's importance weights.
        """
        import torch

        warmup = self.config.ppo.warmup_episodes
        actions: list[AgentAction | None] = [
            heuristic_action(c) if first_episode + s < warmup else None
            for s, c in zip(slots, contexts, strict=True)]
        todo = [i for i, a in enumerate(actions) if a is None]
        if not todo:
            return [a for a in actions if a is not None]
        with torch.no_grad():
            pol = self.net(torch.tensor([state_vector(contexts[i]) for i in todo],
                                        dtype=torch.float32))
            agents = pol.agent.sample().tolist()
            focuses = pol.focus.sample().tolist()
            raw = pol.units.sample()
            raw_logp = pol.units.log_prob(raw).sum(-1).tolist()
            agent_p, focus_p = pol.agent.probs.tolist(), pol.focus.probs.tolist()
        for row, i in enumerate(todo):
            eps = self._epsilon_at(first_episode + slots[i])
            agent, focus = agents[row], focuses[row]
            if self.rng.random() < eps:
                agent, focus = self.rng.randrange(len(AGENTS)), self.rng.randrange(len(FOCUSES))
            mu_agent = (1 - eps) * agent_p[row][agent] + eps / len(AGENTS)
            mu_focus = (1 - eps) * focus_p[row][focus] + eps / len(FOCUSES)
            units = torch.sigmoid(raw[row]).tolist()
            action = to_action(agent, focus, units, reason="ppo-train")
            self._behaviour[id(action)] = (math.log(mu_agent), math.log(mu_focus),
                                           raw_logp[row], tuple(raw[row].tolist()))
            actions[i] = action
        return [a for a in actions if a is not None]

    def _mpc_choose(self, ctx: RouterContext) -> AgentAction:
        if self.rng.random() < self.config.mpc.epsilon:
            units = [self.rng.random() for _ in UNIT_NAMES]
            return to_action(self.rng.randrange(len(AGENTS)), self.rng.randrange(len(FOCUSES)),
                             units, reason="mpc-train: random")
        return heuristic_action(ctx)

    # ---------------------------------------------------------------- steps

    def train_step(self) -> dict[str, Any]:
        start = time.perf_counter()
        record = (self._ppo_step() if self.config.router == "ppo" else self._mpc_step())
        self.step += 1
        return {"step": self.step, **record,
                "step_time_s": round(time.perf_counter() - start, 4)}

    def _collect(self, n: int, choose: Callable[[RouterContext], AgentAction]) -> list[Any]:
        episodes = []
        for _ in range(n if self.env is not None else 0):
            episodes.append(run_episode(self.env, choose))
            self.episodes += 1
        return episodes

    def _ppo_step(self) -> dict[str, Any]:
        from rtlforge.agents.router.policy import ppo_update

        p = self.config.ppo
        warm = self.episodes < p.warmup_episodes
        episodes: list[Any] = []
        if self.envs:
            first = self.episodes
            episodes = run_episodes(self.envs, lambda slots, ctxs: self._ppo_choose(
                first, slots, ctxs))
            self.episodes += len(episodes)
        trajectories = [[self._step(c, a, r)
                         for c, a, r in zip(e.contexts, e.actions, e.rewards, strict=True)]
                        for e in episodes]
        self._behaviour.clear()
        if self.replay and p.replay_per_step:
            trajectories += [self.rng.choice(self.replay) for _ in range(p.replay_per_step)]
        if p.anneal_lr:  # linearly to a tenth by the last step: late updates fine-tune
            lr = p.learning_rate * max(0.1, 1 - self.step / max(self.config.steps, 1))
            for group in self.optimizer.param_groups:
                group["lr"] = lr
        stats = ppo_update(self.net, self.optimizer, trajectories, p, self._gen)
        rewards = [e.total_reward for e in episodes] or [
            sum(s.reward for s in t) for t in trajectories]
        return {"episodes": self.episodes, "reward_mean": sum(rewards) / max(len(rewards), 1),
                "epsilon": round(self.epsilon, 5), "warmup": warm, **stats}

    def _step(self, ctx: RouterContext, action: AgentAction, reward: float) -> Step:
        enc = from_action(action)
        sampled = self._behaviour.get(id(action))
        if sampled is None:  # the heuristic warm-up: deterministic
            return Step(tuple(state_vector(ctx)), enc.agent, enc.focus,
                        raw_from_units(enc.units), reward)
        # the sampled pre-sigmoid values, not the action's rounded parameters
        return Step(tuple(state_vector(ctx)), enc.agent, enc.focus, sampled[3], reward,
                    behaviour=sampled[:3])

    def _mpc_step(self) -> dict[str, Any]:
        import torch

        m = self.config.mpc
        episodes = self._collect(m.episodes_per_step, self._mpc_choose)
        for e in episodes:
            self.buffer += [_transition(c, a, r) for c, a, r in
                            zip(e.contexts, e.actions, e.records, strict=True)]
        if not self.buffer:
            raise TrainerInfraError("no transitions to train the world model on")
        from rtlforge.agents.router.nets import encode_actions

        states = torch.tensor([t.state for t in self.buffer], dtype=torch.float32)
        actions = encode_actions(torch.tensor([t.agent for t in self.buffer]),
                                 torch.tensor([t.focus for t in self.buffer]),
                                 torch.tensor([t.units for t in self.buffer]))
        nxt = torch.tensor([t.next_features for t in self.buffer], dtype=torch.float32)
        rew = torch.tensor([t.reward * m.reward_scale for t in self.buffer])
        done = torch.tensor([float(t.done) for t in self.buffer])
        totals = {"loss": 0.0, "state_loss": 0.0, "reward_loss": 0.0, "done_loss": 0.0}
        batches = 0
        self.net.train()
        for _ in range(m.epochs):
            order = torch.randperm(len(self.buffer), generator=self._gen)
            for lo in range(0, len(order), m.batch_size):
                mb = order[lo:lo + m.batch_size]
                p_next, p_rew, p_done = self.net(states[mb], actions[mb])
                state_loss = (p_next - nxt[mb]).pow(2).mean()
                reward_loss = (p_rew - rew[mb]).pow(2).mean()
                done_loss = torch.nn.functional.binary_cross_entropy_with_logits(
                    p_done, done[mb])
                loss = state_loss + reward_loss + done_loss
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()
                for key, value in (("loss", loss), ("state_loss", state_loss),
                                   ("reward_loss", reward_loss), ("done_loss", done_loss)):
                    totals[key] += value.item()
                batches += 1
        self.net.eval()
        rewards = [e.total_reward for e in episodes]
        return {"episodes": self.episodes, "transitions": len(self.buffer),
                "reward_mean": sum(rewards) / len(rewards) if rewards else None,
                **{k: v / max(batches, 1) for k, v in totals.items()}}

    # ---------------------------------------------------------------- the Trainer interface

    def router_instance(self) -> Any:
        """The router plugin this trainer's current network makes (for evaluation)."""
        from rtlforge.agents.router.mpc import MPCRouter
        from rtlforge.agents.router.policy import PPORouter

        if self.config.router == "ppo":
            router: Any = PPORouter()
            router.net = self.net
            return router
        m = self.config.mpc
        return MPCRouter.from_model(self.net, sequences=m.sequences, horizon=m.horizon,
                                    gamma=m.gamma, seed=self.config.seed)

    def train(self) -> dict[str, Any]:
        cfg = self.config
        last = run_steps(self, cfg, self.out_dir, self.progress)
        summary = {"trainer": self.name, "router": cfg.router, "steps": self.step,
                   "episodes": self.episodes, "final": str(self.out_dir / "final"),
                   "last": last, "evaluation": self.evaluate()}
        (self.out_dir / "train_summary.json").write_text(json.dumps(summary, indent=2) + "\n",
                                                         encoding="utf-8")
        return summary

    def evaluate(self) -> dict[str, Any]:
        """The router (greedy) and the heuristic on the same held-out synthetic tasks
        (:func:`~rtlforge.agents.router.synthetic.evaluate_router`), and how often the
        router picks each error category's best agent."""
        n, seed = self.config.eval_episodes, self.config.seed + 1_000_003
        mi = self.config.data.max_iterations
        router = self.router_instance()
        ours = evaluate_router(lambda c: router.decide(c, AGENTS), episodes=n, seed=seed,
                               max_iterations=mi)
        heuristic = evaluate_router(heuristic_action, episodes=n, seed=seed, max_iterations=mi)
        return {"episodes": n, "reward_mean": ours.reward_mean,
                "heuristic_reward_mean": heuristic.reward_mean,
                "best_agent_rate": ours.best_agent_rate}

    def save(self, path: Path) -> None:
        from rtlforge.agents.router.nets import save_router

        save_router(path, self.net, router=self.config.router, step=self.step,
                    optimizer=self.optimizer,
                    extra={"episodes": self.episodes, "seed": self.config.seed})

    def resume(self, path: Path) -> None:
        import torch

        from rtlforge.agents.router.nets import WEIGHTS_FILE
        from rtlforge.trainers.checkpoints import latest_checkpoint, load_checkpoint

        if str(path) == "latest":
            found_path = latest_checkpoint(self.out_dir / "checkpoints")
            if found_path is None:
                return
            path = found_path
        found = load_checkpoint(path, optimizer=self.optimizer)
        self.net.load_state_dict(torch.load(found.path / WEIGHTS_FILE, weights_only=True))
        self.step = found.step
        self.episodes = int(found.state.get("episodes", 0))
