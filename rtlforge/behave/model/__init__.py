"""Behaviour models: the restricted typed DSL, its checker, the Behavior IR, the interpreter and
the Z3 encoding (docs/behave-models.md).

``load_model(source, name=...)`` checks and lowers a model's source (never executing it) and
returns a :class:`BehaviorModel`; ``model.instance()`` is an independent running copy that
implements :class:`~rtlforge.behave.base.ModelInstance`. Z3 (the ``z3-solver`` extra) is only
imported by :mod:`.z3enc`, on first use.
"""

from __future__ import annotations

from dataclasses import dataclass

from rtlforge.behave.model.checker import ModelError, parse_checked
from rtlforge.behave.model.interp import Instance
from rtlforge.behave.model.ir import ModelIR
from rtlforge.behave.model.lower import lower_module
from rtlforge.behave.types import ArrayType, ScalarType

__all__ = ["BehaviorModel", "Goal", "Instance", "ModelError", "load_model"]


@dataclass(frozen=True)
class Goal:
    """One coverage goal: branch site ``site`` taking ``outcome``."""

    site: int
    outcome: bool
    name: str


class BehaviorModel:
    """A checked, lowered behaviour model (immutable; instances hold the state)."""

    def __init__(self, ir: ModelIR, source: str) -> None:
        self.ir = ir
        self.source = source

    @property
    def name(self) -> str:
        return self.ir.name

    @property
    def inputs(self) -> dict[str, ScalarType | ArrayType]:
        """process()'s parameters and their port types, in declaration order."""
        return {self.ir.slots[s].name: self.ir.slots[s].declared for s in self.ir.inputs}  # type: ignore[misc]

    @property
    def outputs(self) -> dict[str, ScalarType | ArrayType]:
        """The output record's fields and their port types, in declaration order."""
        return {name: port for name, port, _ in self.ir.outputs}

    @property
    def state_fields(self) -> dict[str, ScalarType | ArrayType]:
        return {self.ir.slots[s].name: self.ir.slots[s].declared for s in self.ir.state}  # type: ignore[misc]

    def goals(self) -> list[Goal]:
        """Every branch outcome of the model, in source order (stable ids)."""
        return [Goal(site.id, outcome, site.goal_name(outcome))
                for site in self.ir.branches for outcome in (True, False)]

    def instance(self) -> Instance:
        """A fresh instance, already reset."""
        return Instance(self.ir)


def load_model(source: str, *, name: str = "model") -> BehaviorModel:
    """Check ``source`` against the DSL and lower it; raises :class:`ModelError` with the line
    and construct of the first problem."""
    tree = parse_checked(source)
    try:
        ir = lower_module(tree, name)
    except RecursionError:  # unreachable after the depth cap; kept as a typed error anyway
        raise ModelError(1, 0, "nesting", "the model is nested too deeply") from None
    return BehaviorModel(ir, source)
