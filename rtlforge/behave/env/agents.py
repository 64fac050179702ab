"""Agents that drive an :class:`~.environment.AgentEnv`, and the episode loop.

An agent is anything with ``respond(messages, tools) -> AgentReply``: :class:`ScriptedAgent`
(a fixed list of tool calls per turn, for tests and benchmarks) and
:class:`~.client.OpenAIToolAgent` (any OpenAI-compatible chat-completions server that
supports tool calls). An agent raises an :class:`~rtlforge.core.errors.InfraError` (e.g. a
``GenerationError``) when its own infrastructure fails; :func:`run_episode` then ends the
episode unjudged and unresolved.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict

from rtlforge.behave.env.environment import AgentEnv, EnvConfig, EpisodeResult
from rtlforge.behave.env.messages import AgentReply, Message, ToolCall

if TYPE_CHECKING:
    from rtlforge.behave.sim.task import BehaveTask
    from rtlforge.core.executor import Executor
    from rtlforge.core.plugins import PluginHost
    from rtlforge.sandbox.runner import SandboxRunner

__all__ = ["ScriptedAgent", "ScriptedCall", "ToolAgent", "run_episode"]


@runtime_checkable
class ToolAgent(Protocol):
    def respond(self, messages: Sequence[Message], tools: Sequence[dict[str, Any]]
                ) -> AgentReply:
        """The next assistant turn for this conversation and these tools."""
        ...


class ScriptedCall(BaseModel):
    """One scripted tool call. ``arguments`` as a dict is sent as its JSON text; a string is
    sent as it is (so a test can send malformed JSON, as an LLM might)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    arguments: dict[str, Any] | str = {}


class ScriptedAgent:
    """Plays ``turns`` in order, one list of calls per turn; then replies without a tool call
    (which ends an episode). ``seen`` keeps the messages each turn was asked with."""

    def __init__(self, turns: Sequence[Sequence[ScriptedCall]]) -> None:
        self.turns = [list(t) for t in turns]
        self.seen: list[list[Message]] = []

    def respond(self, messages: Sequence[Message], tools: Sequence[dict[str, Any]]
                ) -> AgentReply:
        index = len(self.seen)
        self.seen.append(list(messages))
        if index >= len(self.turns):
            return AgentReply(content="(the script is over)", finish_reason="stop")
        calls = tuple(
            ToolCall(id=f"call_{index}_{k}", name=c.name,
                     arguments=c.arguments if isinstance(c.arguments, str)
                     else json.dumps(c.arguments))
            for k, c in enumerate(self.turns[index]))
        return AgentReply(tool_calls=calls, finish_reason="tool_calls")


def run_episode(task: BehaveTask, agent: ToolAgent, *, host: PluginHost | None = None,
                runner: SandboxRunner | None = None, config: EnvConfig | None = None,
                executor: Executor | None = None) -> EpisodeResult:
    """Run ``agent`` on ``task`` until it submits or a budget ends the episode, then judge.
    ``executor`` (a remote one, e.g. ``ray``) runs the episode's tool jobs on its workers."""
    from rtlforge.core.errors import InfraError

    with AgentEnv(task, host=host, runner=runner, config=config, executor=executor) as env:
        env.reset()
        while not env.done:
            try:
                reply = agent.respond(env.context(), env.tools)
            except InfraError as exc:
                env.abort(f"{type(exc).__name__}: {exc}")
                break
            env.step(reply)
        return env.finish()
