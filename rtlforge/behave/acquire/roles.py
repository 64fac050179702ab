"""What acquisition roles see and answer, and how their answers are read.

The four roles are agent plugins (kind ``agent_role``, :mod:`rtlforge.agents.acquire`), but the
layers put ``behave`` below ``agents``, so this package never imports them: it declares the
contract a role must meet (:class:`AcquisitionRole`), creates roles by name through the plugin
host, and hands each a typed context. A role only turns its context into a
:class:`~rtlforge.core.interfaces.GenerationRequest`; reading the answer stays here. That split
is the trust boundary: every answer is untrusted LLM text, and a third-party role must not be
able to weaken how it is checked. A malformed answer becomes an :class:`AnswerRejected` with
the reason, never an exception that ends a round.

Contexts are the separation of concerns made structural. In particular the Implementer's
context (:class:`ImplementerContext`) has exactly two fields, the spec S and the public
interface document: it cannot carry the sources or B1, whichever role plugin renders it.
"""

from __future__ import annotations

import json
import re
from typing import Any, ClassVar, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rtlforge.core.interfaces import GenerationRequest, SamplingParams
from rtlforge.core.untrusted import load_json

__all__ = [
    "ANSWER_FORMATS",
    "DEFAULT_ROLES",
    "MAX_ANSWER_CHARS",
    "AcquisitionRole",
    "AnalystAnswer",
    "AnalystContext",
    "AnswerRejected",
    "BuilderAnswer",
    "BuilderContext",
    "Gap",
    "ImplementerAnswer",
    "ImplementerContext",
    "Pick",
    "ReviewerAnswer",
    "ReviewerContext",
    "SourceCard",
    "SourceText",
    "Stage",
    "TaskFeedback",
    "parse_analyst",
    "parse_builder",
    "parse_implementer",
    "parse_reviewer",
]

Stage = Literal["analyst", "builder", "implementer", "reviewer"]
#: The agent_role plugins a round uses unless told otherwise.
DEFAULT_ROLES: dict[Stage, str] = {"analyst": "acquire-analyst", "builder": "acquire-builder",
                                   "implementer": "acquire-implementer",
                                   "reviewer": "acquire-reviewer"}
#: An answer longer than this is refused unread (a model stuck in a loop).
MAX_ANSWER_CHARS = 200_000
MAX_SPEC_CHARS = 20_000
MAX_TOML_CHARS = 20_000


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


# ------------------------------------------------------------------------------ contexts


class TaskFeedback(_Frozen):
    """One training task's completed rollouts, summarised for the Analyst."""

    task_id: str
    rollouts: int
    scored: int
    mean_reward: float | None
    feedback: tuple[str, ...] = ()  # a few distinct feedback texts, clipped


class SourceCard(_Frozen):
    """A library source as the Analyst sees it: what it is, not its code."""

    id: str
    title: str
    description: str
    language: str
    tags: tuple[str, ...] = ()
    used_by: tuple[str, ...] = ()  # pool tasks already built from it


class AnalystContext(_Frozen):
    round: int
    tasks: tuple[TaskFeedback, ...]
    library: tuple[SourceCard, ...]
    experience: tuple[str, ...]  # notes earlier rounds recorded, oldest first
    max_picks: int


class SourceText(_Frozen):
    """A source with its code, for the Builder and the Reviewer."""

    id: str
    language: str
    title: str
    description: str
    code: str
    interface_hints: tuple[str, ...] = ()


class BuilderContext(_Frozen):
    sources: tuple[SourceText, ...]
    objective: str
    gap: str
    attempt: int  # 1-based construction-and-review round
    max_attempts: int
    repair: str = ""  # what the Reviewer (or a check) asked to change; "" on the first
    previous_task: str = ""
    previous_spec: str = ""
    previous_model: str = ""


class ImplementerContext(_Frozen):
    """The spec and the public interface document: nothing else, by construction."""

    spec: str
    interface: str


class ReviewerContext(_Frozen):
    sources: tuple[SourceText, ...]
    objective: str
    spec: str
    interface: str
    builder_model: str  # B1
    implementer_model: str  # B2
    check: str  # BEHAVE-Sim's B2-vs-B1 result, rendered
    check_passed: bool
    attempt: int
    max_attempts: int


# ------------------------------------------------------------------------------- answers


class Gap(_Frozen):
    name: str = Field(min_length=1, max_length=200)
    evidence: str = Field("", max_length=2000)


class Pick(_Frozen):
    source: str = Field(min_length=1, max_length=64)
    objective: str = Field(min_length=1, max_length=2000)
    gap: str = Field("", max_length=200)
    also: tuple[str, ...] = Field((), max_length=3, description="further sources to combine")


class AnalystAnswer(_Frozen):
    gaps: tuple[Gap, ...] = Field((), max_length=20)
    picks: tuple[Pick, ...] = Field((), max_length=20)
    experience: str = Field("", max_length=4000)


class BuilderAnswer(_Frozen):
    task_toml: str
    spec: str
    model: str


class ImplementerAnswer(_Frozen):
    model: str


class ReviewerAnswer(_Frozen):
    spec_matches_sources: bool
    decision: Literal["accept", "repair", "reject"]
    notes: str = Field("", max_length=4000)


class AnswerRejected(ValueError):
    """An answer that does not have the required form; ``reason`` is a short code."""

    def __init__(self, stage: Stage, reason: str, message: str) -> None:
        super().__init__(f"{stage}: {message}")
        self.stage = stage
        self.reason = reason
        self.message = message


#: What each role's prompt must ask for (roles include it; the parsers below enforce it).
ANSWER_FORMATS: dict[Stage, str] = {
    "analyst": (
        "Answer with one JSON object in a ```json block: {\"gaps\": [{\"name\": ..., "
        "\"evidence\": ...}], \"picks\": [{\"source\": <library id>, \"objective\": <what the "
        "new task must exercise>, \"gap\": <gap name>, \"also\": [<optional extra library "
        "ids>]}], \"experience\": <one note for later rounds>}."),
    "builder": (
        "Answer with three fenced blocks: ```toml (the task's interface declaration in the "
        "BEHAVE task format: top, clock/reset if sequential, [[interfaces]] with protocols and "
        "typed endpoints, matching and latency; do not set id, spec, spec_file, golden or "
        "rtllm), ```markdown (the spec S a hardware designer implements from) and ```python "
        "(the behaviour model B1 in the BEHAVE DSL)."),
    "implementer": (
        "Answer with one ```python block: a behaviour model in the BEHAVE DSL whose process() "
        "takes exactly the input endpoints and returns a record with exactly the output "
        "endpoints."),
    "reviewer": (
        "Answer with one JSON object in a ```json block: {\"spec_matches_sources\": true|false, "
        "\"decision\": \"accept\"|\"repair\"|\"reject\", \"notes\": <what must change, for the "
        "builder>}."),
}


# -------------------------------------------------------------------------------- parsing

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)(?:\n[ \t]*```|\Z)", re.DOTALL)


def _blocks(text: str) -> list[tuple[str, str]]:
    return [(m.group(1).lower(), m.group(2)) for m in _FENCE.finditer(text)]


def _checked_text(stage: Stage, text: object) -> str:
    if not isinstance(text, str) or not text.strip():
        raise AnswerRejected(stage, "empty", "the answer is empty")
    if len(text) > MAX_ANSWER_CHARS:
        raise AnswerRejected(stage, "too_long", f"the answer is longer than "
                             f"{MAX_ANSWER_CHARS} characters")
    return text


def _one_block(stage: Stage, text: str, languages: tuple[str, ...], what: str,
               *, bare_ok: bool = False) -> str:
    found = [body for lang, body in _blocks(text) if lang in languages]
    if len(found) > 1:
        raise AnswerRejected(stage, "ambiguous", f"{len(found)} {what} blocks; give exactly one")
    if found:
        return found[0]
    if bare_ok and "```" not in text:
        return text
    raise AnswerRejected(stage, "missing_block", f"no ```{languages[0]} block with {what}")


def _json_answer(stage: Stage, text: str, model: type[BaseModel]) -> Any:
    body = _one_block(stage, text, ("json",), "JSON", bare_ok=True)
    try:
        raw = load_json(body)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise AnswerRejected(stage, "bad_json", f"not valid JSON: {exc}") from None
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top)"
        raise AnswerRejected(stage, "bad_fields", f"field {where!r}: {first['msg']}") from None


def parse_analyst(text: object) -> AnalystAnswer:
    answer: AnalystAnswer = _json_answer("analyst", _checked_text("analyst", text),
                                         AnalystAnswer)
    return answer


def parse_reviewer(text: object) -> ReviewerAnswer:
    answer: ReviewerAnswer = _json_answer("reviewer", _checked_text("reviewer", text),
                                          ReviewerAnswer)
    return answer


def parse_builder(text: object) -> BuilderAnswer:
    body = _checked_text("builder", text)
    task_toml = _one_block("builder", body, ("toml",), "task declaration")
    spec = _one_block("builder", body, ("markdown", "md", "spec", "text"), "spec")
    model = _one_block("builder", body, ("python", "py"), "behaviour model")
    if len(task_toml) > MAX_TOML_CHARS:
        raise AnswerRejected("builder", "too_long", "the task declaration is longer than "
                             f"{MAX_TOML_CHARS} characters")
    if not spec.strip() or len(spec) > MAX_SPEC_CHARS:
        raise AnswerRejected("builder", "bad_spec", f"the spec must have 1..{MAX_SPEC_CHARS} "
                             "characters")
    return BuilderAnswer(task_toml=task_toml, spec=spec.strip() + "\n", model=model)


def parse_implementer(text: object) -> ImplementerAnswer:
    body = _checked_text("implementer", text)
    return ImplementerAnswer(model=_one_block("implementer", body, ("python", "py"),
                                              "behaviour model", bare_ok=True))


# ------------------------------------------------------------------------------ contract


@runtime_checkable
class AcquisitionRole(Protocol):
    """What a round needs from an ``agent_role`` plugin that plays an acquisition stage.

    ``acquisition_stage`` names the stage; ``acquisition_request`` renders that stage's context
    (and raises TypeError for any other context type); ``acquisition_sampling`` gives the
    sampling settings; ``settings.generator``/``settings.generator_options`` name the role's
    own generator (None: the round's default)."""

    acquisition_stage: ClassVar[str]
    settings: Any

    def acquisition_request(self, context: BaseModel) -> GenerationRequest: ...

    def acquisition_sampling(self) -> SamplingParams: ...
