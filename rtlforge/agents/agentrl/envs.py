"""The environments a rollout runs in, behind one small protocol.

An environment is what :class:`~rtlforge.behave.env.environment.AgentEnv` already is: ``reset``
(the opening messages), ``step`` (one assistant reply; one tool message per call), ``done`` and
``finish`` (the judged :class:`EpisodeResult`). A factory makes one per rollout and knows how
its policy's text becomes tool calls:

- :class:`BehaveEnvFactory`: the BEHAVE agent environment on pool tasks; tools run through the
  sandbox and the plugin host's validators and estimator exactly as in ``rtlforge behave
  agent``, calls in the Hermes / Qwen2.5 ``<tool_call>`` format, reward on the hidden check.
- :class:`ToyEnvFactory`: a deterministic stand-in where one better action sequence exists
  (compare, then submit), one character per action, so a tiny random model can learn it on a
  CPU in seconds. It reuses the real result types, so scoring and metrics are the same code.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from rtlforge.agents.agentrl.outcome import parse_tool_calls
from rtlforge.behave.env.environment import (
    ArtifactVerdict,
    EnvConfig,
    EpisodeResult,
    ToolCallRecord,
)
from rtlforge.behave.env.messages import AgentReply, Message, ToolCall
from rtlforge.behave.env.tools import ToolResult

if TYPE_CHECKING:
    from rtlforge.core.executor import Executor
    from rtlforge.core.plugins import PluginHost

__all__ = ["BehaveEnvConfig", "BehaveEnvFactory", "EnvFactory", "EpisodeEnv", "ToyEnv",
           "ToyEnvConfig", "ToyEnvFactory"]


class EpisodeEnv(Protocol):
    @property
    def done(self) -> bool: ...
    def reset(self) -> list[Message]: ...
    def step(self, reply: AgentReply) -> list[Message]: ...
    def finish(self) -> EpisodeResult: ...
    def close(self) -> None: ...


class EnvFactory(Protocol):
    def task_ids(self) -> list[str]:
        """The seed tasks (ids the pool schedule draws)."""
        ...

    def make(self, task_id: str, index: int) -> EpisodeEnv:
        """A fresh environment for rollout ``index`` of a group on ``task_id``."""
        ...

    def instructions(self, messages: Sequence[Message]) -> list[Message]:
        """The opening messages as the policy sees them (e.g. with the tool declarations)."""
        ...

    def parse(self, text: str, turn: int) -> AgentReply:
        """The policy's text as an assistant reply with tool calls."""
        ...

    def close(self) -> None: ...


# --------------------------------------------------------------------------------- BEHAVE

class BehaveEnvConfig(BaseModel):
    """The BEHAVE agent environment's budgets for training (the paper's 60 turns)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["behave"] = "behave"
    max_turns: int = Field(60, ge=1, le=1000)
    max_tool_calls: int = Field(120, ge=1)
    max_calls_per_turn: int = Field(8, ge=1)
    max_result_chars: int = Field(4000, ge=512)
    tool_timeout_s: float = Field(60.0, gt=0)
    estimator: str = "yosys-abc"
    hidden_seed: int = 0
    hidden_sequences: int = Field(50, ge=1)
    hidden_transactions: int = Field(100, ge=1)
    tool_format: Literal["qwen", "chatml"] = "qwen"


_TOOLS_HEADER = (
    "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n")
_TOOLS_FOOTER = (
    "\n</tools>\n\nFor each function call, return a json object with function name and "
    "arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": "
    "<function-name>, \"arguments\": <args-json-object>}\n</tool_call>")


class BehaveEnvFactory:
    """Pool tasks in :class:`~rtlforge.behave.env.environment.AgentEnv`s sharing one host and
    one sandbox runner (docs/behave-env.md: one environment per rollout). With ``executor``
    (a remote one: ``ray``) the environments' tool jobs run on its workers instead."""

    def __init__(self, config: BehaveEnvConfig, *, tasks: Sequence[str], pool: Path,
                 host: PluginHost, executor: Executor | None = None) -> None:
        from rtlforge.behave.sim.stimulus import StimulusConfig

        self.config = config
        self.pool = pool
        self.host = host
        self.executor = executor
        self._seeds = list(tasks)
        self._runner: Any = None
        self._tasks: dict[str, Any] = {}
        self._env_config = EnvConfig(
            max_turns=config.max_turns, max_tool_calls=config.max_tool_calls,
            max_calls_per_turn=config.max_calls_per_turn,
            max_result_chars=config.max_result_chars, tool_timeout_s=config.tool_timeout_s,
            estimator=config.estimator,
            hidden_stimulus=StimulusConfig(seed=config.hidden_seed,
                                           sequences=config.hidden_sequences,
                                           transactions=config.hidden_transactions))
        self._tools: str | None = None

    def task_ids(self) -> list[str]:
        """Copies the seed task directories into ``POOL/tasks`` (once) and names them."""
        from rtlforge.behave.sim.task import load_behave_task

        ids = []
        for raw in self._seeds:
            task = load_behave_task(Path(raw))
            target = self.pool / "tasks" / task.id
            if not target.exists():
                shutil.copytree(raw, target)
            ids.append(task.id)
        return ids

    def _task(self, task_id: str) -> Any:
        from rtlforge.behave.sim.task import load_behave_task

        if task_id not in self._tasks:
            self._tasks[task_id] = load_behave_task(self.pool / "tasks" / task_id)
        return self._tasks[task_id]

    def make(self, task_id: str, index: int) -> EpisodeEnv:
        from rtlforge.behave.env.environment import AgentEnv
        from rtlforge.sandbox.runner import SandboxRunner

        if self._runner is None:
            self._runner = SandboxRunner()
        return AgentEnv(self._task(task_id), host=self.host, runner=self._runner,
                        config=self._env_config, executor=self.executor)

    def instructions(self, messages: Sequence[Message]) -> list[Message]:
        from rtlforge.behave.env.tools import openai_tools

        if self._tools is None:
            self._tools = "\n".join(json.dumps(t) for t in openai_tools())
        out = list(messages)
        if out and out[0].role == "system":
            out[0] = Message(role="system", content=(out[0].content or "") + _TOOLS_HEADER
                             + self._tools + _TOOLS_FOOTER)
        return out

    def parse(self, text: str, turn: int) -> AgentReply:
        return parse_tool_calls(text, turn=turn)

    def close(self) -> None:
        if self._runner is not None:
            self._runner.close()
            self._runner = None


# ------------------------------------------------------------------------------------ toy

class ToyEnvConfig(BaseModel):
    """``infra_rollouts``: per task, the rollout indices whose ``compare`` fails with an
    infrastructure error (to exercise dropping)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["toy"] = "toy"
    tasks: list[str] = Field(default_factory=lambda: ["toy"], min_length=1)
    max_turns: int = Field(4, ge=1, le=64)
    infra_rollouts: dict[str, list[int]] = Field(default_factory=dict)
    tool_format: Literal["qwen", "chatml"] = "chatml"


#: The toy's action alphabet: the first non-blank character of a reply.
TOY_ACTIONS = {"c": "compare", "s": "submit", "l": "list_files"}
_TOY_SYSTEM = ("You fix a design until it matches the hidden model. Reply with one letter: "
               "c runs the comparison against your model, l lists the files, s submits.")


class ToyEnv:
    """Deterministic: a submission passes exactly when ``compare`` ran (and fixed the design)
    before ``submit``. A turn limit without a submission judges nothing (0)."""

    def __init__(self, task_id: str, *, max_turns: int, infra: bool) -> None:
        self.task_id = task_id
        self.max_turns = max_turns
        self.infra = infra
        self.messages: list[Message] = []
        self.records: list[ToolCallRecord] = []
        self.turns = 0
        self.compared = False
        self.end_reason: Any = None
        self.submitted = False

    @property
    def done(self) -> bool:
        return self.end_reason is not None

    def reset(self) -> list[Message]:
        self.messages = [Message(role="system", content=_TOY_SYSTEM),
                         Message(role="user", content=f"Task {self.task_id}: submit a design "
                                 "that matches the hidden model.")]
        return list(self.messages)

    def step(self, reply: AgentReply) -> list[Message]:
        self.turns += 1
        self.messages.append(reply.message())
        if not reply.tool_calls:
            self.end_reason = "agent_stopped"
            return []
        answers = []
        for call in reply.tool_calls:
            result = self._run(call)
            self.records.append(ToolCallRecord(turn=self.turns, call_id=call.id,
                                               name=call.name, ok=result.ok,
                                               error=result.error, summary=result.summary))
            message = Message(role="tool", tool_call_id=call.id, name=call.name,
                              content=result.render(512))
            answers.append(message)
            self.messages.append(message)
            if self.done:
                break
        if not self.done and self.turns >= self.max_turns:
            self.end_reason = "turn_limit"
        return answers

    def _run(self, call: ToolCall) -> ToolResult:
        if call.name == "compare":
            if self.infra:
                return ToolResult.failure("infra_error", "the simulator is missing (not "
                                          "your fault)")
            self.compared = True
            return ToolResult(ok=True, summary="self-check: 2 mismatches; fixed, the design "
                              "now matches your model")
        if call.name == "list_files":
            return ToolResult(ok=True, summary="design.v model.py")
        if call.name == "submit":
            self.submitted = True
            self.end_reason = "submitted"
            return ToolResult(ok=True, ends_episode=True, summary="submitted")
        return ToolResult.failure("unknown_tool", "reply with c, l or s")

    def finish(self) -> EpisodeResult:
        status = ("missing" if not self.submitted else "pass" if self.compared else "fail")
        return EpisodeResult(
            task_id=self.task_id, end_reason=self.end_reason or "abandoned",
            submitted=self.submitted, rtl=ArtifactVerdict(status=status),
            model=ArtifactVerdict(status="missing"), unresolved=False, turns=self.turns,
            tool_calls=tuple(self.records), transcript=tuple(self.messages))

    def close(self) -> None:
        return None


class ToyEnvFactory:
    def __init__(self, config: ToyEnvConfig) -> None:
        self.config = config

    def task_ids(self) -> list[str]:
        return list(self.config.tasks)

    def make(self, task_id: str, index: int) -> EpisodeEnv:
        return ToyEnv(task_id, max_turns=self.config.max_turns,
                      infra=index in self.config.infra_rollouts.get(task_id, ()))

    def instructions(self, messages: Sequence[Message]) -> list[Message]:
        return list(messages)

    def parse(self, text: str, turn: int) -> AgentReply:
        head = text.strip()[:1]
        name = TOY_ACTIONS.get(head)
        if name is None:
            return AgentReply(content=text, finish_reason="stop")
        return AgentReply(content=text, tool_calls=(ToolCall(id=f"call_{turn}_0", name=name,
                                                             arguments="{}"),))

    def close(self) -> None:
        return None
