"""The value types shared by behaviour models and interface declarations.

Interfaces (what a task's endpoints carry) and behaviour models (what ``process`` takes and
returns) speak the same types, so a transaction's values cross from a Verilog log into a model
and back without conversion rules of their own. Values are plain Python: ``int`` for
``uint``/``sint`` (the signed value, not its bit pattern), ``bool`` for ``bool``, a tuple for an
array. :func:`to_bits` / :func:`from_bits` convert to the packed bit pattern a Verilog port
carries (array element 0 in the least significant bits).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "ArrayType",
    "ScalarType",
    "Value",
    "ValueType",
    "bit_width",
    "check_value",
    "from_bits",
    "to_bits",
]

Value = int | bool | tuple["Value", ...]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ScalarType(_Frozen):
    kind: Literal["uint", "sint", "bool"]
    width: int = Field(1, ge=1, le=4096)

    def model_post_init(self, _: object) -> None:
        if self.kind == "bool" and self.width != 1:
            raise ValueError("a bool is 1 bit wide")

    @property
    def lo(self) -> int:
        return -(1 << (self.width - 1)) if self.kind == "sint" else 0

    @property
    def hi(self) -> int:
        return (1 << (self.width - 1)) - 1 if self.kind == "sint" else (1 << self.width) - 1


class ArrayType(_Frozen):
    kind: Literal["array"] = "array"
    element: ScalarType
    length: int = Field(ge=1, le=65536)


ValueType = Annotated[ScalarType | ArrayType, Field(discriminator="kind")]


def bit_width(t: ScalarType | ArrayType) -> int:
    return t.width if isinstance(t, ScalarType) else t.element.width * t.length


def check_value(t: ScalarType | ArrayType, value: object) -> None:
    """Raise ValueError unless ``value`` is a value of type ``t``."""
    if isinstance(t, ArrayType):
        if not isinstance(value, tuple) or len(value) != t.length:
            raise ValueError(f"expected a tuple of {t.length} elements, got {value!r}")
        for item in value:
            check_value(t.element, item)
        return
    if t.kind == "bool":
        if not isinstance(value, bool):
            raise ValueError(f"expected a bool, got {value!r}")
        return
    if isinstance(value, bool) or not isinstance(value, int) or not t.lo <= value <= t.hi:
        raise ValueError(f"expected an integer in [{t.lo}, {t.hi}] ({t.kind}{t.width}), "
                         f"got {value!r}")


def to_bits(t: ScalarType | ArrayType, value: Value) -> int:
    """The packed, unsigned bit pattern of ``value`` (array element 0 lowest)."""
    if isinstance(t, ArrayType):
        assert isinstance(value, tuple)
        out = 0
        for index, item in enumerate(value):
            out |= to_bits(t.element, item) << (index * t.element.width)
        return out
    return int(value) & ((1 << t.width) - 1)


def from_bits(t: ScalarType | ArrayType, bits: int) -> Value:
    """The value a packed bit pattern stands for (the inverse of :func:`to_bits`)."""
    if isinstance(t, ArrayType):
        mask = (1 << t.element.width) - 1
        return tuple(from_bits(t.element, (bits >> (i * t.element.width)) & mask)
                     for i in range(t.length))
    bits &= (1 << t.width) - 1
    if t.kind == "bool":
        return bool(bits)
    if t.kind == "sint" and bits >> (t.width - 1):
        return bits - (1 << t.width)
    return bits
