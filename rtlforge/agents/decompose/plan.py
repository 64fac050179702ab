"""The decomposition plan: the model's JSON, parsed strictly and checked before anything is built.

A plan is 4-8 sub-modules, each with a name, a purpose, its ports (direction and width) and the
sub-modules it instantiates. Everything a model can get wrong is caught here and raised as one
:class:`DecompositionError` whose message says what to fix: text that holds no JSON object,
JSON that does not parse, the wrong number of modules, names that are not Verilog identifiers
(or are keywords, duplicates, or the top's own name), dependencies on unknown modules, and
dependency cycles (the cycle is named). Unknown keys in the JSON are ignored (models like to add
a "description"); the types of known keys are not negotiable.

:func:`build_order` is a topological order with a deterministic tie-break: among the modules
whose dependencies are all built, the one listed first in the plan goes first.
"""

from __future__ import annotations

import heapq
import json
import re
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from rtlforge.core.errors import DesignError
from rtlforge.eda.modules import VERILOG_KEYWORDS

__all__ = [
    "MAX_ANSWER_CHARS",
    "MAX_MODULES",
    "MIN_MODULES",
    "DecompositionError",
    "DecompositionPlan",
    "PlannedPort",
    "SubModule",
    "build_order",
    "parse_plan",
]

MIN_MODULES = 4
MAX_MODULES = 8
#: Whole-string match (``$`` would also match before a final newline: "alu\n" is no name).
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: Longest answer read for a plan, and how many opening brackets are tried per region.
MAX_ANSWER_CHARS = 200_000
_MAX_STARTS = 64
_FENCE = re.compile(r"```[ \t]*([A-Za-z]*)[^\n]*\n(.*?)(?:```|\Z)", re.S)


class DecompositionError(DesignError, ValueError):
    """The model's decomposition (or one of its answers) cannot be used; the message says why.

    A :class:`~rtlforge.core.errors.DesignError`: it is the model's output that is wrong, never
    the harness, so it counts against the attempt and the loop may fall back to one module.
    """


def _identifier(value: str, what: str) -> str:
    if not _IDENTIFIER.fullmatch(value):
        raise ValueError(f"{what} {value!r} is not a Verilog identifier "
                         f"(letters, digits and _, not starting with a digit)")
    if value in VERILOG_KEYWORDS:
        raise ValueError(f"{what} {value!r} is a Verilog keyword")
    return value


class _Plan(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")


class PlannedPort(_Plan):
    name: str
    direction: Literal["input", "output", "inout"]
    width: int = Field(1, ge=1, le=4096)

    @field_validator("name")
    @classmethod
    def _check_name(cls, value: str) -> str:
        return _identifier(value, "port name")

    def declaration(self) -> str:
        """``input [7:0] a`` (the form headers and prompts use)."""
        return f"{self.direction} {f'[{self.width - 1}:0] ' if self.width > 1 else ''}{self.name}"


class SubModule(_Plan):
    name: str
    purpose: str = Field(min_length=1)
    ports: tuple[PlannedPort, ...] = Field(min_length=1)
    dependencies: tuple[str, ...] = ()

    @field_validator("name")
    @classmethod
    def _check_name(cls, value: str) -> str:
        return _identifier(value, "module name")

    @field_validator("ports")
    @classmethod
    def _unique_ports(cls, ports: tuple[PlannedPort, ...]) -> tuple[PlannedPort, ...]:
        names = [p.name for p in ports]
        duplicated = sorted({n for n in names if names.count(n) > 1})
        if duplicated:
            raise ValueError(f"duplicate port name(s) {duplicated}")
        return ports

    def header(self) -> str:
        """The planned header: ``module name (input a, output [7:0] y);``."""
        ports = ",\n    ".join(p.declaration() for p in self.ports)
        return f"module {self.name} (\n    {ports}\n);"


class DecompositionPlan(_Plan):
    """A checked plan: 4-8 uniquely named sub-modules whose dependencies form a DAG."""

    modules: tuple[SubModule, ...]

    def module(self, name: str) -> SubModule:
        return next(m for m in self.modules if m.name == name)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(m.name for m in self.modules)


def _json_value(text: str) -> Any:
    """The plan-shaped JSON of ``text``: a ```json fence first, else bare JSON in the text.

    Tries at most :data:`_MAX_STARTS` opening brackets per region, so prose full of brackets
    stays cheap; a value with a ``"modules"`` key (or a list of objects) wins over any other
    JSON found first (``[7:0]`` in a sentence is no plan).
    """
    if not isinstance(text, str):
        raise DecompositionError(f"the decomposition answer must be text, not "
                                 f"{type(text).__name__}")
    if len(text) > MAX_ANSWER_CHARS:
        raise DecompositionError(f"the decomposition answer is longer than {MAX_ANSWER_CHARS} "
                                 f"characters")
    fenced = [body for lang, body in _FENCE.findall(text) if lang.lower() in ("json", "")]
    decoder = json.JSONDecoder()
    error: str | None = None
    fallback: Any = None
    for region in (*fenced, text):
        starts = [i for i, char in enumerate(region) if char in "{["][:_MAX_STARTS]
        for start in starts:
            try:
                value, _ = decoder.raw_decode(region, start)
            except (ValueError, RecursionError) as exc:  # RecursionError: absurd nesting
                error = error or str(exc)
                continue
            if _plan_shaped(value):
                return value
            if fallback is None and isinstance(value, dict | list):
                fallback = value
    if fallback is not None:
        return fallback
    if error is not None:
        raise DecompositionError(f"the decomposition is not valid JSON: {error}")
    raise DecompositionError("the decomposition answer holds no JSON object")


def _plan_shaped(value: Any) -> bool:
    if isinstance(value, dict):
        return "modules" in value or "submodules" in value
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


def _errors(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:5]:
        where = ".".join(str(p) for p in err["loc"])
        parts.append(f"{where}: {err['msg']}" if where else err["msg"])
    return "; ".join(parts)


def parse_plan(text: str, *, top: str | None = None) -> DecompositionPlan:
    """The checked plan in a model's answer (fenced or bare JSON).

    Accepts ``{"modules": [...]}`` or a bare list of modules. ``top`` (the task's module) may
    not be a sub-module's name: the top is written last and would clash with it.
    """
    value = _json_value(text)
    raw = value.get("modules", value.get("submodules")) if isinstance(value, dict) else value
    if not isinstance(raw, list):
        raise DecompositionError('the decomposition JSON needs a "modules" list')
    if not MIN_MODULES <= len(raw) <= MAX_MODULES:
        raise DecompositionError(f"the decomposition has {len(raw)} sub-modules; it needs "
                                 f"{MIN_MODULES} to {MAX_MODULES}")
    modules = []
    for index, item in enumerate(raw):
        try:
            modules.append(SubModule.model_validate(item))
        except ValidationError as exc:
            label = item.get("name") if isinstance(item, dict) else None
            raise DecompositionError(
                f"sub-module {index + 1}{f' ({label!r})' if isinstance(label, str) else ''}: "
                f"{_errors(exc)}") from None
    names = [m.name for m in modules]
    duplicated = sorted({n for n in names if names.count(n) > 1})
    if duplicated:
        raise DecompositionError(f"sub-module names must be unique; repeated: {duplicated}")
    if top is not None and top in names:
        raise DecompositionError(f"a sub-module may not be named like the top module {top!r}")
    for module in modules:
        unknown = sorted(set(module.dependencies) - set(names))
        if unknown:
            raise DecompositionError(f"sub-module {module.name!r} depends on unknown "
                                     f"module(s) {unknown}; known: {names}")
        if module.name in module.dependencies:
            raise DecompositionError(f"sub-module {module.name!r} depends on itself")
    plan = DecompositionPlan(modules=tuple(modules))
    build_order(plan)  # raises on a cycle
    return plan


def build_order(plan: DecompositionPlan) -> tuple[str, ...]:
    """Dependencies first; ties go to the module listed first in the plan."""
    position = {m.name: i for i, m in enumerate(plan.modules)}
    waiting = {m.name: set(m.dependencies) for m in plan.modules}
    users: dict[str, list[str]] = {name: [] for name in position}
    for module in plan.modules:
        for dep in module.dependencies:
            users[dep].append(module.name)
    ready = [(position[n], n) for n, deps in waiting.items() if not deps]
    heapq.heapify(ready)
    order: list[str] = []
    while ready:
        _, name = heapq.heappop(ready)
        order.append(name)
        for user in users[name]:
            waiting[user].discard(name)
            if not waiting[user]:
                heapq.heappush(ready, (position[user], user))
    if len(order) < len(plan.modules):
        raise DecompositionError(
            f"the sub-module dependencies form a cycle: {' -> '.join(_cycle(plan, order))}")
    return tuple(order)


def _cycle(plan: DecompositionPlan, built: Sequence[str]) -> list[str]:
    """One dependency cycle among the modules that could not be ordered, first listed first."""
    left = {m.name: [d for d in m.dependencies if d not in built]
            for m in plan.modules if m.name not in built}
    start = next(iter(left))
    path, seen = [start], {start: 0}
    while True:
        nxt = left[path[-1]][0]  # every unordered module waits on another unordered one
        if nxt in seen:
            return [*path[seen[nxt]:], nxt]
        seen[nxt] = len(path)
        path.append(nxt)
