"""A development environment for a tool-using agent on BEHAVE tasks (issue 13, section 4).

An episode shows the agent a task's spec and interface, gives it typed tools (files, compile,
its own testbench, BEHAVE-Sim of its RTL against its own behaviour model, synthesis), ends on
``submit`` or a budget, and then checks the RTL and the model against the hidden golden B*.
:mod:`.environment` (the episode), :mod:`.tools` (argument models, schemas, results),
:mod:`.workspace` (the agent's files), :mod:`.agents` (scripted agent, ``run_episode``),
:mod:`.client` (an OpenAI-compatible tool-calling agent). docs/behave-env.md has the details.
"""

from rtlforge.behave.env.agents import ScriptedAgent, ScriptedCall, ToolAgent, run_episode
from rtlforge.behave.env.client import OpenAIToolAgent
from rtlforge.behave.env.environment import (
    AgentEnv,
    ArtifactVerdict,
    EnvConfig,
    EpisodeResult,
    Submission,
    ToolCallRecord,
)
from rtlforge.behave.env.messages import AgentReply, Message, ToolCall
from rtlforge.behave.env.tools import TOOLS, AgentTool, ToolResult, openai_tools
from rtlforge.behave.env.workspace import Workspace, WorkspaceError, WorkspaceLimits

__all__ = ["TOOLS", "AgentEnv", "AgentReply", "AgentTool", "ArtifactVerdict", "EnvConfig",
           "EpisodeResult", "Message", "OpenAIToolAgent", "ScriptedAgent", "ScriptedCall",
           "Submission", "ToolAgent", "ToolCall", "ToolCallRecord", "ToolResult", "Workspace",
           "WorkspaceError", "WorkspaceLimits", "openai_tools", "run_episode"]
