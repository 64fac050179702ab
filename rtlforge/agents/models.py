"""The typed records the orchestration layer passes around and writes to disk.

Everything a refinement run decides is one of these models, so a run can be replayed, a router
trained offline from it (:class:`Decision` lines), and a report drawn from it without re-running
anything. They are pydantic models because they cross boundaries: JSONL files, the CLI's
``--json`` output, and third-party routers and roles.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from rtlforge.core.models import Candidate, Feedback, ValidationReport, Verdict

__all__ = [
    "ATTEMPT_FEEDBACK",
    "ROUTED_AGENTS",
    "AgentAction",
    "Attempt",
    "Decision",
    "Focus",
    "IterationRecord",
    "RouterContext",
    "SolveResult",
    "Tier",
]

#: The agents a router chooses among (the paper's discrete action); specialists are rule-routed.
ROUTED_AGENTS: tuple[str, ...] = ("genius", "fast", "debug", "optimize")


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Focus(StrEnum):
    """What the next prompt concentrates on (the router's second discrete action)."""

    FULL = "full"
    MINIMAL = "minimal"
    ERROR = "error"
    SYNTHESIS = "synthesis"
    ARCHITECTURE = "architecture"


class Tier(StrEnum):
    """Who produced a candidate: the symbolic solver, a rule-routed specialist, or the router."""

    SYMBOLIC = "symbolic"
    SPECIALIST = "specialist"
    ROUTER = "router"
    DECOMPOSITION = "decomposition"


class AgentAction(_Frozen):
    """One routing decision: the agent and how it should work this iteration.

    ``None`` for a continuous parameter means "the role's default"; the router's parameters are
    bounded as the paper bounds them (retrieval depth 3-20, retry budget 0-1).
    """

    agent: str = Field(min_length=1)
    focus: Focus = Focus.FULL
    temperature: float | None = Field(None, ge=0.0, le=2.0)
    max_tokens: int | None = Field(None, ge=1)
    retrieval_k: int | None = Field(None, ge=3, le=20)
    retry_budget: float = Field(0.5, ge=0.0, le=1.0)
    lint_focus: bool = False
    timing_focus: bool = False
    area_focus: bool = False
    reason: str = ""  # why this action: a rule's name, "heuristic: ...", "policy"


class IterationRecord(_Frozen):
    """What one iteration of the loop did and what validation said about it.

    Holds exactly what the router's reward and features need, so both can be recomputed from a
    recorded run (offline training) without the designs themselves.
    """

    iteration: int = Field(ge=0)
    tier: Tier
    agent: str
    action: AgentAction | None = None
    candidates: int = Field(1, ge=0)  # candidates generated (multi-candidate mode: > 1)
    verdict: Verdict
    stages_passed: tuple[str, ...] = ()  # e.g. ("security", "lint", "simulate")
    failed_stage: str | None = None
    error_count: int = Field(0, ge=0)  # error-severity feedback items of the kept candidate
    error_category: str | None = None  # category of its first error
    mismatches: int | None = None  # failing checks reported by the simulator, when known
    llm_calls: int = Field(0, ge=0)
    prompt_tokens: int = Field(0, ge=0)
    completion_tokens: int = Field(0, ge=0)
    seconds: float = 0.0
    candidate_digest: str | None = None
    cells: int | None = None  # synthesis cell count of the kept candidate, when measured
    timing_met: bool | None = None

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def lint_passed(self) -> bool:
        return "lint" in self.stages_passed

    @property
    def sim_passed(self) -> bool:
        return "simulate" in self.stages_passed


class RouterContext(_Frozen):
    """Everything a router may look at before an iteration, and nothing it must not (no golden).

    Serialisable, so a recorded :class:`Decision` is enough to recompute the router's state
    vector when training offline.
    """

    task_id: str
    spec: str
    category: str | None = None
    top: str = ""
    ports: int = 0  # number of ports
    has_testbench: bool = True
    sequential: bool | None = None  # task has a clock, when known
    iteration: int = Field(0, ge=0)
    max_iterations: int = Field(5, ge=1)
    history: tuple[IterationRecord, ...] = ()
    feedback: tuple[Feedback, ...] = ()  # of the last kept candidate
    code: str | None = None  # the last kept candidate's design text
    metadata: dict[str, Any] = Field(default_factory=dict)


class Decision(_Frozen):
    """One router decision with its outcome: a line of ``decisions.jsonl``, a training sample."""

    task_id: str
    iteration: int = Field(ge=0)
    router: str
    context: RouterContext
    action: AgentAction
    outcome: IterationRecord | None = None  # filled in once the iteration has been validated
    state: tuple[float, ...] | None = None  # the router's feature vector, when it computes one


#: Feedback items an :class:`Attempt` keeps (the first ones, as the next prompt leads with them).
ATTEMPT_FEEDBACK = 5


class Attempt(_Frozen):
    """An iteration whose kept candidate did not pass: the design and the first feedback it
    got (what the next iteration was told), so the report can show what went wrong."""

    iteration: int = Field(ge=0)
    verdict: Verdict
    candidate: Candidate
    feedback: tuple[Feedback, ...] = ()


class SolveResult(_Frozen):
    """The result of solving one task: a line of ``results.jsonl`` and of ``refine --json``."""

    task_id: str
    verdict: Verdict
    iterations: int = Field(0, ge=0)
    llm_calls: int = Field(0, ge=0)
    tokens: int = Field(0, ge=0)
    agents: tuple[str, ...] = ()  # agent of each iteration, in order
    tiers: tuple[Tier, ...] = ()  # tier of each iteration, in order
    solved_by: Tier | None = None  # tier whose candidate passed
    trace: str | None = None  # path of the task's JSONL trace
    seconds: float = 0.0
    records: tuple[IterationRecord, ...] = ()
    candidate: Candidate | None = None  # the best candidate (the passing one when solved)
    report: ValidationReport | None = None  # its validation report
    error: str | None = None  # an infrastructure failure that stopped the task (verdict error)
    #: Each failing iteration's kept candidate and feedback, in iteration order (results
    #: written before this field was added have none).
    attempts: tuple[Attempt, ...] = ()
    #: Whose testbench gave the verdict: the task's own, one the testbench agent wrote (the
    #: task had none), or none at all (lint and synthesis only).
    judge: Literal["real", "generated", "none"] = "real"

    @property
    def passed(self) -> bool:
        return self.verdict is Verdict.PASS

    def summary(self) -> dict[str, Any]:
        """The one-line JSON object ``refine --json`` prints."""
        return {"task_id": self.task_id, "verdict": self.verdict.value,
                "iterations": self.iterations, "llm_calls": self.llm_calls,
                "tokens": self.tokens, "agents": list(self.agents),
                "tiers": [t.value for t in self.tiers], "trace": self.trace,
                "judge": self.judge}
