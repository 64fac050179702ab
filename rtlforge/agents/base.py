"""The two extension points of the orchestration layer: agent roles and routers.

A role is data plus a little code: its settings (:class:`RoleSettings`: sampling, retrieval
depth, focus, which generator) and a prompt template (TOML, ``system`` and ``user`` with the
fields in :data:`ROLE_FIELDS`). The orchestrator builds an :class:`AgentContext` for each call
and the role turns it into a :class:`~rtlforge.core.interfaces.GenerationRequest`. Each call
gets a fresh context (the paper's "independent context"): roles keep no conversation state.

A router looks at a :class:`~rtlforge.agents.models.RouterContext` and returns an
:class:`~rtlforge.agents.models.AgentAction`; it is told the outcome afterwards
(:meth:`Router.observe`), which learned routers may use and the heuristic one ignores.
"""

from __future__ import annotations

import re
import string
import tomllib
from abc import abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, ClassVar

from pydantic import Field

from rtlforge.agents.knowledge.base import Hit
from rtlforge.agents.models import AgentAction, Decision, Focus, IterationRecord, RouterContext
from rtlforge.core.errors import ConfigError
from rtlforge.core.hookspecs import PluginKind
from rtlforge.core.interfaces import GenerationRequest, Plugin, SamplingParams
from rtlforge.core.models import Task
from rtlforge.core.options import PluginOptions
from rtlforge.core.untrusted import load_toml

__all__ = [
    "AGENT_ROLE_KIND",
    "ROLE_FIELDS",
    "ROUTER_KIND",
    "AgentContext",
    "AgentRole",
    "RoleSettings",
    "RoleTemplate",
    "RoleTemplateError",
    "Router",
]

_BLANK_RUN = re.compile(r"\n\s*\n(\s*\n)+")

#: Fields a role template may use; anything else is refused when the template is loaded.
ROLE_FIELDS = frozenset({
    "spec",  # the task's spec, with the guidance registry's enrichment
    "top",  # the module name to write
    "ports",  # the port list, one per line ("input [7:0] a"), or "" when the task has none
    "focus",  # the action's focus, as a sentence
    "feedback",  # the structured feedback of the last attempt, rendered ("" on the first)
    "code",  # the last attempt's design text ("" on the first)
    "knowledge",  # the retrieved entries, rendered ("" when none)
    "submodules",  # headers of already-built sub-modules (decomposition), or ""
    "waveform",  # a textual waveform window around the first mismatch, or ""
    "iteration",  # 1-based
    "max_iterations",
})


class RoleTemplateError(ConfigError, ValueError):
    """A role template that does not parse or uses an unknown field."""


@dataclass(frozen=True)
class RoleTemplate:
    """A role's prompt: a system and a user text with ``{field}`` placeholders."""

    name: str
    user: str
    system: str | None = None

    def __post_init__(self) -> None:
        for part, text in (("user", self.user), ("system", self.system or "")):
            try:
                parsed = [(f, spec, conv) for _, f, spec, conv in string.Formatter().parse(text)
                          if f is not None]
            except ValueError as exc:
                raise RoleTemplateError(f"role template {self.name!r} {part}: {exc}") from exc
            names = {f for f, _, _ in parsed}
            if any(spec or conv for _, spec, conv in parsed):
                # {spec:>999999999} would pad every prompt to a gigabyte; fields are plain text
                raise RoleTemplateError(f"role template {self.name!r} {part}: fields take no "
                                        "format spec or conversion; write {field} only")
            unknown = sorted(names - ROLE_FIELDS)
            if unknown:
                raise RoleTemplateError(
                    f"role template {self.name!r} {part}: unknown field(s) {unknown}; "
                    f"allowed: {sorted(ROLE_FIELDS)}")

    @classmethod
    def from_toml(cls, text: str, *, origin: str = "<string>") -> RoleTemplate:
        try:
            raw = load_toml(text)
        except (tomllib.TOMLDecodeError, RecursionError) as exc:
            raise RoleTemplateError(f"{origin}: not valid TOML: {exc}") from exc
        if set(raw) - {"name", "system", "user", "description"} or not isinstance(
                raw.get("user"), str):
            raise RoleTemplateError(f"{origin}: a role template has 'name', 'user' (required), "
                                    f"'system' and 'description'")
        return cls(name=str(raw.get("name", origin)), user=raw["user"],
                   system=raw.get("system"))

    @classmethod
    def load(cls, name_or_path: str | Path) -> RoleTemplate:
        """A bundled template (``rtlforge/agents/templates/NAME.toml``) or a TOML file path."""
        path = Path(name_or_path)
        if path.suffix == ".toml":
            try:
                return cls.from_toml(path.read_text(encoding="utf-8"), origin=str(path))
            except (OSError, UnicodeDecodeError) as exc:
                raise RoleTemplateError(f"role template {path}: {exc}") from exc
        bundled = resources.files("rtlforge.agents").joinpath("templates", f"{name_or_path}.toml")
        if not bundled.is_file():
            raise RoleTemplateError(f"no bundled role template {str(name_or_path)!r}")
        return cls.from_toml(bundled.read_text(encoding="utf-8"), origin=f"{name_or_path}.toml")

    def uses(self, name: str) -> bool:
        """Whether the system or user text shows the field ``name``."""
        return any(f == name for text in (self.user, self.system or "")
                   for _, f, _, _ in string.Formatter().parse(text))

    def render(self, values: Mapping[str, object]) -> tuple[str | None, str]:
        """``(system, user)`` with every field filled (missing fields render as "")."""
        full = {name: values.get(name, "") for name in ROLE_FIELDS}
        system = self.system.format_map(full).strip() if self.system else None
        # empty fields leave blank runs behind; one blank line separates what remains
        return system, _BLANK_RUN.sub("\n\n", self.user.format_map(full)).strip()


class RoleSettings(PluginOptions):
    """A role's knobs; an agents file (``refine --agents``) overrides them per role."""

    template: str = Field("generic", description="bundled role template name or a .toml path")
    generator: str | None = Field(None, description="generator plugin; None: the run's default")
    generator_options: dict[str, Any] = Field(
        default_factory=dict, description="options of that generator (its options model)")
    temperature: float = Field(0.5, ge=0.0, le=2.0, description="sampling temperature")
    top_p: float = Field(0.95, gt=0.0, le=1.0, description="nucleus sampling threshold")
    max_tokens: int = Field(2048, ge=1, description="most tokens one answer may take")
    retrieval_k: int = Field(5, ge=0, le=50,
                             description="knowledge entries retrieved into the prompt (0: none)")
    focus: Focus = Field(Focus.FULL, description="what the prompt concentrates on: full, "
                         "minimal, error, synthesis or architecture")


@dataclass(frozen=True)
class AgentContext:
    """What one agent call sees: built fresh for every call, never shared between calls."""

    task: Task
    spec: str  # the enriched spec (guidance applied)
    action: AgentAction
    iteration: int  # 0-based
    max_iterations: int
    feedback: str = ""
    code: str = ""
    knowledge: tuple[Hit, ...] = ()
    submodules: str = ""
    waveform: str = ""
    history: tuple[IterationRecord, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)


_FOCUS_TEXT = {
    Focus.FULL: "Write the complete design.",
    Focus.MINIMAL: "Make the smallest change that fixes the problem; keep everything else.",
    Focus.ERROR: "Concentrate on the reported errors and failing checks.",
    Focus.SYNTHESIS: "Keep it correct and make it synthesise to fewer cells and a shorter "
                     "critical path.",
    Focus.ARCHITECTURE: "Reconsider the architecture (state encoding, datapath structure) "
                        "before writing code.",
}


class AgentRole(Plugin):
    """One specialised agent: settings, a template, and how a context becomes a request.

    Subclasses set ``name``, ``defaults`` and usually only a template; specialists that are
    rule-routed (not chosen by the router) override :meth:`matches`.
    """

    name: ClassVar[str] = "abstract"
    description: ClassVar[str] = ""
    defaults: ClassVar[RoleSettings] = RoleSettings()
    #: Whether a router may choose this role (the paper's four); specialists are rule-routed.
    routed: ClassVar[bool] = False
    Options: ClassVar[type[PluginOptions] | None] = RoleSettings

    def __init__(self, **overrides: Any) -> None:
        merged = {**self.defaults.model_dump(), **overrides}
        self.settings = RoleSettings.model_validate(merged)
        self.template = RoleTemplate.load(self.settings.template)

    def matches(self, task: Task, spec: str) -> str | None:
        """Why this specialist should handle ``task`` (a rule's name), or None."""
        return None

    def sampling(self, action: AgentAction, *, n: int = 1, seed: int | None = None
                 ) -> SamplingParams:
        """The role's sampling settings, with the action's overrides."""
        temperature = (action.temperature if action.temperature is not None
                       else self.settings.temperature)
        max_tokens = action.max_tokens or self.settings.max_tokens
        return SamplingParams(n=n, temperature=temperature, top_p=self.settings.top_p,
                              max_tokens=max_tokens, seed=seed)

    def retrieval_k(self, action: AgentAction) -> int:
        return action.retrieval_k if action.retrieval_k is not None else self.settings.retrieval_k

    def fields(self, ctx: AgentContext) -> dict[str, object]:
        """The template's values for ``ctx``; override to add role-specific rendering."""
        ports = "\n".join(
            f"{p.direction} {'signed ' if p.signed else ''}"
            f"{f'[{p.width - 1}:0] ' if p.width > 1 else ''}{p.name}" for p in ctx.task.ports)
        knowledge = "\n\n".join(_render_hit(hit) for hit in ctx.knowledge)
        return {"spec": ctx.spec.strip(), "top": ctx.task.top, "ports": ports,
                "focus": _FOCUS_TEXT[ctx.action.focus], "feedback": ctx.feedback,
                "code": ctx.code, "knowledge": knowledge, "submodules": ctx.submodules,
                "waveform": ctx.waveform, "iteration": ctx.iteration + 1,
                "max_iterations": ctx.max_iterations}

    def build_request(self, ctx: AgentContext, *, request_id: str | None = None
                      ) -> GenerationRequest:
        system, user = self.template.render(self.fields(ctx))
        return GenerationRequest(
            prompt=user, system=system, task=ctx.task, request_id=request_id,
            iteration=ctx.iteration,
            metadata={"agent": self.name, "focus": ctx.action.focus.value,
                      "iteration": ctx.iteration})


def _render_hit(hit: Hit) -> str:
    entry = hit.entry
    text = f"- {entry.title}: {entry.description.strip()}"
    if entry.code_template:
        text += f"\n```verilog\n{entry.code_template.strip()}\n```"
    return text


class Router(Plugin):
    """Chooses the next agent and its settings; registered through ``register_routers``."""

    name: ClassVar[str] = "abstract"

    @abstractmethod
    def decide(self, ctx: RouterContext, agents: Sequence[str]) -> AgentAction:
        """The action for the next iteration; ``action.agent`` must be one of ``agents``."""

    def state(self, ctx: RouterContext) -> tuple[float, ...] | None:
        """The feature vector the decision was based on (recorded with it), if any."""
        return None

    def observe(self, decision: Decision) -> None:
        """Told each decision with its outcome filled in; learned routers may learn online."""
        return None


AGENT_ROLE_KIND = PluginKind("agent_role", AgentRole, "register_agent_roles",
                             "a specialised agent: prompt template and sampling settings")
ROUTER_KIND = PluginKind("router", Router, "register_routers",
                         "chooses the next agent and its settings in a refinement loop")
