"""The tool work of an episode as data, so it can run where the tools are.

An episode's cheap tools (files) run in the environment; the ones that start a tool or a
simulation (``compile``, ``run_testbench``, ``behave_self_check``, ``synthesise``, and the hidden
check at the end) are :data:`ToolJob` items: plain, picklable descriptions run by
:class:`EnvTools`. Locally the environment calls its own :class:`EnvTools`; given a remote
executor (the ``ray`` plugin) it hands the job over as a :class:`~rtlforge.core.executor.Work`
whose :class:`EnvToolWork` spec rebuilds an :class:`EnvTools` on the worker, with the worker's
own sandbox. Either way the same code judges, so a verdict does not depend on where it ran.

Every job returns data, never raises for the design: a worker's exception would have to cross
a process boundary, and error classes with their own constructors do not always survive that.
A job whose worker kept dying becomes its :meth:`lost` outcome: infrastructure, never a verdict.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from rtlforge.behave.sim.check import BehaveResult, check_model, check_rtl
from rtlforge.behave.sim.golden import TaskModelError, load_task_model
from rtlforge.behave.sim.stimulus import StimulusConfig
from rtlforge.behave.sim.task import BehaveTask
from rtlforge.core.errors import RtlforgeError, SecurityViolation, is_infra
from rtlforge.core.executor import WorkerServices, WorkSpec
from rtlforge.core.models import Candidate, PPAResult, Task
from rtlforge.core.plugins import HostSpec

if TYPE_CHECKING:
    from rtlforge.core.plugins import PluginHost
    from rtlforge.sandbox.runner import SandboxRunner
    from rtlforge.validate.pipeline import Pipeline

__all__ = ["CheckModelJob", "CheckRtlJob", "EnvToolWork", "EnvTools", "SynthJob",
           "SynthOutcome", "ToolJob", "ValidateJob", "lost_outcome"]


class _Job(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ValidateJob(_Job):
    """``compile`` and ``run_testbench``: the validation pipeline of ``toolchain``."""

    kind: Literal["validate"] = "validate"
    toolchain: str
    simulate: bool
    task: Task
    candidate: Candidate


class CheckRtlJob(_Job):
    """The design against the task's golden, or against the agent's own model
    (``model_source``: ``behave_self_check``)."""

    kind: Literal["check_rtl"] = "check_rtl"
    task: BehaveTask
    candidate: Candidate
    stimulus: StimulusConfig
    timeout_s: float
    model_name: str | None = None
    model_source: str | None = None


class CheckModelJob(_Job):
    """A submitted behaviour model against the task's golden (the hidden check)."""

    kind: Literal["check_model"] = "check_model"
    task: BehaveTask
    model_name: str
    model_source: str
    stimulus: StimulusConfig


class SynthJob(_Job):
    """``synthesise``: the estimator's PPA of the design."""

    kind: Literal["synth"] = "synth"
    candidate: Candidate
    top: str
    clock: str | None = None
    period_ns: float | None = None


ToolJob = Annotated[ValidateJob | CheckRtlJob | CheckModelJob | SynthJob,
                    Field(discriminator="kind")]


class SynthOutcome(BaseModel):
    """What ``synthesise`` found: the PPA, or why there is none, classified where it ran
    (``infra``: not the design's fault; ``security``: the gate refused it; ``design``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    ppa: PPAResult | None = None
    problem: Literal["infra", "security", "design"] | None = None
    message: str = ""
    log: str = ""


class EnvTools:
    """Runs :data:`ToolJob` items with one plugin host and sandbox runner (an episode's, or a
    worker's). Pipelines and the estimator are built on first use and kept."""

    def __init__(self, host: PluginHost, runner: SandboxRunner, *, estimator: str,
                 tool_timeout_s: float) -> None:
        self.host = host
        self.runner = runner
        self.estimator_name = estimator
        self.tool_timeout_s = tool_timeout_s
        self._pipelines: dict[tuple[str, bool], Pipeline] = {}
        self._estimator: Any = None

    def close(self) -> None:
        """Stop the estimator's helpers (the runner belongs to whoever passed it in)."""
        if self._estimator is not None:
            self._estimator.close()
            self._estimator = None

    def pipeline(self, toolchain: str, simulate: bool) -> Pipeline:
        """The lint (and simulation) pipeline of ``toolchain``, on this runner."""
        key = (toolchain, simulate)
        if key not in self._pipelines:
            from rtlforge.validate.pipeline import Pipeline

            self._pipelines[key] = Pipeline.build(
                self.host, simulator=toolchain, lint=True, simulate=simulate,
                timeout=self.tool_timeout_s, runner=self.runner)
        return self._pipelines[key]

    def run(self, job: ValidateJob | CheckRtlJob | CheckModelJob | SynthJob) -> Any:
        """The job's outcome: a ValidationReport, a BehaveResult or a SynthOutcome."""
        if isinstance(job, ValidateJob):
            return self.pipeline(job.toolchain, job.simulate).validate(job.task, job.candidate)
        if isinstance(job, CheckRtlJob):
            golden = None
            if job.model_source is not None:
                name = (job.model_name or "model").rsplit(".", 1)[0]
                golden = load_task_model(job.task, job.model_source, name=name).instance()
            return check_rtl(job.task, job.candidate, runner=self.runner,
                             stimulus=job.stimulus, golden=golden, timeout_s=job.timeout_s)
        if isinstance(job, CheckModelJob):
            try:
                model = load_task_model(job.task, job.model_source,
                                        name=job.model_name.rsplit(".", 1)[0])
            except TaskModelError as exc:
                return BehaveResult(verdict="error", artifact="model",
                                    message=f"{job.model_name}: {exc}")
            return check_model(job.task, model, stimulus=job.stimulus)
        return self._synthesise(job)

    def _synthesise(self, job: SynthJob) -> SynthOutcome:
        try:
            if self._estimator is None:
                self._estimator = self.host.create("ppa_estimator", self.estimator_name)
            ppa = self._estimator.estimate(job.candidate, job.top, self.runner,
                                           clock=job.clock, period_ns=job.period_ns)
        except SecurityViolation as exc:
            return SynthOutcome(problem="security", message=str(exc))
        except RtlforgeError as exc:
            if is_infra(exc):
                return SynthOutcome(problem="infra", message=str(exc))
            if isinstance(exc.__cause__, SecurityViolation):  # the estimator wraps the gate's
                return SynthOutcome(problem="security", message=str(exc.__cause__))
            return SynthOutcome(problem="design", message=str(exc),
                                log=str(getattr(exc, "log", "")))
        except Exception as exc:  # noqa: BLE001 - a bug of ours is not the design's fault
            return SynthOutcome(problem="infra",
                                message=f"internal error: {type(exc).__name__}: {exc}")
        return SynthOutcome(ppa=ppa)


def lost_outcome(job: ValidateJob | CheckRtlJob | CheckModelJob | SynthJob, reason: str) -> Any:
    """What a job becomes when no worker could run it: infrastructure, never a verdict."""
    message = f"the worker running it was lost: {reason}"
    if isinstance(job, ValidateJob):
        from rtlforge.validate.pipeline import lost_report

        return lost_report((job.task, job.candidate), reason)
    if isinstance(job, SynthJob):
        return SynthOutcome(problem="infra", message=message)
    artifact: Literal["rtl", "model"] = "rtl" if isinstance(job, CheckRtlJob) else "model"
    return BehaveResult(verdict="infra_error", artifact=artifact, message=message)


class EnvToolWork(WorkSpec):
    """:class:`EnvTools` rebuilt on a remote worker from the episode's host and settings."""

    host: HostSpec = Field(default_factory=HostSpec)
    estimator: str
    tool_timeout_s: float

    def build(self, services: WorkerServices) -> Callable[[Any], Any]:
        from rtlforge.sandbox.runner import SandboxRunner

        tools = EnvTools(self.host.build(), SandboxRunner(), estimator=self.estimator,
                         tool_timeout_s=self.tool_timeout_s)
        return tools.run
