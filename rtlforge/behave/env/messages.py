"""The conversation between an agent and the environment, in the OpenAI chat shape.

Typed so a transcript is data (stored in the episode result, replayed, diffed) and converts
losslessly to the ``messages`` list an OpenAI-compatible server takes. Tool-call arguments stay
the raw text the model produced: whether it is valid JSON is the environment's question, and
an invalid one must reach the transcript as the model wrote it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

__all__ = ["AgentReply", "Message", "ToolCall", "fit_context", "message_chars"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ToolCall(_Frozen):
    """One function call the agent asked for; ``arguments`` is the JSON text as sent."""

    id: str
    name: str
    arguments: str

    def to_openai(self) -> dict[str, Any]:
        return {"id": self.id, "type": "function",
                "function": {"name": self.name, "arguments": self.arguments}}


class Message(_Frozen):
    role: Literal["system", "user", "assistant", "tool"]
    content: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None  # tool messages: the call they answer
    name: str | None = None  # tool messages: the tool's name

    def to_openai(self) -> dict[str, Any]:
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            out["tool_calls"] = [c.to_openai() for c in self.tool_calls]
        if self.role == "tool":
            out["tool_call_id"] = self.tool_call_id
            if self.name is not None:
                out["name"] = self.name
        return out


class AgentReply(_Frozen):
    """One assistant turn: optional text, the tool calls, and the tokens it cost (0 if the
    agent cannot tell, e.g. a scripted one)."""

    content: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    prompt_tokens: int = 0
    completion_tokens: int = 0
    finish_reason: str | None = None

    def message(self) -> Message:
        return Message(role="assistant", content=self.content, tool_calls=self.tool_calls)


def message_chars(message: Message) -> int:
    """What a message adds to the model's context, in characters: its text and its tool calls'
    names and arguments (the OpenAI envelope around them is not counted)."""
    return len(message.content or "") + sum(len(c.name) + len(c.arguments)
                                            for c in message.tool_calls)


def fit_context(messages: Sequence[Message], max_chars: int | None, *, keep_first: int = 2
                ) -> tuple[list[Message], int]:
    """The messages a model is shown when the context holds at most ``max_chars`` characters,
    and how many interaction turns were left out.

    The first ``keep_first`` messages (the task instructions: the system rules and the task)
    always stay. The rest is cut into turns, each an assistant message with the tool messages
    that answer it, and whole turns are dropped oldest first until the rest fits; the latest
    turn (the latest tool feedback) always stays, even alone over the limit. A turn is never
    split, so every tool message still follows the assistant message that called it (as the
    chat API requires). ``max_chars`` None: nothing is dropped."""
    head, rest = list(messages[:keep_first]), list(messages[keep_first:])
    turns: list[list[Message]] = []
    for message in rest:
        if message.role == "assistant" or not turns:
            turns.append([message])
        else:
            turns[-1].append(message)
    if max_chars is None or len(turns) <= 1:
        return [*head, *rest], 0
    room = max_chars - sum(message_chars(m) for m in head)
    sizes = [sum(message_chars(m) for m in turn) for turn in turns]
    kept = len(turns) - 1  # index of the first kept turn: the latest stays whatever its size
    used = sizes[-1]
    while kept > 0 and used + sizes[kept - 1] <= room:
        kept -= 1
        used += sizes[kept]
    return [*head, *(m for turn in turns[kept:] for m in turn)], kept
