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

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

__all__ = [
    "PAPER",
    "PRESETS",
    "UNION_ITERATIONS",
    "UNION_TRIALS",
    "EvalProtocol",
    "MethodProtocol",
    "preset",
    "protocol_record",
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


PAPER = EvalProtocol(
    name="paper", trials=30, iterations=10, checkpoints=(1, 5, 10),
    method=MethodProtocol(temperature=0.5, samples=1, history="all", history_limit=None,
                          template="paper"))

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
