"""What BEHAVE-Sim needs from a behaviour model, whatever runs it: reset, then one call per
logical transaction. The DSL's interpreter (:mod:`rtlforge.behave.model`) implements it; tests
and the simulator may use any object with the same two methods."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict

from rtlforge.behave.types import Value

__all__ = ["DONT_CARE", "DontCare", "Failure", "ModelInstance", "Outputs", "is_dont_care"]


class DontCare:
    """An output value the model leaves unspecified in this transaction (the DSL's ``ANY``):
    the matcher does not compare it, whatever the artifact produces (X/Z bits included).

    One instance, :data:`DONT_CARE`; equality is by type so copies still compare equal."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DontCare)

    def __hash__(self) -> int:
        return hash(DontCare)

    def __repr__(self) -> str:
        return "ANY"

    def __reduce__(self) -> str:
        return "DONT_CARE"


DONT_CARE = DontCare()


def is_dont_care(value: object) -> bool:
    return isinstance(value, DontCare)


Outputs = Mapping[str, "Value | DontCare"]


class Failure(BaseModel):
    """A declared failure: the model says this transaction is an error (``fail(reason)``).

    ``kind="range"``: not declared but a DSL runtime check (a value that does not fit its
    declared width, an index out of range, a division by zero): a bug in the model itself."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    reason: str
    kind: Literal["declared", "range"] = "declared"


class ModelInstance(Protocol):
    """One independent instance of a behaviour model (its own state)."""

    def reset(self) -> None: ...

    def process(self, inputs: Mapping[str, Value]) -> Outputs | Failure: ...
