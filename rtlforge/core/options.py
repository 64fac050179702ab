"""Plugin options: one pydantic model per plugin, declared or derived, never guessed.

A plugin declares its options as ``Options`` (in the style of simonw/llm's ``Options``)::

    class MyGenerator(Generator):
        name = "mine"

        class Options(PluginOptions):
            temperature: float = Field(0.7, description="sampling temperature")

Most built-ins already declare their options once, as constructor parameters; writing them a
second time would only let the two drift. So when ``Options`` is None the model is derived from
the class: a dataclass's init fields (a field's ``metadata["description"]`` is its help), else
the keyword parameters of ``__init__``, following ``**kwargs`` up the MRO to the ``__init__`` they
are forwarded to. Annotations pydantic cannot check (a live pipeline, an executor) become ``Any``.

A derived option's description is read from the docstrings, in the Google style the API
reference renders too: an ``Args:`` section of the ``__init__`` that takes the parameter, else of
its class, the nearest along the MRO (``Attributes:`` is read as well, for dataclasses)::

    def __init__(self, *, temperature: float = 0.7) -> None:
        '''Args:
            temperature: sampling temperature (0 is greedy).
        '''

A dataclass field's ``metadata["description"]`` wins over the docstring. Every built-in option
has a description: ``tests/docs/test_docs_reference.py`` fails on one without.

``PluginHost.create`` validates keyword options against the model (:class:`PluginOptionsError`,
never a ``TypeError`` from deep inside a constructor), ``rtlforge plugins`` lists them, and
``rtlforge.cmdline`` types the CLI's ``--*-option KEY=VALUE`` strings with them.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
import sys
import typing
from collections import abc
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, create_model
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from rtlforge.core.errors import PluginOptionsError


class PluginOptions(BaseModel):
    """Base of option models: unknown options are errors, not silently ignored."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True,
                              protected_namespaces=(), populate_by_name=False)


class PluginSpec(BaseModel):
    """A plugin chosen by name, with its options: what ``--validator NAME`` and
    ``--validator-option NAME.KEY=VALUE`` select, and what ``Pipeline.build(extra=...)`` takes
    (a bare name or a ``(name, options)`` pair reads as one)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1)
    options: dict[str, Any] = Field(default_factory=dict)

    @classmethod
    def of(cls, value: str | tuple[str, Mapping[str, Any]] | PluginSpec) -> PluginSpec:
        if isinstance(value, PluginSpec):
            return value
        if isinstance(value, str):
            return cls(name=value)
        if isinstance(value, tuple) and len(value) == 2 and isinstance(value[1], Mapping):
            return cls(name=value[0], options=dict(value[1]))
        raise PluginOptionsError(f"expected a plugin name, a (name, options) pair or a "
                                 f"PluginSpec, not {value!r}")


@dataclass(frozen=True)
class OptionInfo:
    """One option as ``rtlforge plugins`` shows it."""

    name: str
    type: str
    required: bool
    default: Any = None
    description: str = ""


# ------------------------------------------------------------------------------ derivation


def options_model(factory: Callable[..., Any]) -> type[BaseModel]:
    """The options model of a registered class or factory (declared ``Options`` wins)."""
    declared = getattr(factory, "Options", None)
    if isinstance(declared, type) and issubclass(declared, BaseModel):
        return declared
    label = getattr(factory, "__name__", type(factory).__name__)
    if isinstance(factory, type) and dataclasses.is_dataclass(factory):
        return _build(label, _dataclass_fields(factory))
    return _build(label, _parameters(factory))


_Spec = tuple[str, Any, Any, str]  # name, annotation, default (PydanticUndefined: required), help


@dataclass(frozen=True)
class _Factory:
    """A default made per instance (a dataclass ``default_factory``)."""

    make: Callable[[], Any]


_SECTION = re.compile(r"(Args|Arguments|Parameters|Keyword Args|Keyword Arguments|Attributes):")
_ENTRY = re.compile(r"\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:(?:\s+(.*))?")


def docstring_options(doc: str | None) -> dict[str, str]:
    """Name -> description from the Google-style ``Args:`` / ``Attributes:`` sections of a
    docstring: ``name: text`` or ``name (type): text``, continued on more-indented lines."""
    if not doc:
        return {}
    out: dict[str, str] = {}
    entry_indent: int | None = None
    current: str | None = None
    in_section = False
    for line in inspect.cleandoc(doc).splitlines():
        text = line.strip()
        indent = len(line) - len(line.lstrip())
        if not text:
            continue
        if _SECTION.fullmatch(text):
            in_section, entry_indent, current = True, None, None
            continue
        if not in_section:
            continue
        if entry_indent is None:
            entry_indent = indent
        if indent < entry_indent or (indent == entry_indent and not _ENTRY.fullmatch(text)):
            in_section, current = False, None
            continue
        match = _ENTRY.fullmatch(text) if indent == entry_indent else None
        if match:
            current = match.group(1)
            out[current] = (match.group(2) or "").strip()
        elif current is not None:
            out[current] = f"{out[current]} {text}".strip()
    return out


def _documented(*owners: Any) -> dict[str, str]:
    """Option descriptions from the docstrings of ``owners``; the first to describe one wins."""
    out: dict[str, str] = {}
    for owner in owners:
        for name, text in docstring_options(getattr(owner, "__doc__", None)).items():
            out.setdefault(name, text)
    return out


def _dataclass_fields(cls: type) -> list[_Spec]:
    hints = _hints(cls, {f.name: f.type for f in dataclasses.fields(cls)}, cls.__module__)
    documented = _documented(*(k for k in cls.__mro__ if k is not object))
    out: list[_Spec] = []
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        if f.default is not dataclasses.MISSING:
            default: Any = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = _Factory(f.default_factory)
        else:
            default = PydanticUndefined
        description = str(f.metadata.get("description", "")) or documented.get(f.name, "")
        out.append((f.name, hints[f.name], default, description))
    return out


def _parameters(factory: Callable[..., Any]) -> list[_Spec]:
    """Keyword parameters of the constructor, following ``**kwargs`` to the next ``__init__``."""
    if isinstance(factory, type):
        inits = [klass.__dict__["__init__"] for klass in factory.__mro__
                 if "__init__" in klass.__dict__ and klass is not object]
        # A parameter a subclass takes again means what its base documents, unless it says
        # otherwise: the nearest description along the MRO wins.
        documented = _documented(*(d for klass in factory.__mro__ if klass is not object
                                   for d in (klass.__dict__.get("__init__"), klass)))
    else:
        inits = [factory]
        documented = _documented(factory)
    out: dict[str, _Spec] = {}
    for func in inits:
        try:
            sig = inspect.signature(func)
        except (TypeError, ValueError):
            break
        params = list(sig.parameters.values())
        if isinstance(factory, type) and params:
            params = params[1:]  # self
        hints = _hints(func, {p.name: p.annotation for p in params}, getattr(func, "__module__",
                                                                                 None))
        forwards = False
        for p in params:
            if p.kind is p.VAR_KEYWORD:
                forwards = True
            elif p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.name not in out:
                default = PydanticUndefined if p.default is p.empty else p.default
                out[p.name] = (p.name, hints[p.name], default, documented.get(p.name, ""))
        if not forwards:
            break
    return list(out.values())


def _hints(owner: Any, raw: dict[str, Any], module: str | None) -> dict[str, Any]:
    """Resolved annotations; one that cannot be resolved (a TYPE_CHECKING import) is Any."""
    try:
        resolved = typing.get_type_hints(owner)
    except Exception:  # noqa: BLE001 - fall back to one annotation at a time
        resolved = {}
    namespace = vars(sys.modules[module]) if module in sys.modules else {}
    out: dict[str, Any] = {}
    for name, ann in raw.items():
        if name in resolved:
            out[name] = resolved[name]
        elif ann is inspect.Parameter.empty:
            out[name] = Any
        elif isinstance(ann, str):
            try:
                out[name] = eval(ann, dict(namespace))
            except Exception:  # noqa: BLE001
                out[name] = Any
        else:
            out[name] = ann
    return out


_LAZY = frozenset({abc.Iterable, abc.Iterator, abc.Generator})


def _lazy(annotation: Any) -> bool:
    if isinstance(annotation, list):  # the parameter list of a Callable[[...], ...]
        return any(_lazy(a) for a in annotation)
    return typing.get_origin(annotation) in _LAZY or any(annotation is t for t in _LAZY) or any(
        _lazy(a) for a in typing.get_args(annotation))


def _checkable(annotation: Any) -> Any:
    """The annotation if pydantic can validate it without trusting arbitrary classes, and
    without turning an iterable into a one-shot validating iterator (those become Any)."""
    if _lazy(annotation):
        return Any
    try:
        TypeAdapter(annotation)
    except Exception:  # noqa: BLE001 - PydanticSchemaGenerationError and friends
        return Any
    return annotation


_RESERVED = frozenset(dir(BaseModel))


def _build(label: str, specs: list[_Spec]) -> type[BaseModel]:
    fields: dict[str, Any] = {}
    for name, annotation, default, description in specs:
        # An option named like a BaseModel attribute ("copy", "json") lives under another key.
        key = f"opt_{name}" if name in _RESERVED else name
        extra: dict[str, Any] = {"description": description or None,
                                 "alias": name if key != name else None}
        info = (Field(default_factory=default.make, **extra) if isinstance(default, _Factory)
                else Field(default, **extra))
        fields[key] = (_checkable(annotation), info)
    return create_model(f"{label}Options", __base__=PluginOptions, **fields)


# ------------------------------------------------------------------------------ use


def public_options(model: type[BaseModel]) -> dict[str, tuple[str, FieldInfo]]:
    """Option name -> (attribute key, field) of a model."""
    return {(f.alias or key): (key, f) for key, f in model.model_fields.items()}


def _problems(exc: ValidationError, known: Iterable[str]) -> str:
    lines = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "(options)"
        if err["type"] == "extra_forbidden":
            options = ", ".join(sorted(known)) or "none"
            lines.append(f"unknown option {where!r} (options: {options})")
        elif err["type"] == "missing":
            lines.append(f"option {where!r} is required")
        else:
            lines.append(f"option {where!r}: {err['msg']}")
    return "; ".join(lines)


def validate_options(model: type[BaseModel], options: dict[str, Any], *,
                     what: str, supplied: Iterable[str] = ()) -> dict[str, Any]:
    """Check ``options`` against ``model``; returns the given ones, typed (defaults stay the
    constructor's own). Raises :class:`PluginOptionsError` naming every problem.

    ``supplied`` names options the caller adds later itself (a reward's ``tasks``): they may
    be missing here, and a given one is not checked."""
    public = public_options(model)
    later = {public[n][0]: (Any, Field(None, alias=public[n][1].alias))
             for n in supplied if n in public}
    if later:
        model = create_model(model.__name__, __base__=model, **later)
    try:
        validated = model.model_validate(options)
    except ValidationError as exc:
        raise PluginOptionsError(f"invalid options for {what}: {_problems(exc, public)}",
                                 errors=exc.errors(include_url=False)) from None
    given = validated.model_fields_set
    return {name: getattr(validated, key) for name, (key, _) in public.items() if key in given}


def describe_options(model: type[BaseModel]) -> list[OptionInfo]:
    """The options of a model, in declaration order, for listings."""
    out = []
    for name, (_, f) in public_options(model).items():
        if f.default is not PydanticUndefined:
            default = f.default
        elif f.default_factory is not None:
            default = f.default_factory()  # type: ignore[call-arg]
        else:
            default = None
        out.append(OptionInfo(name=name, type=_type_name(f.annotation), required=f.is_required(),
                              default=default, description=f.description or ""))
    return out


def _type_name(annotation: Any) -> str:
    if annotation is Any:
        return "any"
    if isinstance(annotation, type) and not typing.get_args(annotation):
        return annotation.__name__
    return str(annotation).replace("typing.", "").replace("collections.abc.", "")
