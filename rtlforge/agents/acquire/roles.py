"""The four acquisition roles (BEHAVE §3.4) as ``agent_role`` plugins over any generator.

Each is an :class:`~rtlforge.agents.base.AgentRole` (settings: generator, sampling) that also
meets :class:`rtlforge.behave.acquire.roles.AcquisitionRole`: it renders its stage's typed
context into a prompt. What the answers must look like, and how they are checked, belongs to
``rtlforge.behave.acquire`` (the trust boundary stays there, whatever role plugin is used).

A role accepts only its own context type: the Implementer's ``acquisition_request`` takes an
:class:`~rtlforge.behave.acquire.roles.ImplementerContext` (spec + interface) and raises
TypeError for anything else, so it cannot be handed the sources or B1 by mistake.
"""

from __future__ import annotations

import json
from typing import ClassVar

from pydantic import BaseModel

from rtlforge.agents.base import AgentRole, RoleSettings
from rtlforge.behave.acquire.roles import (
    ANSWER_FORMATS,
    AnalystContext,
    BuilderContext,
    ImplementerContext,
    ReviewerContext,
    SourceText,
    Stage,
)
from rtlforge.core.interfaces import GenerationRequest, SamplingParams

__all__ = ["ACQUISITION_ROLES", "AnalystRole", "BuilderRole", "ImplementerRole",
           "ReviewerRole"]

#: What the Builder and the Implementer need to know about the behaviour DSL.
DSL_PRIMER = """\
Behaviour models use the BEHAVE DSL, a typed subset of Python (checked, never executed):
- first line `from rtlforge.behave.model.dsl import *`; UPPER_CASE integer constants allowed;
- types UInt[W], SInt[W], Bool, Array[T, N], `class X(Enum)`, `class Out(Record)` with typed
  fields; exactly one `class M(Model)` with typed state fields declared at class level;
- `reset(self)` assigns every state field; `process(self, <one typed parameter per input
  endpoint>) -> Out` returns `Out(field=..., ...)` with one field per output endpoint;
- store with explicit widths: wrap(x, W), saturate(x, W), swrap/ssaturate for signed;
  bit(x, i), bits(x, H, L), min, max, abs; `for i in range(CONST)` only; no while, no
  imports, no calls to anything else, no floats, no strings except docstrings.
Example:
```python
from rtlforge.behave.model.dsl import *

class SumOut(Record):
    total: UInt[9]

class Adder(Model):
    def reset(self):
        pass

    def process(self, a: UInt[8], b: UInt[8]) -> SumOut:
        return SumOut(total=a + b)
```"""


def _sources_text(sources: tuple[SourceText, ...]) -> str:
    parts = []
    for source in sources:
        hints = "\n".join(f"  - {h}" for h in source.interface_hints)
        parts.append(f"### Source `{source.id}` ({source.language}): {source.title}\n"
                     f"{source.description}\nInterface hints:\n{hints}\n"
                     f"```{source.language}\n{source.code.rstrip()}\n```")
    return "\n\n".join(parts)


class _AcquisitionRole(AgentRole):
    """Shared by the four: sampling from the settings, one context type per role."""

    name: ClassVar[str] = "abstract-acquisition"
    acquisition_stage: ClassVar[Stage]
    context_type: ClassVar[type[BaseModel]]
    system_text: ClassVar[str]

    def acquisition_sampling(self) -> SamplingParams:
        return SamplingParams(n=1, temperature=self.settings.temperature,
                              top_p=self.settings.top_p, max_tokens=self.settings.max_tokens)

    def acquisition_request(self, context: BaseModel) -> GenerationRequest:
        if type(context) is not self.context_type:
            raise TypeError(f"role {self.name} takes a {self.context_type.__name__}, "
                            f"not a {type(context).__name__}")
        return GenerationRequest(
            prompt=self.render(context), system=self.system_text,
            metadata={"agent": self.name, "stage": self.acquisition_stage})

    def render(self, context: BaseModel) -> str:
        raise NotImplementedError


class AnalystRole(_AcquisitionRole):
    """Reads completed rollouts, names capability gaps, picks sources, leaves a note."""

    name: ClassVar[str] = "acquire-analyst"
    description: ClassVar[str] = "task acquisition: capability gaps from rollouts, source picks"
    acquisition_stage: ClassVar[Stage] = "analyst"
    context_type: ClassVar[type[BaseModel]] = AnalystContext
    defaults: ClassVar[RoleSettings] = RoleSettings(temperature=0.3, max_tokens=2048)
    system_text: ClassVar[str] = (
        "You plan training data for a model that writes hardware designs. From how it did on "
        "its training tasks, find what it cannot do yet and choose reference implementations "
        "to turn into new tasks that exercise exactly that.")

    def render(self, context: BaseModel) -> str:
        assert isinstance(context, AnalystContext)
        tasks = "\n".join(
            f"- {t.task_id}: {t.rollouts} rollouts, mean reward "
            f"{'n/a' if t.mean_reward is None else f'{t.mean_reward:.2f}'}"
            + "".join(f"\n    feedback: {text}" for text in t.feedback)
            for t in context.tasks) or "(no rollouts)"
        library = "\n".join(
            f"- {s.id} ({s.language}; {', '.join(s.tags) or 'untagged'}): {s.title}. "
            f"{s.description}" + (f" [already used by {', '.join(s.used_by)}]"
                                  if s.used_by else "")
            for s in context.library)
        experience = "\n".join(f"- {note}" for note in context.experience) or "(none yet)"
        return (f"Acquisition round {context.round}.\n\nTraining results, weakest first:\n"
                f"{tasks}\n\nSource library:\n{library}\n\nNotes from earlier rounds:\n"
                f"{experience}\n\nName the capability gaps, then pick at most "
                f"{context.max_picks} sources (by id) with an objective each. "
                f"{ANSWER_FORMATS['analyst']}")


class BuilderRole(_AcquisitionRole):
    """Writes the task declaration, the spec S and the behaviour model B1."""

    name: ClassVar[str] = "acquire-builder"
    description: ClassVar[str] = "task acquisition: spec S and behaviour model B1 from sources"
    acquisition_stage: ClassVar[Stage] = "builder"
    context_type: ClassVar[type[BaseModel]] = BuilderContext
    defaults: ClassVar[RoleSettings] = RoleSettings(temperature=0.4, max_tokens=4096)
    system_text: ClassVar[str] = (
        "You turn reference implementations into hardware design tasks: a precise spec a "
        "designer can implement without seeing the reference, and a behaviour model that is "
        "the task's golden answer.")

    def render(self, context: BaseModel) -> str:
        assert isinstance(context, BuilderContext)
        text = (f"Objective: {context.objective}\nCapability gap: {context.gap or '-'}\n\n"
                f"{_sources_text(context.sources)}\n\n{DSL_PRIMER}\n\n"
                "The spec must define every output for every input (and after reset), in "
                "words and tables; never quote the reference code or your model.\n")
        if context.repair:
            text += (f"\nRound {context.attempt} of {context.max_attempts}. Your previous "
                     f"answer needs a repair:\n{context.repair}\n")
        if context.previous_spec:
            text += (f"\nYour previous task declaration:\n```toml\n{context.previous_task}\n"
                     f"```\nYour previous spec:\n```markdown\n{context.previous_spec}\n```\n"
                     f"Your previous model:\n```python\n{context.previous_model}\n```\n")
        return text + "\n" + ANSWER_FORMATS["builder"]


class ImplementerRole(_AcquisitionRole):
    """Writes B2 from S and the interface only (a separate context, see the module)."""

    name: ClassVar[str] = "acquire-implementer"
    description: ClassVar[str] = "task acquisition: independent model B2 from the spec only"
    acquisition_stage: ClassVar[Stage] = "implementer"
    context_type: ClassVar[type[BaseModel]] = ImplementerContext
    defaults: ClassVar[RoleSettings] = RoleSettings(temperature=0.2, max_tokens=4096)
    system_text: ClassVar[str] = (
        "You write behaviour models of hardware from their specification alone.")

    def render(self, context: BaseModel) -> str:
        assert isinstance(context, ImplementerContext)
        return (f"Specification:\n{context.spec}\n\nInterface:\n{context.interface}\n\n"
                f"{DSL_PRIMER}\n\n{ANSWER_FORMATS['implementer']}")


class ReviewerRole(_AcquisitionRole):
    """Checks S against the sources and decides from the B2-vs-B1 comparison."""

    name: ClassVar[str] = "acquire-reviewer"
    description: ClassVar[str] = "task acquisition: review S against sources, B1 vs B2"
    acquisition_stage: ClassVar[Stage] = "reviewer"
    context_type: ClassVar[type[BaseModel]] = ReviewerContext
    defaults: ClassVar[RoleSettings] = RoleSettings(temperature=0.1, max_tokens=2048)
    system_text: ClassVar[str] = (
        "You review new hardware design tasks before they are used for training: the spec "
        "must describe what the reference implementations compute, completely and without "
        "ambiguity, and two independent behaviour models must agree.")

    def render(self, context: BaseModel) -> str:
        assert isinstance(context, ReviewerContext)
        check = json.dumps(context.check_passed)
        return (f"Objective: {context.objective}\n\n{_sources_text(context.sources)}\n\n"
                f"Spec S:\n```markdown\n{context.spec}\n```\nInterface:\n{context.interface}\n\n"
                f"B1 (the builder's model, to become the golden):\n```python\n"
                f"{context.builder_model}\n```\nB2 (written from S alone):\n```python\n"
                f"{context.implementer_model}\n```\nBEHAVE-Sim, B2 against B1 (agreed: "
                f"{check}):\n{context.check}\n\nRound {context.attempt} of "
                f"{context.max_attempts}. Accept only a spec that matches the sources and models "
                f"that agree; ask for a repair when it can be fixed; reject when the sources "
                f"cannot make a good task. {ANSWER_FORMATS['reviewer']}")


ACQUISITION_ROLES: tuple[type[AgentRole], ...] = (AnalystRole, BuilderRole, ImplementerRole,
                                                  ReviewerRole)
