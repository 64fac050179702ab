"""``scripted`` generator: replay per-agent responses, optionally conditioned on the prompt.

It exercises refinement loops deterministically without a model: "a syntax error, then a fix",
or "a wrong design, then the right one only once the prompt carries the failing check".

Script format
-------------
A script is a list of **steps**; each step answers one sample and has

- ``task_id``: the task it answers (``"*"``: any task);
- ``agent``: the agent it answers, read from ``request.metadata["agent"]`` (``"*"``: any agent;
  a request without an agent matches only ``"*"``);
- ``text``: the response text (Verilog in a fenced block or bare, as a model would answer);
- ``when_prompt_contains`` (optional): a string or a list of strings that must all occur in the
  request's prompt (system text included) for the step to answer.

Files (option ``path``) come in three spellings of the same list:

- JSON: ``{"<task id>": {"<agent>": [step, ...]}}`` where a step is a text string or an object
  with ``text`` and optionally ``when_prompt_contains``; or a JSON list of full steps;
- JSONL: one full step object per line;
- TOML: ``[[step]]`` tables with the full step's keys.

An in-memory ``script`` option takes the JSON mapping shape.

Answering
---------
Steps are grouped by (task id, agent) in file order. A request is served from the most
specific group that exists: (task, agent), (task, ``*``), (``*``, agent), then (``*``, ``*``).
Each group has a cursor; a sample is the first step at or after the cursor whose condition holds
(steps whose condition fails are skipped), and the cursor moves past it. ``params.n`` samples
are taken in turn. A group with no step left that holds raises :class:`ScriptExhausted` (a
:class:`~rtlforge.generation.base.GenerationError`), never an empty answer; so does a request no
group covers.

Token counts are whitespace-separated words: ``prompt_tokens`` of the system text plus the
prompt (the same for each sample of a request, as servers report it), ``completion_tokens`` of
the step's text. State is per instance; :meth:`ScriptedGenerator.reset` rewinds every cursor.
"""

from __future__ import annotations

import threading
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, field_validator

from rtlforge.core.errors import TaskFormatError
from rtlforge.core.hookspecs import Register, hookimpl
from rtlforge.core.interfaces import Generation, GenerationRequest, SamplingParams
from rtlforge.core.untrusted import load_json, load_toml
from rtlforge.generation.base import GenerationError, ScopedGenerator, make_generation

__all__ = ["ScriptExhausted", "ScriptStep", "ScriptedGenerator", "load_script", "word_count"]

ANY = "*"


class ScriptExhausted(GenerationError):
    """The script has no step left for a request (or none for its task and agent at all)."""


class ScriptStep(BaseModel):
    """One scripted response and the condition under which it answers."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    task_id: str = Field(ANY, min_length=1)
    agent: str = Field(ANY, min_length=1)
    text: str
    when_prompt_contains: tuple[str, ...] = ()

    @field_validator("when_prompt_contains", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return (value,) if isinstance(value, str) else value

    def holds(self, prompt: str) -> bool:
        return all(needle in prompt for needle in self.when_prompt_contains)


def word_count(text: str | None) -> int:
    """The documented token count: whitespace-separated words."""
    return len(text.split()) if text else 0


def _steps_from_mapping(data: Mapping[str, Any], where: str) -> list[ScriptStep]:
    steps: list[ScriptStep] = []
    for task_id, agents in data.items():
        if not isinstance(agents, Mapping):
            raise TaskFormatError(f"{where}: task {task_id!r} must map agents to step lists")
        for agent, items in agents.items():
            if isinstance(items, str | Mapping):
                items = [items]
            for item in items:
                fields = {"text": item} if isinstance(item, str) else dict(item)
                steps.append(ScriptStep.model_validate(
                    {**fields, "task_id": task_id, "agent": agent}))
    return steps


def load_script(source: str | Path | Mapping[str, Any] | Sequence[Mapping[str, Any]]
                ) -> tuple[ScriptStep, ...]:
    """The steps of a script file (``.json``, ``.jsonl``, ``.toml``) or an in-memory script."""
    where = "script"
    try:
        if isinstance(source, Mapping):
            return tuple(_steps_from_mapping(source, where))
        if not isinstance(source, str | Path):
            return tuple(ScriptStep.model_validate(item) for item in source)
        path = Path(source)
        where = str(path)
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".toml":
            return tuple(ScriptStep.model_validate(s) for s in load_toml(text).get("step", []))
        if path.suffix == ".jsonl":
            return tuple(ScriptStep.model_validate(load_json(line))
                         for line in text.splitlines() if line.strip())
        data = load_json(text)
        if isinstance(data, list):
            return tuple(ScriptStep.model_validate(item) for item in data)
        return tuple(_steps_from_mapping(data, where))
    except OSError as exc:
        raise TaskFormatError(f"{where}: cannot read the script: {exc}") from exc
    except (ValueError, TypeError, tomllib.TOMLDecodeError, RecursionError) as exc:
        raise TaskFormatError(f"{where}: not a valid script: {exc}") from exc


class ScriptedGenerator(ScopedGenerator):
    """Answers each request with the next scripted step of its task and agent.

    Args:
        path: a script file (see the module docstring for the format); not together with
            ``script``.
        script: the same as an in-memory mapping ``{task id: {agent: [step, ...]}}``.
    """

    name: ClassVar[str] = "scripted"

    def __init__(self, *, path: str | Path | None = None,
                 script: dict[str, Any] | None = None) -> None:
        if (path is None) == (script is None):
            raise ValueError("scripted needs exactly one of path or script")
        steps = load_script(path if path is not None else script or {})
        self._groups: dict[tuple[str, str], tuple[ScriptStep, ...]] = {}
        for step in steps:
            key = (step.task_id, step.agent)
            self._groups[key] = (*self._groups.get(key, ()), step)
        self._cursors: dict[tuple[str, str], int] = {}
        self._lock = threading.Lock()
        super().__init__()

    def reset(self) -> None:
        """Rewind every group to its first step."""
        with self._lock:
            self._cursors.clear()

    def remaining(self, task_id: str, agent: str = ANY) -> int:
        """Steps not yet consumed in the group a request for (task, agent) would use."""
        key = self._group(task_id, agent)
        if key is None:
            return 0
        with self._lock:
            return len(self._groups[key]) - self._cursors.get(key, 0)

    def _group(self, task_id: str, agent: str) -> tuple[str, str] | None:
        for key in ((task_id, agent), (task_id, ANY), (ANY, agent), (ANY, ANY)):
            if key in self._groups:
                return key
        return None

    def generate(self, requests: Sequence[GenerationRequest], params: SamplingParams
                 ) -> list[list[Generation]]:
        out: list[list[Generation]] = []
        with self._scope.call() as token:
            for request in requests:
                token.check()
                out.append(self._answer(request, params.n))
        return out

    def _answer(self, request: GenerationRequest, n: int) -> list[Generation]:
        task_id = request.task.id if request.task is not None else str(
            request.metadata.get("task_id", ANY))
        agent = str(request.metadata.get("agent", ANY))
        key = self._group(task_id, agent)
        if key is None:
            self._usage.add(attempts=1, failures=1)
            raise ScriptExhausted(f"no script for task {task_id!r}, agent {agent!r}")
        prompt = "\n".join(part for part in (request.system, request.prompt) if part)
        picked: list[ScriptStep] = []
        with self._lock:
            steps = self._groups[key]
            cursor = self._cursors.get(key, 0)
            while len(picked) < n:
                index = next((i for i in range(cursor, len(steps)) if steps[i].holds(prompt)),
                             None)
                if index is None:
                    break
                picked.append(steps[index])
                cursor = index + 1
            self._cursors[key] = cursor
        if not picked:
            self._usage.add(attempts=1, failures=1)
            raise ScriptExhausted(
                f"the script for task {key[0]!r}, agent {key[1]!r} has no step left that "
                f"holds for this prompt (request for {task_id!r}, agent {agent!r})")
        prompt_tokens = word_count(prompt)
        completion = sum(word_count(step.text) for step in picked)
        self._usage.add(requests=1, attempts=1, generations=len(picked),
                        prompt_tokens=prompt_tokens, completion_tokens=completion)
        return [
            make_generation(step.text, generator=self.name, request=request, sample_index=i,
                            model="script", prompt_tokens=prompt_tokens,
                            completion_tokens=word_count(step.text),
                            metadata={"agent": agent, "script_task": key[0],
                                      "script_agent": key[1]})
            for i, step in enumerate(picked)
        ]


@hookimpl
def register_generators(register: Register) -> None:
    register(ScriptedGenerator)
