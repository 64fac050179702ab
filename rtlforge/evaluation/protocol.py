"""Evaluation protocols: the paper's (``paper``) as a preset, and how far a run departs from it.

"Pareto-Optimal RTL Code Generation via Multi-Objective RL", section 5.3, evaluates with
temperature 0.5, 30 independent trials of 10 iterations, each iteration's prompt showing the
trial's *whole* history (iteration 10 sees all 9 earlier circuits, failing ones included), and
the same prompt wording as in training. :data:`PAPER` holds exactly that; ``samples = 1`` (one
circuit per iteration) follows from "iteration 10 sees 9 earlier circuits". The template
``paper`` is our wording of that prompt (``generation/templates/paper.toml``), not Appendix C's.

``rtlforge explore --preset paper`` and ``rtlforge eval --preset paper`` start from these values;
options given explicitly still win, and every run records :func:`protocol_record` (the values it
used, which differ from the paper's, and whether the preset was asked for), so a reader of a
summary can tell a paper-protocol run from a custom one. See ``docs/explore.md``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

__all__ = [
    "PAPER",
    "PRESETS",
    "UNCHECKED_IN_SAMPLES",
    "UNION_ITERATIONS",
    "UNION_TRIALS",
    "EvalProtocol",
    "MethodProtocol",
    "layout_line",
    "preset",
    "protocol_record",
    "sample_layout_record",
]

#: Appendix E.5: the union of the first N trials, for these N, at these iterations.
UNION_TRIALS: tuple[int, ...] = (1, 5, 10, 15, 20, 25, 30)
UNION_ITERATIONS: tuple[int, ...] = (1, 5, 10)


class MethodProtocol(BaseModel):
    """What one method's prompts and sampling follow."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    temperature: float
    samples: int  # per iteration (the group size)
    history: Literal["passing-only", "all", "front"]
    history_limit: int | None  # None: the whole history
    template: str


class EvalProtocol(BaseModel):
    """A run's protocol: trials x iterations, the checkpoints reported, and each method's."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    trials: int
    iterations: int
    checkpoints: tuple[int, ...]
    method: MethodProtocol


#: Section 5.3 (temperature, trials, iterations, checkpoints, the whole history) and Appendix C
#: (the prompts; its history lists "the circuits obtained so far and their PPA values", so the
#: circuits that passed, each with its PPA: "passing-only").
PAPER = EvalProtocol(
    name="paper", trials=30, iterations=10, checkpoints=(1, 5, 10),
    method=MethodProtocol(temperature=0.5, samples=1, history="passing-only",
                          history_limit=None, template="paper"))

PRESETS: dict[str, EvalProtocol] = {"paper": PAPER}


def preset(name: str | EvalProtocol) -> EvalProtocol:
    """A preset by name (``"paper"``), or the protocol given."""
    if isinstance(name, EvalProtocol):
        return name
    try:
        return PRESETS[name]
    except KeyError:
        raise ValueError(f"unknown preset {name!r}; one of {sorted(PRESETS)}") from None


def protocol_record(*, trials: int, iterations: int, checkpoints: tuple[int, ...] | list[int],
                    methods: Mapping[str, MethodProtocol | Mapping[str, Any]],
                    preset_name: str | None = None,
                    reference: EvalProtocol = PAPER) -> dict[str, Any]:
    """The protocol block of a run's summary: what was used and how it departs from the paper.

    ``deviations`` maps each setting that differs from ``reference`` (``trials``,
    ``methods.<name>.temperature``...) to ``{"paper": value, "run": value}``; ``paper_protocol``
    is True when there is none. With ``preset_name`` set, every deviation is an option that was
    given explicitly and overrode the preset, listed again under ``overridden``.
    """
    ref_method = reference.method.model_dump()
    used = {n: MethodProtocol.model_validate(dict(m) if isinstance(m, Mapping) else m)
            for n, m in methods.items()}
    deviations: dict[str, dict[str, Any]] = {}
    # checkpoints only choose what the summary reports: they do not change the run
    for key, value in (("trials", trials), ("iterations", iterations)):
        paper_value = getattr(reference, key)
        if value != paper_value:
            deviations[key] = {reference.name: paper_value, "run": value}
    for name, m in used.items():
        for key, value in m.model_dump().items():
            if value != ref_method[key]:
                deviations[f"methods.{name}.{key}"] = {reference.name: ref_method[key],
                                                       "run": value}
    out: dict[str, Any] = {
        "preset": preset_name, "reference": reference.name,
        f"{reference.name}_protocol": not deviations, "deviations": deviations,
        "effective": {"trials": trials, "iterations": iterations,
                      "checkpoints": list(checkpoints),
                      "methods": {n: m.model_dump() for n, m in used.items()}},
    }
    if preset_name is not None:
        out["overridden"] = sorted(deviations)
    return out


#: What samples scored by ``rtlforge eval`` do not record, so no run can be checked against.
UNCHECKED_IN_SAMPLES: tuple[str, ...] = ("temperature", "history", "history_limit", "template")


def sample_layout_record(labels: Iterable[tuple[str, str, int, int]],
                         preset_name: str | None = None, *,
                         reference: EvalProtocol = PAPER) -> dict[str, Any]:
    """The protocol block of an eval summary: how scored samples are laid out against
    ``reference``.

    ``labels`` are ``(method, task, trial, iteration)`` per sample. Per method it observes the
    trials (the fewest distinct trial ids any of its tasks has), the iterations present and the
    most samples in one (task, trial, iteration); each that differs from the reference's
    (``trials``, iterations ``1..iterations``, ``samples``) is a deviation. Sampling settings
    and prompts are not in the samples: they are listed as unchecked, never assumed.
    """
    cells: dict[str, dict[str, dict[tuple[int, int], int]]] = {}
    for method, task, trial, iteration in labels:
        per_task = cells.setdefault(method, {}).setdefault(task, {})
        per_task[(trial, iteration)] = per_task.get((trial, iteration), 0) + 1
    expected = {"trials": reference.trials,
                "iterations": list(range(1, reference.iterations + 1)),
                "samples": reference.method.samples}
    observed: dict[str, dict[str, Any]] = {}
    deviations: dict[str, dict[str, Any]] = {}
    for method, tasks in sorted(cells.items()):
        seen = {
            "tasks": len(tasks),
            "trials": min(len({trial for trial, _ in c}) for c in tasks.values()),
            "iterations": sorted({it for c in tasks.values() for _, it in c}),
            "samples": max(n for c in tasks.values() for n in c.values()),
        }
        observed[method] = seen
        for key, want in expected.items():
            if seen[key] != want:
                deviations[f"methods.{method}.{key}"] = {reference.name: want, "run": seen[key]}
    out: dict[str, Any] = {
        "preset": preset_name, "reference": reference.name,
        f"{reference.name}_layout": not deviations, "deviations": deviations,
        "observed": observed, "unchecked": list(UNCHECKED_IN_SAMPLES)}
    if preset_name is not None:
        out["overridden"] = sorted(deviations)
    return out


def layout_line(record: Mapping[str, Any]) -> str:
    """One line for the eval report's settings table."""
    ref = record.get("reference", "paper")
    deviations = record.get("deviations") or {}
    asked = f" (--preset {record['preset']})" if record.get("preset") else ""
    unchecked = ", ".join(record.get("unchecked", ()))
    if not deviations:
        return (f"{ref} layout{asked}: trials, iterations and samples per iteration match; "
                f"not recorded in samples, so unchecked: {unchecked}")
    parts = ", ".join(f"{k} {v.get('run')!r} ({ref} {v.get(ref)!r})"
                      for k, v in sorted(deviations.items()))
    return f"custom{asked}: differs from the {ref} protocol in {parts}"
