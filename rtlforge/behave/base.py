"""What BEHAVE-Sim needs from a behaviour model, whatever runs it: reset, then one call per
logical transaction. The DSL's interpreter (:mod:`rtlforge.behave.model`) implements it; tests
and the simulator may use any object with the same two methods."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict

from rtlforge.behave.types import Value

__all__ = ["Failure", "ModelInstance", "Outputs"]

Outputs = Mapping[str, Value]


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
