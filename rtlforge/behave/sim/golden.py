"""Behaviour models for a task: the golden B* and an agent's own B̂, loaded the same way.

Both are DSL model files (docs/behave-models.md): read as text, checked and lowered by
:func:`rtlforge.behave.model.load_model`, interpreted; never imported or executed, so a golden
is no more trusted than an agent's model and a task directory from anywhere can be loaded. On
top of the DSL's own checks, a model must fit the task's interface: ``process``'s parameters
are exactly the input endpoints (configuration ones included) and its output record's fields
exactly the output endpoints, with the same types. A golden that fails either check is a task
error (:class:`~.task.BehaveTaskError` naming the golden file and the model's line); an agent's
model that fails is a :class:`TaskModelError` (its own fault, reported with the line).
"""

from __future__ import annotations

import time
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from rtlforge.behave.model import BehaviorModel, Instance, ModelError, load_model
from rtlforge.behave.sim.task import BehaveTask, BehaveTaskError
from rtlforge.behave.types import ArrayType, ScalarType
from rtlforge.core.errors import DesignError

__all__ = ["MAX_MODEL_BYTES", "GoalReport", "GoldenUnavailable", "TaskModelError",
           "goal_report", "golden_instance", "golden_model", "load_task_model",
           "read_model_file"]

#: A model file larger than this is refused before it is read (the DSL caps source at 64 kB).
MAX_MODEL_BYTES = 1 << 20


class GoldenUnavailable(BehaveTaskError):
    """The task's golden model cannot be loaded: the task's setup, never the artifact's fault
    (a configuration error, so ``is_infra`` holds and a check reports ``infra_error``)."""


class TaskModelError(DesignError, ValueError):
    """A behaviour model that does not check, or does not fit the task's interface.

    ``line``/``construct`` come from the DSL checker (:class:`ModelError`); an interface
    mismatch has ``construct="interface"`` and the line of nothing in particular (0)."""

    def __init__(self, message: str, *, line: int = 0, construct: str = "") -> None:
        super().__init__(message)
        self.line = line
        self.construct = construct


def _describe(port: ScalarType | ArrayType) -> str:
    if isinstance(port, ArrayType):
        return f"{_describe(port.element)}[{port.length}]"
    return "bool" if port.kind == "bool" else f"{port.kind}{port.width}"


def _interface_problems(task: BehaveTask, model: BehaviorModel) -> list[str]:
    problems: list[str] = []
    sides = (("process() parameter", "input endpoint", model.inputs,
              {e.name: e.type for e in task.input_endpoints}),
             ("output record field", "output endpoint", model.outputs,
              {e.name: e.type for i in task.outputs for e in i.endpoints}))
    for what, endpoint, have, want in sides:
        for name in have.keys() - want.keys():
            problems.append(f"{what} `{name}` is not an {endpoint} of the task")
        for name in want.keys() - have.keys():
            problems.append(f"{endpoint} `{name}` is missing from the model's {what}s")
        for name in have.keys() & want.keys():
            if have[name] != want[name]:
                problems.append(f"{what} `{name}` is {_describe(have[name])}, the task "
                                f"declares {_describe(want[name])}")
    return sorted(problems)


def load_task_model(task: BehaveTask, source: str, *, name: str = "model") -> BehaviorModel:
    """Check ``source`` (an untrusted DSL model) and that it fits ``task``'s interface.

    Raises :class:`TaskModelError` with the checker's line and construct."""
    try:
        model = load_model(source, name=name)
    except ModelError as exc:
        raise TaskModelError(f"line {exc.line}: {exc.message} [{exc.construct}]",
                             line=exc.line, construct=exc.construct) from exc
    problems = _interface_problems(task, model)
    if problems:
        raise TaskModelError("the model does not fit the task's interface: "
                             + "; ".join(problems), construct="interface")
    return model


def read_model_file(path: Path, *, what: str = "model") -> str:
    """The text of a model file (size-capped, UTF-8, a regular file, not a link)."""
    try:
        if path.is_symlink() or not path.is_file():
            raise TaskModelError(f"{what} {path} is not a file")
        if path.stat().st_size > MAX_MODEL_BYTES:
            raise TaskModelError(f"{what} {path} is larger than {MAX_MODEL_BYTES} bytes")
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TaskModelError(f"cannot read {what} {path}: {exc}") from exc


def golden_model(task: BehaveTask) -> BehaviorModel:
    """The task's golden model B*, checked; a golden that does not load is a task error."""
    if task.directory is None:
        raise GoldenUnavailable(f"task {task.id}: no task directory to load the golden from",
                                field="golden")
    path = task.directory / task.golden
    try:
        return load_task_model(task, read_model_file(path, what="golden"), name=task.id)
    except TaskModelError as exc:
        raise GoldenUnavailable(f"field 'golden': the golden model does not load: {exc}",
                                field="golden", file=str(path),
                                line=exc.line or None) from exc


def golden_instance(task: BehaveTask) -> Instance:
    """A fresh, reset instance of the task's golden model (the one seam goldens load through)."""
    return golden_model(task).instance()


class GoalReport(BaseModel):
    """The golden's branch goals after a check: ``hit`` on the stimulus; ``unresolved`` not hit
    and not proven unreachable; ``bounded_unreachable`` proven by Z3 to be out of reach within
    ``steps`` transactions from reset (so the stimulus could not have hit them that soon).
    ``solver``: ``off`` (no budget, or nothing unhit), ``unavailable`` (z3 not installed),
    ``unsupported`` (the model is outside the encoding) or ``z3``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    total: int
    hit: tuple[str, ...]
    unresolved: tuple[str, ...]
    bounded_unreachable: tuple[str, ...] = ()
    steps: int = 0
    solver: str = "off"


def goal_report(model: BehaviorModel, branch_goals: dict[str, bool], *, budget_s: float = 1.0,
                steps: int = 4, timeout_ms: int = 250) -> GoalReport:
    """Sort the golden's goals; with a budget, ask Z3 (each query time-boxed, the whole pass
    within ``budget_s`` wall-clock seconds) which unhit goals no ``steps``-transaction sequence
    from reset reaches. Only an ``unreachable`` answer moves a goal out of ``unresolved``: a
    timeout, a refusal or a reachable goal stays unresolved."""
    hit = tuple(name for name, ok in branch_goals.items() if ok)
    unhit = [name for name, ok in branch_goals.items() if not ok]
    if budget_s <= 0 or not unhit:
        return GoalReport(total=len(branch_goals), hit=hit, unresolved=tuple(unhit))
    from rtlforge.behave.model import z3enc  # z3 itself is imported on the first query

    deadline = time.monotonic() + budget_s
    unreachable: list[str] = []
    solver = "z3"
    for name in unhit:
        left_ms = int((deadline - time.monotonic()) * 1000)
        if left_ms <= 0:
            break
        try:
            result = z3enc.solve_for_branch(model, name, steps=steps,
                                            timeout_ms=min(timeout_ms, left_ms))
        except z3enc.Z3Unavailable:
            solver = "unavailable"
            break
        if result.status == "unsupported":
            solver = "unsupported"
            break
        if result.status == "unreachable":
            unreachable.append(name)
    return GoalReport(total=len(branch_goals), hit=hit,
                      unresolved=tuple(n for n in unhit if n not in unreachable),
                      bounded_unreachable=tuple(unreachable), steps=steps, solver=solver)
