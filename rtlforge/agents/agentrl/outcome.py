"""From model text to tool calls, and from a judged episode to a reward.

Tool calls are read in the Hermes / Qwen2.5 format (``<tool_call>{"name": ..., "arguments":
{...}}</tool_call>``) with bounded JSON parsing and no regular expression: the text is the
policy's, untrusted. A call that does not parse still reaches the environment (as an unknown
tool or with its raw arguments), which answers it with a typed error: the policy learns from
its malformed calls instead of having them vanish.

The reward is BEHAVE-Sim's verdict on the submitted artifact against B*: 1 pass, 0 otherwise.
The paper counts an unresolved evaluation as zero; here "unresolved" is the hidden check's
wall-clock ``timeout`` (the evaluation could not conclude on this artifact), scored 0 and
counted in the metrics. An infrastructure failure is something else (the sandbox, a tool, the
generation server failed): such a rollout gets no reward at all and is dropped from the update,
never scored 0 (the project's rule, core/errors.py).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict

from rtlforge.behave.env.messages import AgentReply, ToolCall
from rtlforge.core.untrusted import load_json

if TYPE_CHECKING:
    from rtlforge.behave.env.environment import EpisodeResult

__all__ = ["Score", "episode_feedback", "parse_tool_calls", "score_episode"]

_OPEN, _CLOSE = "<tool_call>", "</tool_call>"
_MAX_CALLS = 16


class Score(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    reward: float | None
    unresolved: bool = False
    drop_reason: str | None = None


def score_episode(result: EpisodeResult, artifact: Literal["rtl", "model"]) -> Score:
    """The rollout's reward for ``artifact`` (see the module for the rules)."""
    if result.end_reason == "agent_error":
        return Score(reward=None, drop_reason=f"agent_error: {result.agent_error or ''}"[:300])
    infra = [r.name for r in result.tool_calls if r.error == "infra_error"]
    if infra:
        return Score(reward=None, drop_reason=f"tool infra_error: {', '.join(infra)}"[:300])
    verdict = result.rtl if artifact == "rtl" else result.model
    if verdict.status == "unresolved":
        return Score(reward=None, drop_reason=f"hidden check of the {artifact}: infra_error")
    if verdict.status == "pass":
        return Score(reward=1.0)
    timed_out = verdict.result is not None and verdict.result.verdict == "timeout"
    return Score(reward=0.0, unresolved=timed_out)


def episode_feedback(result: EpisodeResult, artifact: Literal["rtl", "model"], *,
                     end_reason: str | None = None) -> str:
    """One line on how the episode ended (``end_reason`` overrides the environment's, e.g.
    when the trainer ended it on a full context) and why its artifact did not pass."""
    verdict = result.rtl if artifact == "rtl" else result.model
    why = ""
    if verdict.result is not None and verdict.status != "pass":
        failure = verdict.result.first_failure
        why = failure.describe() if failure is not None else verdict.result.message
    line = f"{end_reason or result.end_reason}; {artifact}: {verdict.status}"
    line += f": {why}" if why else ""
    return " ".join(line.split())[:400]


def parse_tool_calls(text: str, *, turn: int) -> AgentReply:
    """The assistant reply in ``text``: its prose and its ``<tool_call>`` blocks, in order."""
    calls: list[ToolCall] = []
    prose: list[str] = []
    pos = 0
    while len(calls) < _MAX_CALLS:
        start = text.find(_OPEN, pos)
        if start < 0:
            break
        prose.append(text[pos:start])
        end = text.find(_CLOSE, start)
        body = text[start + len(_OPEN): end if end >= 0 else len(text)]
        calls.append(_call(body.strip(), f"call_{turn}_{len(calls)}"))
        pos = len(text) if end < 0 else end + len(_CLOSE)
    prose.append(text[pos:])
    content = "".join(prose).strip() or None
    return AgentReply(content=content, tool_calls=tuple(calls),
                      finish_reason="tool_calls" if calls else "stop")


def _call(body: str, call_id: str) -> ToolCall:
    try:
        obj = load_json(body)
    except (ValueError, RecursionError):
        return ToolCall(id=call_id, name="(unparsed tool call)", arguments=body)
    if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
        return ToolCall(id=call_id, name="(unnamed tool call)", arguments=body)
    args = obj.get("arguments", obj.get("parameters", {}))
    text = args if isinstance(args, str) else json.dumps(args)
    return ToolCall(id=call_id, name=obj["name"], arguments=text)
