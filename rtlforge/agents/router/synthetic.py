"""A synthetic refinement loop with known per-(agent, error category) success rates.

It lets the learned routers be trained and tested in seconds, without an LLM or EDA tools: an
episode is one task, each step one iteration, and the environment hands out the same
:class:`RouterContext` / :class:`IterationRecord` objects the real loop records, so features and
rewards are computed exactly as in a real run.

Every task hides one error category. The first attempt passes with a per-agent first-try rate
(lower for complex specs); otherwise it fails with the hidden category, and each later attempt
fixes it with ``FIX_RATES[category][agent]`` (+0.05 when the action's focus suits the category).
A fixed syntax or width error reveals a logic bug 30% of the time (the design now compiles but is
wrong), so stages advance as in a real run. The iteration budget is 3 (the real loop's default is
5): with more, nearly every policy passes eventually and the choice of agent hardly matters.
The rates are chosen so that the heuristic router's rules are reasonable but not optimal: it
sends syntax errors and first logic failures to debug, whereas here fast fixes syntax best and
genius fixes logic best.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from rtlforge.agents.models import AgentAction, Focus, IterationRecord, RouterContext, Tier
from rtlforge.agents.router.reward import router_reward
from rtlforge.core.models import Verdict

__all__ = [
    "CATEGORIES",
    "FIRST_TRY_RATES",
    "FIX_RATES",
    "Episode",
    "Evaluation",
    "SyntheticRouterEnv",
    "best_agent",
    "evaluate_router",
    "oracle_action",
    "run_episode",
    "run_episodes",
]

CATEGORIES: tuple[str, ...] = ("syntax", "width", "logic", "timing", "area")

FIX_RATES: dict[str, dict[str, float]] = {
    "syntax": {"genius": 0.55, "fast": 0.90, "debug": 0.45, "optimize": 0.20},
    "width": {"genius": 0.45, "fast": 0.30, "debug": 0.90, "optimize": 0.20},
    "logic": {"genius": 0.85, "fast": 0.15, "debug": 0.30, "optimize": 0.10},
    "timing": {"genius": 0.35, "fast": 0.10, "debug": 0.25, "optimize": 0.90},
    "area": {"genius": 0.20, "fast": 0.10, "debug": 0.15, "optimize": 0.90},
}
FIRST_TRY_RATES: dict[str, dict[str, float]] = {
    "simple": {"genius": 0.45, "fast": 0.40, "debug": 0.20, "optimize": 0.15},
    "complex": {"genius": 0.35, "fast": 0.10, "debug": 0.10, "optimize": 0.05},
}
#: Tokens one call of each agent spends (prompt + completion).
TOKENS: dict[str, int] = {"genius": 3000, "fast": 600, "debug": 1500, "optimize": 1500}
_SUITED_FOCUS: dict[str, Focus] = {"syntax": Focus.ERROR, "width": Focus.ERROR,
                                   "logic": Focus.ERROR, "timing": Focus.SYNTHESIS,
                                   "area": Focus.SYNTHESIS}
_REVEALS_LOGIC = 0.3
#: The cell budget of every synthetic task: passing designs are under it, area failures over.
CELL_BUDGET = 500

_SIMPLE_SPECS = ("Implement a 2-to-1 multiplexer with inputs a, b, sel and output y.",
                 "Implement an 8-bit register with synchronous reset and enable.",
                 "Implement a 4-bit adder with carry out.",
                 "Implement an edge detector on a single-bit input.")
_COMPLEX_SPECS = ("Implement a pipelined ALU with a FIFO on its output and an FSM controller.",
                  "Implement a UART receiver: an FSM, a shift register and a counter.",
                  "Implement a bus arbiter with a FIFO per requester and a round-robin counter.",
                  "Implement a cache controller FSM with a memory handshake and a decoder.")


def best_agent(category: str) -> str:
    """The agent with the highest fix rate for ``category``."""
    rates = FIX_RATES[category]
    return max(rates, key=rates.__getitem__)


def oracle_action(ctx: RouterContext) -> AgentAction:
    """What a router that knows the rates would do: the best first-try agent, then the best
    agent for the last error category with its suited focus (the bound a router can reach)."""
    if not ctx.history or ctx.history[-1].error_category not in FIX_RATES:
        complexity = "complex" if ctx.spec in _COMPLEX_SPECS else "simple"
        rates = FIRST_TRY_RATES[complexity]
        return AgentAction(agent=max(rates, key=rates.__getitem__), focus=Focus.FULL,
                           reason="oracle: first")
    category = ctx.history[-1].error_category
    return AgentAction(agent=best_agent(category), focus=_SUITED_FOCUS[category],
                       reason=f"oracle: {category}")


@dataclass
class Episode:
    """One task's trajectory: the context before each step, its action, record and reward."""

    contexts: list[RouterContext] = field(default_factory=list)
    actions: list[AgentAction] = field(default_factory=list)
    records: list[IterationRecord] = field(default_factory=list)
    rewards: list[float] = field(default_factory=list)
    category: str = ""

    @property
    def total_reward(self) -> float:
        return sum(self.rewards)

    @property
    def passed(self) -> bool:
        return bool(self.records) and self.records[-1].verdict is Verdict.PASS


class SyntheticRouterEnv:
    """Seeded: the same seed gives the same tasks and the same outcomes for the same actions."""

    def __init__(self, seed: int = 0, *, max_iterations: int = 3,
                 fix_rates: Mapping[str, Mapping[str, float]] | None = None) -> None:
        self.rng = random.Random(seed)
        self.max_iterations = max_iterations
        self.fix_rates = {c: dict(r) for c, r in (fix_rates or FIX_RATES).items()}
        self._count = 0
        self._ctx: RouterContext | None = None
        self._category = ""
        self._complex = False

    # ---------------------------------------------------------------- episode control

    def reset(self, category: str | None = None) -> RouterContext:
        """Start a new task (its hidden category random unless given); its first context."""
        self._count += 1
        self._category = category or self.rng.choice(CATEGORIES)
        self._complex = self.rng.random() < 0.5
        spec = self.rng.choice(_COMPLEX_SPECS if self._complex else _SIMPLE_SPECS)
        self._ctx = RouterContext(
            task_id=f"synthetic-{self._count}", spec=spec, top="top_module",
            ports=self.rng.randint(3, 24) if self._complex else self.rng.randint(2, 8),
            has_testbench=True, sequential=self._complex or self.rng.random() < 0.5,
            iteration=0, max_iterations=self.max_iterations)
        return self._ctx

    @property
    def category(self) -> str:
        """The current task's hidden error category (what an oracle router would know)."""
        return self._category

    def context_for(self, category: str, *, iteration: int = 1) -> RouterContext:
        """A context after ``iteration`` failed attempts with ``category`` (for evaluation)."""
        ctx = self.reset(category)
        history = tuple(self._failure(i, "fast" if i == 0 else "debug", category)
                        for i in range(iteration))
        ctx = ctx.model_copy(update={"iteration": iteration, "history": history,
                                     "code": _code(category)})
        self._ctx = ctx
        return ctx

    def step(self, action: AgentAction) -> tuple[IterationRecord, float, bool, RouterContext]:
        """Run one iteration: (record, reward, done, next context)."""
        ctx = self._ctx
        if ctx is None:
            raise RuntimeError("call reset() first")
        agent, i = action.agent, ctx.iteration
        if agent not in TOKENS:
            raise ValueError(f"synthetic environment knows no agent {agent!r}")
        if not ctx.history:
            rate = FIRST_TRY_RATES["complex" if self._complex else "simple"][agent]
        else:
            rate = self.fix_rates[self._category][agent]
            if action.focus is _SUITED_FOCUS[self._category]:
                rate += 0.05
        success = self.rng.random() < rate
        if success and ctx.history and self._category in ("syntax", "width") and (
                self.rng.random() < _REVEALS_LOGIC):
            self._category = "logic"
            record = self._failure(i, agent, "logic", action)
        elif success:
            record = self._pass(i, agent, action)
        else:
            record = self._failure(i, agent, self._category, action)
        previous = ctx.history[-1] if ctx.history else None
        reward = router_reward(previous, record, cell_budget=CELL_BUDGET)
        done = record.verdict is Verdict.PASS or i + 1 >= ctx.max_iterations
        nxt = ctx.model_copy(update={
            "iteration": i + 1, "history": (*ctx.history, record),
            "code": _code(None if record.verdict is Verdict.PASS else self._category)})
        self._ctx = nxt
        return record, reward, done, nxt

    # ---------------------------------------------------------------- records

    def _pass(self, i: int, agent: str, action: AgentAction | None = None) -> IterationRecord:
        return IterationRecord(
            iteration=i, tier=Tier.ROUTER, agent=agent, action=action, verdict=Verdict.PASS,
            stages_passed=("security", "lint", "simulate", "synth"), error_count=0,
            mismatches=0, llm_calls=1, prompt_tokens=TOKENS[agent] // 2,
            completion_tokens=TOKENS[agent] - TOKENS[agent] // 2,
            cells=self.rng.randint(100, 300), timing_met=True)

    def _failure(self, i: int, agent: str, category: str,
                 action: AgentAction | None = None) -> IterationRecord:
        rng = self.rng
        common = {"iteration": i, "tier": Tier.ROUTER, "agent": agent, "action": action,
                  "error_category": category, "llm_calls": 1,
                  "prompt_tokens": TOKENS[agent] // 2,
                  "completion_tokens": TOKENS[agent] - TOKENS[agent] // 2}
        if category in ("syntax", "width"):
            return IterationRecord(**common, verdict=Verdict.ERROR, stages_passed=("security",),
                                   failed_stage="lint", error_count=rng.randint(1, 3))
        if category in ("logic", "timing"):
            # timing: cycle-timing checks of the testbench fail (latency, handshake order)
            return IterationRecord(**common, verdict=Verdict.FAIL,
                                   stages_passed=("security", "lint"), failed_stage="simulate",
                                   error_count=1, mismatches=rng.randint(1, 20))
        # area: over the cell budget, so synthesis fails before timing is analysed. Were it
        # reported as met, every failing iteration would earn the +15 timing bonus and staying
        # over budget would pay about as well as fixing it: the agent choice would not matter
        return IterationRecord(**common, verdict=Verdict.FAIL,
                               stages_passed=("security", "lint", "simulate"),
                               failed_stage="synth", error_count=1, mismatches=0,
                               cells=rng.randint(2 * CELL_BUDGET, 3 * CELL_BUDGET))


def _code(category: str | None) -> str:
    body = {"syntax": "  assign y = a & b\n", "width": "  assign y = {a, b};\n",
            "logic": "  always @(posedge clk) q <= d;\n  assign y = a | b;\n",
            "timing": "  always @(posedge clk) begin\n    q <= d;\n    r <= q;\n  end\n",
            "area": "  always @(*) case (s)\n    0: y = a * b;\n    default: y = 0;\n  endcase\n"}
    return f"module top_module(input a, input b, output y);\n{body.get(category or '', '')}" \
           "endmodule\n"


def run_episode(env: SyntheticRouterEnv, choose: Callable[[RouterContext], AgentAction],
                *, category: str | None = None) -> Episode:
    """Play one task to the end with ``choose`` picking each action."""
    episode = Episode()
    ctx = env.reset(category)
    episode.category = env.category
    done = False
    while not done:
        action = choose(ctx)
        record, reward, done, nxt = env.step(action)
        episode.contexts.append(ctx)
        episode.actions.append(action)
        episode.records.append(record)
        episode.rewards.append(reward)
        ctx = nxt
    return episode


def run_episodes(envs: Sequence[SyntheticRouterEnv],
                 choose: Callable[[list[int], list[RouterContext]], list[AgentAction]]
                 ) -> list[Episode]:
    """One episode on each of ``envs`` in lockstep: ``choose(slots, contexts)`` picks the
    actions of every still running episode at once (one batched policy call per iteration
    instead of one per decision)."""
    episodes = [Episode() for _ in envs]
    contexts: dict[int, RouterContext] = {}
    for slot, env in enumerate(envs):
        contexts[slot] = env.reset()
        episodes[slot].category = env.category
    while contexts:
        slots = list(contexts)
        actions = choose(slots, [contexts[s] for s in slots])
        for slot, action in zip(slots, actions, strict=True):
            record, reward, done, nxt = envs[slot].step(action)
            episode = episodes[slot]
            episode.contexts.append(contexts[slot])
            episode.actions.append(action)
            episode.records.append(record)
            episode.rewards.append(reward)
            if done:
                del contexts[slot]
            else:
                contexts[slot] = nxt
    return episodes


@dataclass
class Evaluation:
    """A router on held-out synthetic episodes: mean episode reward and, per error category,
    the share of its decisions after a failure with that category that chose the category's
    best agent (None for a category that never came up)."""

    reward_mean: float
    best_agent_rate: dict[str, float | None]
    episodes: int


def evaluate_router(choose: Callable[[RouterContext], AgentAction], *, episodes: int = 400,
                    seed: int = 0, max_iterations: int = 3) -> Evaluation:
    """Play ``episodes`` tasks with ``choose``; episode ``i`` runs in its own environment
    seeded from (``seed``, ``i``), so two routers evaluated with the same seed face the same
    tasks and the same first draws (common random numbers: a smaller difference is visible)."""
    hits = dict.fromkeys(CATEGORIES, 0)
    seen = dict.fromkeys(CATEGORIES, 0)
    total = 0.0
    for i in range(episodes):
        env = SyntheticRouterEnv(seed * 1_000_003 + i, max_iterations=max_iterations)
        episode = run_episode(env, choose)
        total += episode.total_reward
        for ctx, action in zip(episode.contexts, episode.actions, strict=True):
            category = ctx.history[-1].error_category if ctx.history else None
            if category in seen:
                seen[category] += 1
                hits[category] += action.agent == best_agent(category)
    return Evaluation(reward_mean=total / max(episodes, 1),
                      best_agent_rate={c: hits[c] / seen[c] if seen[c] else None
                                       for c in CATEGORIES},
                      episodes=episodes)
