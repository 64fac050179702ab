"""The agent's tools as typed functions: one pydantic argument model per tool, the OpenAI
``tools`` declarations generated from them, and the one result type every call returns.

The argument models are the contract: the JSON schema an LLM sees is derived from them (so the
two never disagree), and the same models validate what comes back. ``extra="forbid"`` makes a
misspelt argument an error the agent reads, not a silently ignored key.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from rtlforge.eda.stages import clip_log

__all__ = ["TOOLS", "AgentTool", "ToolErrorKind", "ToolResult", "openai_tools"]

ToolErrorKind = Literal[
    "invalid_json", "invalid_arguments", "unknown_tool", "budget", "episode_over",
    # the workspace's refusals (workspace.WorkspaceError.kind)
    "bad_name", "not_found", "too_large", "too_many_files", "not_text", "no_match",
    "ambiguous_match",
    # about the agent's artifacts: refused by the security gate, not a valid model, ...
    "security", "design_error", "model_error",
    # the harness failed (a tool missing, the sandbox down): never the agent's fault
    "infra_error",
]


class ToolResult(BaseModel):
    """What one tool call gives the agent: ``ok``, an error kind when not, a one-line
    ``summary`` and JSON details. :meth:`render` is the size-capped text the model sees."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    ok: bool
    error: ToolErrorKind | None = None
    summary: str
    data: dict[str, Any] = Field(default_factory=dict)
    ends_episode: bool = False

    @classmethod
    def failure(cls, kind: ToolErrorKind, summary: str, **data: Any) -> ToolResult:
        return cls(ok=False, error=kind, summary=summary, data=data)

    def render(self, max_chars: int) -> str:
        """JSON text of at most ``max_chars`` characters: long strings inside are clipped
        (head and tail kept) before the whole is; the result stays valid JSON."""
        head: dict[str, Any] = {"ok": self.ok}
        if self.error is not None:
            head["error"] = self.error
        head["summary"] = self.summary
        body = {**head, **self.data}
        text = json.dumps(body, default=str)
        if len(text) <= max_chars:
            return text
        budget = max(64, max_chars // 4)
        while budget >= 64:
            text = json.dumps(_clip_strings(body, budget), default=str)
            if len(text) <= max_chars:
                return text
            budget //= 2
        short = {**head, "summary": self.summary[: max(0, max_chars // 2)],
                 "truncated": "the result was too large to show"}
        return json.dumps(short, default=str)[:max_chars]


def _clip_strings(value: Any, limit: int) -> Any:
    if isinstance(value, str):
        return clip_log(value, limit) if len(value) > limit else value
    if isinstance(value, dict):
        return {k: _clip_strings(v, limit) for k, v in value.items()}
    if isinstance(value, list | tuple):
        items = [_clip_strings(v, limit) for v in value[:50]]
        if len(value) > 50:
            items.append(f"... {len(value) - 50} more")
        return items
    return value


# ------------------------------------------------------------------------------- arguments


class _Args(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


_DESIGN = Field(None, description="Design files to use (default: every .v/.sv/.vh/.svh file "
                                  "that is not a testbench by name).")


class WriteFileArgs(_Args):
    path: str = Field(description="A plain file name such as design.v, tb_design.v, model.py.")
    content: str = Field(description="The whole new content of the file.")


class EditFileArgs(_Args):
    path: str = Field(description="The file to edit.")
    old_text: str = Field(description="Exact text to replace (must occur once unless "
                                      "replace_all).")
    new_text: str = Field(description="The replacement text.")
    replace_all: bool = Field(False, description="Replace every occurrence.")


class ReadFileArgs(_Args):
    path: str = Field(description="The file to read.")


class ListFilesArgs(_Args):
    pass


class CompileArgs(_Args):
    design: list[str] | None = _DESIGN
    linter: Literal["icarus", "verilator"] = Field("icarus", description="Which tool lints.")


class RunTestbenchArgs(_Args):
    testbench: str = Field(description="Your testbench file (its top module is inferred).")
    design: list[str] | None = _DESIGN


class SelfCheckArgs(_Args):
    model: str = Field("model.py", description="Your behaviour model file.")
    design: list[str] | None = _DESIGN
    seed: int = Field(0, ge=0, le=2**31 - 1, description="Seed of the random stimulus.")
    sequences: int = Field(10, ge=0, le=50, description="Random sequences after the "
                                                        "edge-case sweep.")
    transactions: int = Field(50, ge=1, le=100, description="Transactions per sequence.")


class SynthesiseArgs(_Args):
    design: list[str] | None = _DESIGN
    period_ns: float | None = Field(None, gt=0.01, le=10_000,
                                    description="Target clock period in ns (default: the "
                                                "estimator's).")


class SubmitArgs(_Args):
    design: list[str] | None = _DESIGN
    model: str | None = Field(None, description="Your behaviour model file (default: model.py "
                                                "if it exists; none: no model).")


class AgentTool(BaseModel):
    """A tool: its name, what the model is told it does, and its argument model."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    name: str
    description: str
    args: type[_Args]

    def parameters(self) -> dict[str, Any]:
        """The argument model's JSON schema, without pydantic's titles."""
        return _strip_titles(self.args.model_json_schema())

    def openai(self) -> dict[str, Any]:
        return {"type": "function", "function": {
            "name": self.name, "description": self.description,
            "parameters": self.parameters()}}


def _strip_titles(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {k: _strip_titles(v) for k, v in schema.items() if k != "title"}
    if isinstance(schema, list):
        return [_strip_titles(v) for v in schema]
    return schema


TOOLS: tuple[AgentTool, ...] = (
    AgentTool(name="write_file", args=WriteFileArgs,
             description="Create or overwrite a file in your workspace."),
    AgentTool(name="edit_file", args=EditFileArgs,
             description="Replace exact text in a file of your workspace."),
    AgentTool(name="read_file", args=ReadFileArgs, description="Read a file of your workspace."),
    AgentTool(name="list_files", args=ListFilesArgs,
             description="List your files with their sizes."),
    AgentTool(name="compile", args=CompileArgs,
             description="Lint/compile your design; returns errors and warnings with lines."),
    AgentTool(name="run_testbench", args=RunTestbenchArgs,
             description="Simulate your design with your own testbench file; returns the "
                         "verdict read from its output and the output."),
    AgentTool(name="behave_self_check", args=SelfCheckArgs,
             description="Simulate your RTL against your own behaviour model under the task's "
                         "protocols, latency bounds and matching; returns the verdict, the "
                         "first mismatch with a trace, and coverage of your model's branches."),
    AgentTool(name="synthesise", args=SynthesiseArgs,
             description="Synthesise your design; returns area (um^2), critical path delay "
                         "(ns), power (mW) and cell count."),
    AgentTool(name="submit", args=SubmitArgs,
             description="Submit your design (and behaviour model) and end the episode."),
)


def openai_tools(tools: tuple[AgentTool, ...] = TOOLS) -> list[dict[str, Any]]:
    """The ``tools`` list of an OpenAI chat-completions request."""
    return [t.openai() for t in tools]
