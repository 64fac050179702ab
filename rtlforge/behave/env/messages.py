"""The conversation between an agent and the environment, in the OpenAI chat shape.

Typed so a transcript is data (stored in the episode result, replayed, diffed) and converts
losslessly to the ``messages`` list an OpenAI-compatible server takes. Tool-call arguments stay
the raw text the model produced: whether it is valid JSON is the environment's question, and
an invalid one must reach the transcript as the model wrote it.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

__all__ = ["AgentReply", "Message", "ToolCall"]


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
