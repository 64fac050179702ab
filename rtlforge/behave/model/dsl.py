"""The names a behaviour model may use (docs/behave-models.md is the language reference).

A model is never executed as Python: the checker parses it and the lowering resolves these
names by *name*. This module exists so that a model file can say
``from rtlforge.behave.model.dsl import *`` (the only import the checker accepts) and so that
editors and type checkers see what the names are. The stubs below document the semantics the
interpreter and the Z3 encoding implement; calling them raises, on purpose.
"""

from __future__ import annotations

from typing import Any, NoReturn

__all__ = [
    "ANY",
    "Array",
    "Bool",
    "Enum",
    "Model",
    "Record",
    "SInt",
    "UInt",
    "bit",
    "bits",
    "fail",
    "fill",
    "saturate",
    "sext",
    "ssaturate",
    "swrap",
    "wrap",
    "zext",
]

#: The module path a model may import from (and nothing else).
DSL_MODULE = "rtlforge.behave.model.dsl"

#: The don't-care output value: ``return R(data=ANY, ...)`` leaves ``data`` unchecked.
ANY_NAME = "ANY"

#: Type constructors usable in annotations.
TYPE_NAMES = frozenset({"UInt", "SInt", "Bool", "Array"})
#: Base classes of the classes a model declares.
BASE_NAMES = frozenset({"Model", "Record", "Enum"})
#: Functions an expression may call (plus the builtins ``min``, ``max``, ``abs``).
FUNCTION_NAMES = frozenset({"wrap", "swrap", "saturate", "ssaturate", "sext", "zext", "bit",
                            "bits", "fill", "fail", "min", "max", "abs"})


class _AnyStub:
    """``ANY``: as a field value of the returned record only, "this output is not specified in
    this transaction" (BEHAVE-Sim does not compare it; X/Z from a design is accepted)."""

    def __repr__(self) -> str:
        return "ANY"


ANY: Any = _AnyStub()


class _TypeStub:
    """``UInt[8]``-style subscripting, for editors only."""

    def __class_getitem__(cls, item: Any) -> Any:
        return (cls, item)


class UInt(_TypeStub):
    """``UInt[W]``: an unsigned integer in [0, 2**W - 1]."""


class SInt(_TypeStub):
    """``SInt[W]``: a two's complement integer in [-2**(W-1), 2**(W-1) - 1]."""


class Bool:
    """``Bool``: True or False (not an integer: use ``1 if b else 0``)."""


class Array(_TypeStub):
    """``Array[T, N]``: N elements of the scalar type T; element 0 is the least significant
    when the array crosses a port."""


class Model:
    """The base of the one behaviour-model class of a file."""


class Record:
    """The base of a record class (named, typed fields; the outputs of ``process``)."""


class Enum:
    """The base of an enumeration (members with explicit integer values)."""


def _stub(name: str) -> NoReturn:
    raise RuntimeError(f"{name}() is DSL syntax: models are checked and interpreted, not run")


def wrap(x: int, width: int) -> int:
    """x modulo 2**width: ``UInt[width]``."""
    _stub("wrap")


def swrap(x: int, width: int) -> int:
    """The low ``width`` bits of x read as two's complement: ``SInt[width]``."""
    _stub("swrap")


def sext(x: int, width: int) -> int:
    """Sign-extend a ``width``-bit pattern (the same value as ``swrap``; says the intent)."""
    _stub("sext")


def zext(x: int, width: int) -> int:
    """The unsigned value of the low ``width`` bits (the same value as ``wrap``)."""
    _stub("zext")


def saturate(x: int, width: int) -> int:
    """x clamped to [0, 2**width - 1]: ``UInt[width]``."""
    _stub("saturate")


def ssaturate(x: int, width: int) -> int:
    """x clamped to [-2**(width-1), 2**(width-1) - 1]: ``SInt[width]``."""
    _stub("ssaturate")


def bit(x: int, index: int) -> bool:
    """Bit ``index`` of x's two's complement pattern, as a Bool."""
    _stub("bit")


def bits(x: int, high: int, low: int) -> int:
    """Bits high..low (constants) of x: ``UInt[high - low + 1]``."""
    _stub("bits")


def fill(value: int) -> Any:
    """An array (of the target's length) with every element ``value``."""
    _stub("fill")


def fail(reason: str) -> NoReturn:
    """End the transaction with a declared failure (``Failure(reason)``)."""
    _stub("fail")
