"""One agent episode over a BEHAVE task: a workspace, typed tools, budgets, a submission and
the hidden check against the task's golden model B*.

The environment is a step function over the chat transcript (``reset`` gives the opening
messages, ``step`` takes one assistant reply and answers each of its tool calls), so it serves
a scripted agent in a test, an HTTP LLM in :func:`run_episode`, or an RL rollout that drives it
itself. Everything the agent sends is untrusted: unknown tools, arguments that are not JSON or
do not validate, hostile file names and designs all come back as typed error results, and only
a failure of the harness itself (a tool missing, the sandbox down) is ``infra_error``.

B* never reaches the agent: the prompt is the spec and the interface, the workspace is the
agent's own in-memory files (the task directory is not reachable through any tool), and the one
simulation tool that compares behaviour (``behave_self_check``) compares the RTL with the
agent's *own* model. B* is loaded only by :meth:`AgentEnv.finish`, after the last turn.

Ending: on ``submit``; or when the turn, tool-call or token budget is spent, or the agent
replies without a tool call. The BEHAVE paper's rollouts (Appendix D.2) run up to 60 turns, the
default here. What the model is shown each turn is :meth:`AgentEnv.context`: the transcript
with the oldest interaction turns dropped once it outgrows ``max_context_chars``, keeping the
task instructions and the latest tool feedback (the paper's eviction); the transcript itself
keeps every message. ``EnvConfig.on_limit`` decides what the last case judges:
``"judge"`` (default) checks the workspace as it stands (design files by the naming
convention, ``model.py`` if present) and records ``submitted=False``; ``"no_submission"``
judges nothing (both artifacts ``missing``). An agent whose own infrastructure fails (the LLM
server down) ends the episode unjudged and ``unresolved``, never failed.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rtlforge.behave.env.jobs import (
    CheckModelJob,
    CheckRtlJob,
    EnvTools,
    EnvToolWork,
    SynthJob,
    SynthOutcome,
    ValidateJob,
    lost_outcome,
)
from rtlforge.behave.env.messages import AgentReply, Message, ToolCall, fit_context
from rtlforge.behave.env.prompt import system_prompt, task_prompt
from rtlforge.behave.env.tools import (
    TOOLS,
    CompileArgs,
    EditFileArgs,
    ListFilesArgs,
    ReadFileArgs,
    RunTestbenchArgs,
    SelfCheckArgs,
    SubmitArgs,
    SynthesiseArgs,
    ToolErrorKind,
    ToolResult,
    WriteFileArgs,
    openai_tools,
)
from rtlforge.behave.env.workspace import (
    HDL_SUFFIXES,
    Workspace,
    WorkspaceError,
    WorkspaceLimits,
)
from rtlforge.behave.sim.check import BehaveResult
from rtlforge.behave.sim.golden import TaskModelError, load_task_model
from rtlforge.behave.sim.stimulus import StimulusConfig
from rtlforge.behave.sim.task import BehaveTask
from rtlforge.core.errors import RtlforgeError, SecurityViolation, is_infra
from rtlforge.core.executor import Work
from rtlforge.core.models import Candidate, Feedback, SourceFile, Task, ValidationReport
from rtlforge.core.untrusted import load_json

if TYPE_CHECKING:
    from rtlforge.core.executor import Executor
    from rtlforge.core.plugins import PluginHost
    from rtlforge.sandbox.runner import SandboxRunner

__all__ = ["AgentEnv", "ArtifactVerdict", "EndReason", "EnvConfig", "EpisodeResult",
           "Submission", "ToolCallRecord"]

EndReason = Literal["submitted", "turn_limit", "tool_call_limit", "token_limit",
                    "agent_stopped", "agent_error", "abandoned"]
_NOT_RUN = ("budget", "episode_over")
_LIMITS = ("turn_limit", "tool_call_limit", "token_limit", "agent_stopped", "abandoned")
#: Feedback items and violations shown per tool result.
_MAX_ITEMS = 12
#: Message prefixes of check_rtl's golden-side failures; in a self-check that golden is the
#: agent's own model, so they are the agent's fault (see _self_check).
_MODEL_SIDE = ("the golden model",)


class EnvConfig(BaseModel):
    """Budgets and services of an episode. ``hidden_stimulus`` is B*'s check (the issue's
    baseline by default); ``estimator`` the ``ppa_estimator`` plugin ``synthesise`` uses.

    ``max_turns`` is the BEHAVE paper's 60 (Appendix D.2; ours was 20); ``max_tool_calls``
    None caps calls only by ``max_turns`` x ``max_calls_per_turn``. ``max_context_chars`` is
    the context the model is shown, in characters of message text and tool-call arguments
    (None: the whole transcript); past it the oldest turns are dropped (:meth:`AgentEnv.context`).
    96,000 characters is about 24,000 tokens at 4 characters a token: room for the tools and a
    reply in a 32k-token model."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_turns: int = Field(60, ge=1, le=10_000)
    max_tool_calls: int | None = Field(None, ge=1, le=100_000)
    max_calls_per_turn: int = Field(8, ge=1, le=100)
    max_tokens: int | None = Field(None, ge=1)
    max_context_chars: int | None = Field(96_000, ge=1024)
    max_result_chars: int = Field(8000, ge=512, le=1_000_000)
    max_argument_chars: int = Field(256 * 1024, ge=1024, le=16 * 1024 * 1024)
    on_limit: Literal["judge", "no_submission"] = "judge"
    tool_timeout_s: float = Field(60.0, gt=0, le=3600)
    estimator: str = "yosys-abc"
    hidden_stimulus: StimulusConfig = StimulusConfig()
    hidden_timeout_s: float = Field(120.0, gt=0, le=3600)
    workspace: WorkspaceLimits = WorkspaceLimits()


class ToolCallRecord(BaseModel):
    """One tool call as executed: for the transcript's reader and for timing per tool."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    turn: int
    call_id: str
    name: str
    ok: bool
    error: ToolErrorKind | None = None
    summary: str = ""
    seconds: float = 0.0


class Submission(BaseModel):
    """The files judged: the design and, optionally, the behaviour model (name -> text)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    design: dict[str, str]
    model_name: str | None = None
    model_source: str | None = None
    explicit: bool = True  # False: taken from the workspace at the limit


class ArtifactVerdict(BaseModel):
    """The hidden check of one artifact. ``status``: ``pass``; ``fail`` (fail, error or
    timeout against B*); ``unresolved`` (infrastructure: never the agent's fault);
    ``missing`` (nothing to check)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    status: Literal["pass", "fail", "unresolved", "missing"]
    result: BehaveResult | None = None

    @classmethod
    def of(cls, result: BehaveResult) -> ArtifactVerdict:
        status = ("pass" if result.verdict == "pass" else
                  "unresolved" if result.verdict == "infra_error" else "fail")
        return cls(status=status, result=result)


class EpisodeResult(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    task_id: str
    end_reason: EndReason
    submitted: bool
    rtl: ArtifactVerdict
    model: ArtifactVerdict
    unresolved: bool  # an infrastructure problem left a verdict open
    turns: int
    tool_calls: tuple[ToolCallRecord, ...]
    transcript: tuple[Message, ...]
    submission: Submission | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    agent_error: str | None = None
    evicted_turns: int = 0  # the most interaction turns left out of one context


def _feedback(items: Sequence[Feedback]) -> list[dict[str, Any]]:
    keep = ("category", "severity", "message", "file", "line", "context", "hint")
    return [{k: v for k, v in f.model_dump(include=set(keep)).items() if v is not None}
            for f in list(items)[:_MAX_ITEMS]]


class AgentEnv:
    """One episode; use as a context manager (it owns a sandbox runner unless given one).

    ``host`` supplies the validators (``compile``, ``run_testbench``) and the PPA estimator;
    without one :meth:`PluginHost.default` builds a fresh host for this episode.
    """

    def __init__(self, task: BehaveTask, *, host: PluginHost | None = None,
                 runner: SandboxRunner | None = None, config: EnvConfig | None = None,
                 executor: Executor | None = None) -> None:
        self.task = task
        self.config = config or EnvConfig()
        self.workspace = Workspace(self.config.workspace)
        self._host = host
        self._runner = runner
        self._own_runner = runner is None
        self._tools_here: EnvTools | None = None
        self._executor = executor
        self._work: Work[Any, Any] | None = None
        if executor is not None:  # a host that cannot travel fails here, not as a tool result
            spec = EnvToolWork(host=self.host.spec(), estimator=self.config.estimator,
                               tool_timeout_s=self.config.tool_timeout_s)
            self._work = Work(fn=lambda job: self._local_tools.run(job), spec=spec,
                              lost=lost_outcome)
        self.messages: list[Message] = []
        self.records: list[ToolCallRecord] = []
        self.evicted_turns = 0
        self.turns = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.end_reason: EndReason | None = None
        self.agent_error: str | None = None
        self.submission: Submission | None = None
        self._started = time.perf_counter()
        self._handlers: dict[str, Callable[[Any], ToolResult]] = {
            "write_file": self._write_file, "edit_file": self._edit_file,
            "read_file": self._read_file, "list_files": self._list_files,
            "compile": self._compile, "run_testbench": self._run_testbench,
            "behave_self_check": self._self_check, "synthesise": self._synthesise,
            "submit": self._submit,
        }
        self._specs = {t.name: t for t in TOOLS}
        self._tools: list[dict[str, Any]] | None = None

    # ------------------------------------------------------------------ lifecycle

    def __enter__(self) -> AgentEnv:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop what the episode started (estimator helpers, its own runner). Idempotent."""
        if self._tools_here is not None:
            self._tools_here.close()
            self._tools_here = None
        if self._own_runner and self._runner is not None:
            self._runner.close()
            self._runner = None

    @property
    def runner(self) -> SandboxRunner:
        if self._runner is None:
            from rtlforge.sandbox.runner import SandboxRunner

            self._runner = SandboxRunner()
        return self._runner

    @property
    def host(self) -> PluginHost:
        if self._host is None:
            from rtlforge.core.plugins import PluginHost

            self._host = PluginHost.default()
        return self._host

    @property
    def _local_tools(self) -> EnvTools:
        if self._tools_here is None:
            self._tools_here = EnvTools(self.host, self.runner, estimator=self.config.estimator,
                                        tool_timeout_s=self.config.tool_timeout_s)
        return self._tools_here

    def _run(self, job: ValidateJob | CheckRtlJob | CheckModelJob | SynthJob) -> Any:
        """A tool job's outcome: run here, or on the executor's worker when one was given
        (the ``ray`` plugin ships the job and rebuilds the tools there from a spec)."""
        if self._executor is None or self._work is None:  # set together, in __init__
            return self._local_tools.run(job)
        return self._executor.run(self._work, [job])[0]

    @property
    def tools(self) -> list[dict[str, Any]]:
        """The OpenAI ``tools`` declarations of this environment (built once per episode:
        schema generation costs ~30 ms)."""
        if self._tools is None:
            self._tools = openai_tools()
        return self._tools

    @property
    def done(self) -> bool:
        return self.end_reason is not None

    @property
    def tool_calls_used(self) -> int:
        """Calls that ran (calls refused for a budget or after the end do not count)."""
        return sum(r.error not in _NOT_RUN for r in self.records)

    def reset(self) -> list[Message]:
        """The opening messages: the rules, then the spec and interface."""
        self.messages = [Message(role="system", content=system_prompt(
                             max_turns=self.config.max_turns,
                             evicts=self.config.max_context_chars is not None)),
                         Message(role="user", content=task_prompt(self.task))]
        return list(self.messages)

    def context(self) -> list[Message]:
        """What the model is shown for its next turn: the task instructions (the system rules
        and the task), then as many of the latest interaction turns (an assistant message and
        its tool results) as fit ``max_context_chars``, the latest always
        (:func:`~.messages.fit_context`). :attr:`messages` keeps the whole transcript."""
        if not self.messages:
            self.reset()
        shown, dropped = fit_context(self.messages, self.config.max_context_chars)
        self.evicted_turns = max(self.evicted_turns, dropped)
        return shown

    def abort(self, reason: str) -> None:
        """The agent's side failed (e.g. its LLM server): end unjudged and unresolved."""
        self.agent_error = reason
        self.end_reason = "agent_error"

    # ------------------------------------------------------------------ one turn

    def step(self, reply: AgentReply) -> list[Message]:
        """Answer one assistant reply: each tool call gets one tool message, in order."""
        if self.done:
            raise RuntimeError("the episode is over")
        if not self.messages:
            self.reset()
        self.turns += 1
        self.prompt_tokens += reply.prompt_tokens
        self.completion_tokens += reply.completion_tokens
        self.messages.append(reply.message())
        if not reply.tool_calls:
            self.end_reason = "agent_stopped"
            return []
        answers: list[Message] = []
        for index, call in enumerate(reply.tool_calls):
            start = time.perf_counter()
            if self.done:
                result = ToolResult.failure("episode_over", "the episode ended with submit; "
                                            "this call was not run")
            elif index >= self.config.max_calls_per_turn:
                result = ToolResult.failure("budget", f"at most {self.config.max_calls_per_turn}"
                                            " tool calls per turn; this one was not run")
            elif (self.config.max_tool_calls is not None
                  and self.tool_calls_used >= self.config.max_tool_calls):
                result = ToolResult.failure("budget", "the tool-call budget is spent")
            else:
                result = self._call(call)
            seconds = time.perf_counter() - start
            self.records.append(ToolCallRecord(
                turn=self.turns, call_id=call.id, name=call.name[:64], ok=result.ok,
                error=result.error, summary=result.summary[:300], seconds=round(seconds, 6)))
            message = Message(role="tool", tool_call_id=call.id, name=call.name[:64],
                              content=result.render(self.config.max_result_chars))
            answers.append(message)
            self.messages.append(message)
            if result.ends_episode and not self.done:
                self.end_reason = "submitted"
        if not self.done:
            self._check_budgets()
        return answers

    def _check_budgets(self) -> None:
        if self.turns >= self.config.max_turns:
            self.end_reason = "turn_limit"
        elif (self.config.max_tool_calls is not None
              and self.tool_calls_used >= self.config.max_tool_calls):
            self.end_reason = "tool_call_limit"
        elif (self.config.max_tokens is not None
              and self.prompt_tokens + self.completion_tokens >= self.config.max_tokens):
            self.end_reason = "token_limit"

    def _call(self, call: ToolCall) -> ToolResult:
        spec = self._specs.get(call.name)
        if spec is None:
            return ToolResult.failure("unknown_tool", f"no tool {call.name[:64]!r}; tools: "
                                      + ", ".join(self._specs))
        if len(call.arguments) > self.config.max_argument_chars:
            return ToolResult.failure("too_large", f"the arguments are {len(call.arguments)} "
                                      f"characters; the limit is {self.config.max_argument_chars}")
        try:
            raw = load_json(call.arguments) if call.arguments.strip() else {}
        except (ValueError, RecursionError) as exc:
            return ToolResult.failure("invalid_json", f"the arguments are not valid JSON: "
                                      f"{str(exc)[:200]}")
        if not isinstance(raw, dict):
            return ToolResult.failure("invalid_arguments", "the arguments must be a JSON object")
        try:
            args = spec.args.model_validate(raw)
        except ValidationError as exc:
            problems = [f"{'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}"
                        for e in exc.errors()[:_MAX_ITEMS]]
            return ToolResult.failure("invalid_arguments", f"invalid arguments for "
                                      f"{call.name}", problems=problems,
                                      parameters=spec.parameters())
        try:
            return self._handlers[call.name](args)
        except WorkspaceError as exc:
            return ToolResult.failure(exc.kind, str(exc))
        except SecurityViolation as exc:
            return ToolResult.failure("security", f"refused by the security gate: {exc}")
        except RtlforgeError as exc:
            if is_infra(exc):
                return ToolResult.failure("infra_error", f"the environment failed (not your "
                                          f"fault): {exc}")
            return ToolResult.failure("design_error", str(exc))
        except Exception as exc:  # noqa: BLE001 - a bug of ours must not end the episode
            return ToolResult.failure("infra_error", f"internal error in {call.name}: "
                                      f"{type(exc).__name__}: {exc}")

    # ------------------------------------------------------------------ file tools

    def _write_file(self, args: WriteFileArgs) -> ToolResult:
        size = self.workspace.write(args.path, args.content)
        return ToolResult(ok=True, summary=f"wrote {args.path} ({size} bytes)")

    def _edit_file(self, args: EditFileArgs) -> ToolResult:
        count = self.workspace.edit(args.path, args.old_text, args.new_text,
                                    replace_all=args.replace_all)
        return ToolResult(ok=True, summary=f"replaced {count} occurrence(s) in {args.path}")

    def _read_file(self, args: ReadFileArgs) -> ToolResult:
        text = self.workspace.read(args.path)
        return ToolResult(ok=True, summary=f"{args.path}: {len(text)} characters",
                          data={"content": text})

    def _list_files(self, args: ListFilesArgs) -> ToolResult:
        sizes = self.workspace.sizes()
        return ToolResult(ok=True, summary=f"{len(sizes)} file(s)", data={"files": sizes})

    # ------------------------------------------------------------------ design tools

    def _design(self, names: list[str] | None, *, exclude: str | None = None
                ) -> tuple[SourceFile, ...]:
        chosen = self.workspace.design_names() if names is None else list(dict.fromkeys(names))
        chosen = [n for n in chosen if n != exclude]
        for name in chosen:
            self.workspace.check_name(name)
            if not name.lower().endswith(HDL_SUFFIXES):
                raise WorkspaceError("bad_name", f"{name} is not a Verilog file")
        if not chosen:
            raise WorkspaceError("not_found", "no design files: write the design into a .v "
                                 "file (testbenches are named tb_*.v, test_*.v or *_tb.v)")
        return self.workspace.sources(chosen)

    def _core_task(self, testbench: tuple[SourceFile, ...] = ()) -> Task:
        return Task(id=self.task.id, spec="", top=self.task.top, testbench=testbench)

    def _report(self, report: ValidationReport, what: str) -> ToolResult:
        verdict = report.verdict.value
        stages = [{"stage": s.name, "verdict": s.verdict.value} for s in report.stages]
        data: dict[str, Any] = {"verdict": verdict, "stages": stages,
                                "feedback": _feedback(report.feedback)}
        if verdict == "infra_error":
            return ToolResult(ok=False, error="infra_error", data=data,
                              summary=f"{what}: the environment failed (not your fault)")
        security = any(s.name == "security" and s.verdict.value != "pass"
                       for s in report.stages)
        return ToolResult(ok=not security, error="security" if security else None, data=data,
                          summary=f"{what}: {verdict}"
                                  + (" (refused by the security gate)" if security else ""))

    def _compile(self, args: CompileArgs) -> ToolResult:
        design = self._design(args.design)
        report = self._run(ValidateJob(toolchain=args.linter, simulate=False,
                                       task=self._core_task(), candidate=Candidate(files=design)))
        return self._report(report, f"compile with {args.linter}")

    def _run_testbench(self, args: RunTestbenchArgs) -> ToolResult:
        tb = self.workspace.sources([self.workspace.check_name(args.testbench)])
        design = self._design(args.design, exclude=args.testbench)
        report = self._run(ValidateJob(toolchain="icarus", simulate=True,
                                       task=self._core_task(tb), candidate=Candidate(files=design)))
        result = self._report(report, f"testbench {args.testbench}")
        sim = next((s for s in report.stages if s.name.endswith("-sim")), None)
        if sim is not None:
            result = result.model_copy(update={"data": {**result.data, "output": sim.log}})
        return result

    def _load_model(self, name: str) -> str:
        """The model's source, once the checker accepts it (its problems are the agent's)."""
        source = self.workspace.read(name)
        try:
            load_task_model(self.task, source, name=name.rsplit(".", 1)[0])
        except TaskModelError as exc:
            raise _ModelProblem(str(exc), exc.line, exc.construct) from exc
        return source

    def _self_check(self, args: SelfCheckArgs) -> ToolResult:
        try:
            source = self._load_model(args.model)
        except _ModelProblem as exc:
            return ToolResult.failure("model_error", f"{args.model} is not a usable behaviour "
                                      f"model: {exc}", line=exc.line, construct=exc.construct)
        design = self._design(args.design)
        stimulus = StimulusConfig(seed=args.seed, sequences=args.sequences,
                                  transactions=args.transactions)
        result = self._run(CheckRtlJob(task=self.task, candidate=Candidate(files=design),
                                       stimulus=stimulus, timeout_s=self.config.tool_timeout_s,
                                       model_name=args.model, model_source=source))
        if result.verdict == "infra_error" and result.message.startswith(_MODEL_SIDE):
            # the "golden" here is the agent's model: its failure is the agent's to fix
            text = result.message.replace("the golden model", "your behaviour model")
            return ToolResult.failure("model_error", text)
        return self._behave_result(result, "self-check against your model")

    def _behave_result(self, result: BehaveResult, what: str) -> ToolResult:
        cov = result.coverage
        data: dict[str, Any] = {
            "verdict": result.verdict, "mismatches": result.mismatches,
            "first_failure": result.first_failure.describe() if result.first_failure else None,
            "violations": [v.model_dump(mode="json") for v in result.violations[:_MAX_ITEMS]],
            "coverage": {"transactions": cov.transactions, "outputs": cov.outputs,
                         "completed": cov.completed, "resets": cov.resets,
                         "model_branches_hit": cov.goals_hit,
                         "model_branches": cov.goals_total,
                         "unhit_branches": list(cov.unhit_goals[:_MAX_ITEMS])},
            "message": result.message if not result.first_failure else "",
        }
        if result.verdict == "infra_error":
            return ToolResult(ok=False, error="infra_error", data=data,
                              summary=f"{what}: the environment failed (not your fault)")
        security = result.message.startswith("security:")
        return ToolResult(ok=not security, error="security" if security else None, data=data,
                          summary=f"{what}: {result.verdict}")

    def _synthesise(self, args: SynthesiseArgs) -> ToolResult:
        design = self._design(args.design)
        outcome: SynthOutcome = self._run(SynthJob(
            candidate=Candidate(files=design), top=self.task.top, clock=self.task.clock,
            period_ns=args.period_ns))
        if outcome.problem == "security":
            return ToolResult.failure("security", f"refused by the security gate: "
                                      f"{outcome.message}")
        if outcome.problem == "design":
            return ToolResult.failure("design_error", f"synthesis failed: {outcome.message}",
                                      log=outcome.log)
        ppa = outcome.ppa
        if ppa is None:  # problem "infra"
            return ToolResult.failure("infra_error", f"the environment failed (not your "
                                      f"fault): {outcome.message}")
        data = {"area_um2": round(ppa.area_um2, 3), "delay_ns": round(ppa.delay_ns, 4),
                "power_mw": round(ppa.power_mw, 6), "cells": ppa.cells,
                "liberty": ppa.liberty, "estimator": self.config.estimator}
        if ppa.delay_ns > 0:
            data["fmax_mhz"] = round(1000.0 / ppa.delay_ns, 1)
        return ToolResult(ok=True, data=data, summary=f"area {ppa.area_um2:.1f} um^2, "
                          f"critical path {ppa.delay_ns:.3f} ns")

    def _submit(self, args: SubmitArgs) -> ToolResult:
        design = self._design(args.design)
        model_name = args.model
        if model_name is None and "model.py" in self.workspace.names():
            model_name = "model.py"
        source = self.workspace.read(model_name) if model_name is not None else None
        self.submission = Submission(design={f.name: f.content for f in design},
                                     model_name=model_name, model_source=source)
        files = [f.name for f in design] + ([model_name] if model_name else [])
        return ToolResult(ok=True, ends_episode=True, data={"files": files},
                          summary="submitted; the episode is over")

    # ------------------------------------------------------------------ the hidden check

    def _implicit_submission(self) -> Submission | None:
        design = {n: self.workspace.read(n) for n in self.workspace.design_names()}
        model = "model.py" if "model.py" in self.workspace.names() else None
        if not design and model is None:
            return None
        return Submission(design=design, model_name=model,
                          model_source=self.workspace.read(model) if model else None,
                          explicit=False)

    def finish(self) -> EpisodeResult:
        """End the episode (if the agent has not) and judge the submission against B*."""
        if self.end_reason is None:
            self.end_reason = "abandoned"
        submission = self.submission
        if (submission is None and self.end_reason in _LIMITS
                and self.config.on_limit == "judge"):
            submission = self._implicit_submission()
        missing = ArtifactVerdict(status="missing")
        if self.end_reason == "agent_error":
            rtl = model = ArtifactVerdict(status="unresolved")
        elif submission is None:
            rtl = model = missing
        else:
            rtl = self._judge_rtl(submission) if submission.design else missing
            model = self._judge_model(submission) if submission.model_name else missing
        return EpisodeResult(
            task_id=self.task.id, end_reason=self.end_reason,
            submitted=self.submission is not None, rtl=rtl, model=model,
            unresolved="unresolved" in (rtl.status, model.status),
            turns=self.turns, tool_calls=tuple(self.records), transcript=tuple(self.messages),
            submission=submission, prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens, agent_error=self.agent_error,
            seconds=round(time.perf_counter() - self._started, 4),
            evicted_turns=self.evicted_turns)

    def _judge_rtl(self, submission: Submission) -> ArtifactVerdict:
        files = tuple(SourceFile(name=n, content=t) for n, t in submission.design.items())
        result = self._run(CheckRtlJob(task=self.task, candidate=Candidate(files=files),
                                       stimulus=self.config.hidden_stimulus,
                                       timeout_s=self.config.hidden_timeout_s))
        return ArtifactVerdict.of(result)

    def _judge_model(self, submission: Submission) -> ArtifactVerdict:
        assert submission.model_name is not None and submission.model_source is not None
        return ArtifactVerdict.of(self._run(CheckModelJob(
            task=self.task, model_name=submission.model_name,
            model_source=submission.model_source, stimulus=self.config.hidden_stimulus)))


class _ModelProblem(Exception):
    def __init__(self, message: str, line: int, construct: str) -> None:
        super().__init__(message)
        self.line = line
        self.construct = construct
