"""Typed boundary models shared by every plugin.

All models are frozen pydantic models: a pipeline hands the same Task and Candidate to many
stages and workers, so nothing downstream may mutate them in place. They round-trip through JSON,
which is what the cache, the CLI and (later) distributed executors rely on.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Mapping, Sequence
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    PlainSerializer,
    ValidationError,
    field_validator,
    model_serializer,
    model_validator,
)

#: Characters allowed in a source file name. Files are materialised inside a run directory, so a
#: name must never be able to climb out of it or hide as a dot-file.
_SAFE_NAME_CHARS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")
#: A markdown fence opening a line: never Verilog (a backtick starts a directive name).
_FENCE_LINE = re.compile(r"^[ \t]*```", re.M)


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Verdict(StrEnum):
    """Outcome of validation. ``infra_error`` and ``timeout`` are never scored as a wrong design."""

    PASS = "pass"
    FAIL = "fail"  # the design is functionally wrong (or rejected as unsafe)
    ERROR = "error"  # it does not compile / elaborate / is unsupported by the tool
    TIMEOUT = "timeout"  # ran out of wall-clock time
    INFRA_ERROR = "infra_error"  # tool missing, sandbox failure: says nothing about the design

    @property
    def is_design_outcome(self) -> bool:
        """True when the verdict is a statement about the design rather than the infrastructure."""
        return self in (Verdict.PASS, Verdict.FAIL, Verdict.ERROR)


class SourceFile(_Frozen):
    """One text file (Verilog, testbench, data) addressed by a flat, sandbox-safe name."""

    name: str
    content: str

    @field_validator("name")
    @classmethod
    def _safe_name(cls, value: str) -> str:
        if (
            not value
            or value.startswith(".")
            or len(value) > 200
            or not set(value) <= _SAFE_NAME_CHARS
        ):
            raise ValueError(
                f"file name {value!r} is not a plain file name "
                "(letters, digits, '_', '.', '-'; no directories, not starting with '.')"
            )
        return value

    def digest(self) -> str:
        # surrogatepass: text that is not valid Unicode still gets a key (and a typed verdict).
        return hashlib.sha256(
            f"{self.name}\0{self.content}".encode("utf-8", "surrogatepass")).hexdigest()


class Port(_Frozen):
    name: str
    direction: Literal["input", "output", "inout"]
    width: int = 1
    signed: bool = False


class PassRule(_Frozen):
    """How to read the testbench's verdict from its output.

    ``auto`` recognises the common self-checking formats; ``regex`` lets a task declare its own
    pass and fail patterns.
    """

    kind: Literal["auto", "regex"] = "auto"
    pass_regex: str | None = None
    fail_regex: str | None = None

    @field_validator("pass_regex", "fail_regex")
    @classmethod
    def _linear_time(cls, pattern: str | None) -> str | None:
        """Patterns are judged with RE2 (linear time), so one RE2 cannot run (a backreference,
        lookaround) is refused when the rule is made: when its task loads, not mid-validation."""
        if pattern is not None:
            from rtlforge.core.untrusted import compile_regex

            compile_regex(pattern)  # UnboundedRegexError is a ValueError: pydantic reports it
        return pattern


def _read_files(paths: Sequence[str | Path]) -> tuple[SourceFile, ...]:
    files = []
    for path in map(Path, paths):
        try:
            files.append(SourceFile(name=path.name, content=path.read_text(encoding="utf-8")))
        except UnicodeDecodeError as exc:
            raise ValueError(f"{path} is not a UTF-8 text file") from exc
    return tuple(files)


class Task(_Frozen):
    """A design problem: what to build and how to check it."""

    id: str
    spec: str
    top: str
    ports: tuple[Port, ...] = ()
    testbench: tuple[SourceFile, ...] = ()
    support: tuple[SourceFile, ...] = ()  # data files, shared modules the testbench reads
    golden: tuple[SourceFile, ...] = ()
    testbench_top: str | None = None  # module the simulator elaborates; None = infer
    cocotb_module: SourceFile | None = None  # a cocotb test module, when the task uses cocotb
    pass_rule: PassRule = PassRule()
    category: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _testbench_top_declared(self) -> Task:
        """A ``testbench_top`` no testbench file declares is the task author's mistake: said
        when the task is made, not later as an elaboration error blamed on the design."""
        top = self.testbench_top
        if top and self.testbench and not any(
                re.search(rf"\b(?:macro)?module\s+(?:(?:automatic|static)\s+)?{re.escape(top)}\b",
                          f.content) for f in self.testbench):
            raise ValueError(f"testbench_top {top!r} is not a module of the testbench files "
                             f"({', '.join(f.name for f in self.testbench)})")
        return self

    @classmethod
    def from_files(cls, top: str, *, testbench: Sequence[str | Path] = (),
                   support: Sequence[str | Path] = (), golden: Sequence[str | Path] = (),
                   spec: str = "", id: str | None = None, **fields: Any) -> Task:
        """A task from files on disk (UTF-8), each under its own name: ``top`` is the module
        the design must define, ``testbench`` a self-checking testbench (without one only lint
        and synthesis can run), ``support`` files it reads, ``golden`` a reference design.
        ``id`` defaults to ``top``; other :class:`Task` fields (``testbench_top``,
        ``pass_rule``, ``ports``, ``category``...) pass through by name."""
        return cls(id=id or top, spec=spec, top=top, testbench=_read_files(testbench),
                   support=_read_files(support), golden=_read_files(golden), **fields)

    def digest(self) -> str:
        """Stable content hash: what the verdict depends on (not the spec prose)."""
        parts = {
            "top": self.top,
            "tb": [f.digest() for f in self.testbench],
            "support": [f.digest() for f in self.support],
            "tb_top": self.testbench_top,
            "cocotb": self.cocotb_module.digest() if self.cocotb_module else None,
            "rule": self.pass_rule.model_dump(),
        }
        return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


class Provenance(_Frozen):
    """Where a candidate came from; carried through reports so results stay traceable."""

    generator: str | None = None
    model: str | None = None
    prompt_id: str | None = None
    sample_index: int | None = None
    extra: dict[str, Any] = Field(default_factory=dict)


def is_fenced_answer(text: str) -> bool:
    """Whether ``text`` has a markdown fence line: an LLM answer, never Verilog source."""
    return _FENCE_LINE.search(text) is not None


def _refuse_fenced(text: str, where: str) -> None:
    if is_fenced_answer(text):
        raise ValueError(f"{where} holds a markdown code fence (```): it looks like an LLM "
                         "answer, not Verilog; take the Verilog out of it with "
                         "Candidate.from_completion(answer)")


class Candidate(_Frozen):
    """A generated design: one or more source files plus where it came from."""

    files: tuple[SourceFile, ...]
    top: str | None = None  # overrides Task.top when set
    task_id: str | None = None
    provenance: Provenance = Provenance()

    @field_validator("files")
    @classmethod
    def _non_empty_unique(cls, files: tuple[SourceFile, ...]) -> tuple[SourceFile, ...]:
        if not files:
            raise ValueError("a candidate needs at least one source file")
        names = [f.name for f in files]
        if len(set(names)) != len(names):
            raise ValueError(f"duplicate file names in candidate: {names}")
        return files

    @classmethod
    def from_source(cls, source: str, name: str = "design.v", **kwargs: Any) -> Candidate:
        """A candidate of one file holding ``source`` as it is (Verilog, not an LLM answer).

        A markdown fence line is a caller's mistake, not the design's: it is a ``ValueError``
        pointing at :meth:`from_completion`, instead of a security verdict on a stray backtick.
        """
        _refuse_fenced(source, "the source")
        return cls(files=(SourceFile(name=name, content=source),), **kwargs)

    @classmethod
    def from_completion(cls, completion: str, name: str = "design.v",
                        **kwargs: Any) -> Candidate:
        """A candidate of the Verilog an LLM answer holds (fenced blocks, ``<answer>`` tags,
        VerilogEval's ``[BEGIN]``/``[DONE]``, prose around code): the extraction every consumer
        of generations uses (:func:`rtlforge.core.extract.extract_verilog`). An answer without a
        complete module raises :class:`~rtlforge.core.errors.ExtractionError`."""
        from rtlforge.core.extract import extract_verilog

        return cls(files=(SourceFile(name=name, content=extract_verilog(completion)),), **kwargs)

    @classmethod
    def from_file(cls, path: str | Path, **kwargs: Any) -> Candidate:
        """A candidate of one file, keeping its real name (feedback then points at it)."""
        return cls.from_files([path], **kwargs)

    @classmethod
    def from_files(cls, paths: Sequence[str | Path], **kwargs: Any) -> Candidate:
        """A candidate of several files under their own names (UTF-8 Verilog; ValueError
        otherwise, also for a file holding a fenced LLM answer, as :meth:`from_source`)."""
        files = _read_files(paths)
        for path, file in zip(paths, files, strict=True):
            _refuse_fenced(file.content, str(path))
        return cls(files=files, **kwargs)

    def digest(self) -> str:
        return hashlib.sha256(
            json.dumps([f.digest() for f in self.files] + [self.top]).encode()
        ).hexdigest()


class Mismatch(_Frozen):
    """One failing check a testbench reported, as structured as its printout allows.

    Values are kept as printed (``"4'b1010"``, ``"12"``); ``time`` carries its unit when the
    testbench's timescale says it, ``cycle`` is a vector, cycle or test index, and ``count`` how
    many times this signal failed, when the testbench counts. ``raw`` is the line itself.
    """

    signal: str | None = None
    time: str | None = None
    cycle: int | None = None
    expected: str | None = None
    observed: str | None = None
    inputs: dict[str, str] = Field(default_factory=dict)
    count: int | None = None
    raw: str = ""


class Feedback(_Frozen):
    """One structured finding, meant for refinement agents as much as for people."""

    category: str
    message: str
    file: str | None = None
    line: int | None = None
    context: str | None = None  # a few numbered source lines around ``line``
    hint: str | None = None
    stage: str | None = None
    severity: Literal["error", "warning", "info"] = "error"
    mismatches: tuple[Mismatch, ...] = ()  # the first failing checks of a wrong design


class ToolInfo(_Frozen):
    name: str
    version: str | None = None
    path: str | None = None


class ToolSpec(_Frozen):
    """An external executable a plugin runs, declared by that plugin.

    The runner looks it up on PATH; ``install_hint`` is what a missing tool's error says, and
    ``version_args`` is how to ask its version (recorded in results and cache keys). A spec
    without ``version_args`` is never run just to ask: that could execute an untrusted binary.
    """

    name: str  # executable name looked up on PATH, or a path
    install_hint: str | None = None
    version_args: tuple[str, ...] | None = None
    #: Regex whose first group (or whole match) is the version; None: the first output line.
    version_pattern: str | None = None

    @property
    def hint(self) -> str:
        return self.install_hint or f"Install {self.name!r} and put it on PATH."

    def using(self, executable: str) -> ToolSpec:
        """The same tool run from another executable (a configured path or name)."""
        return self if executable == self.name else self.model_copy(update={"name": executable})

    def parse_version(self, output: str) -> str | None:
        text = output.strip()
        if self.version_pattern is None:
            return text.splitlines()[0][:200] if text else None
        found = re.search(self.version_pattern, text)
        if found is None:
            return None
        return (found.group(1) if found.groups() else found.group(0))[:200]


#: The flat PPA keys of records, datasets and summaries, in their order (mW, ns, um^2).
PPA_KEYS = ("power", "delay", "area")
#: The estimators' unit-carrying names of the same three fields.
PPA_UNIT_KEYS = {"power": "power_mw", "delay": "delay_ns", "area": "area_um2"}


def _ppa_field(short: str) -> Any:
    # Flat data spells a PPA key short ("power"), estimators with its unit ("power_mw"): both
    # validate the one field (the short name leads in error messages).
    return Field(validation_alias=AliasChoices(short, PPA_UNIT_KEYS[short]))


def _problems(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(map(str, e['loc'])) or 'value'}: {e['msg']}"
                     for e in exc.errors())


class PPAResult(_Frozen):
    """The PPA of one measured design: the one PPA model of rtlforge.

    Ways in: the fields by either name (``power`` or ``power_mw``...), or :meth:`from_flat` for
    a flat record that may hold no PPA. Way out: :meth:`triple`, the flat form every record,
    dataset column and objective vector uses. ``cells`` and ``liberty`` are optional: a PPA
    read back from a record does not carry them.
    """

    area_um2: float = _ppa_field("area")
    delay_ns: float = _ppa_field("delay")
    power_mw: float = _ppa_field("power")
    cells: int | None = None
    liberty: str | None = None
    tools: tuple[ToolInfo, ...] = ()
    details: dict[str, Any] = Field(default_factory=dict)

    @classmethod
    def from_flat(cls, value: Any, *, what: str = "PPA", partial_is_absent: bool = False,
                  ) -> PPAResult | None:
        """The PPA of a flat value: None, JSON text, a PPA, or a mapping holding the three
        numbers (short or unit names) among other keys (``code``, ``ratio``...), which are
        ignored. No number at all is no PPA; some but not all is a ``ValueError`` naming
        ``what``, or no PPA with ``partial_is_absent`` (a failed design's record)."""
        if isinstance(value, str | bytes):
            from rtlforge.core.untrusted import load_json

            value = load_json(value) if value.strip() else None
        if value is None or isinstance(value, PPAResult):
            return value
        if not isinstance(value, Mapping):
            raise ValueError(f"{what} {value!r} is not a PPA mapping {{power, delay, area}}")
        names = {*PPA_KEYS, *PPA_UNIT_KEYS.values()}
        numbers = {k: v for k, v in value.items() if k in names and v is not None}
        if not numbers or (partial_is_absent and len(numbers) < len(PPA_KEYS)):
            return None
        if value.get("cells") is not None:
            numbers["cells"] = value["cells"]
        try:
            return cls.model_validate(numbers)
        except ValidationError as exc:
            raise ValueError(f"{what} {dict(value)!r} is not a valid PPA: {_problems(exc)}",
                             ) from exc

    def triple(self) -> dict[str, float]:
        """``{"power", "delay", "area"}``: the flat form records and reward columns hold."""
        return {"power": self.power_mw, "delay": self.delay_ns, "area": self.area_um2}

    @property
    def finite(self) -> bool:
        return all(math.isfinite(v) for v in (self.power_mw, self.delay_ns, self.area_um2))

    @property
    def valid(self) -> bool:
        """Every number finite and > 0: anything else is a broken report (never an infinitely
        good design), so it earns no PPA reward and has no objective vector."""
        return all(math.isfinite(v) and v > 0 for v in (self.power_mw, self.delay_ns,
                                                          self.area_um2))


#: A PPA that serialises to its flat triple: how records and rollouts store one.
FlatPPA = Annotated[PPAResult, PlainSerializer(PPAResult.triple)]


class PPAMeasure(_Frozen):
    """The outcome of measuring one design: its PPA, or why it has none (never both).

    ``infra`` marks an error that says nothing about the design
    (:func:`~rtlforge.core.errors.is_infra`): the measurement is missing, not bad. Serialised
    flat, ``{"power", "delay", "area", "cells", "error"}`` plus ``"infra": true`` on an
    infrastructure error: the shape eval summaries and explore archives have always had.
    """

    ppa: PPAResult | None = None
    error: str | None = None
    infra: bool = False

    @model_validator(mode="before")
    @classmethod
    def _from_flat(cls, value: Any) -> Any:
        if not isinstance(value, Mapping) or "ppa" in value:
            return value
        unknown = set(value) - {*PPA_KEYS, "cells", "error", "infra"}
        if unknown:
            raise ValueError(f"unknown PPA keys {sorted(unknown)}")
        rest = {k: value[k] for k in ("error", "infra") if k in value}
        return {"ppa": PPAResult.from_flat(value, what="PPA measurement"), **rest}

    @model_validator(mode="after")
    def _one_of(self) -> PPAMeasure:
        if self.ppa is not None and self.error is not None:
            raise ValueError("a PPA measurement has either numbers or an error, not both")
        return self

    @model_serializer(mode="plain")
    def _to_flat(self) -> dict[str, Any]:
        ppa = self.ppa
        flat: dict[str, Any] = {**(ppa.triple() if ppa else dict.fromkeys(PPA_KEYS)),
                                "cells": ppa.cells if ppa else None, "error": self.error}
        if self.infra:  # only then: every record written before the flag reads back the same
            flat["infra"] = True
        return flat

    @property
    def ok(self) -> bool:
        return self.ppa is not None

    @property
    def power(self) -> float | None:  # mW
        return self.ppa.power_mw if self.ppa else None

    @property
    def delay(self) -> float | None:  # ns
        return self.ppa.delay_ns if self.ppa else None

    @property
    def area(self) -> float | None:  # um^2
        return self.ppa.area_um2 if self.ppa else None

    @property
    def cells(self) -> int | None:
        return self.ppa.cells if self.ppa else None

    def triple(self) -> dict[str, float] | None:
        return self.ppa.triple() if self.ppa is not None else None


def is_vector(value: Any) -> bool:
    """Shaped like an objective vector: three items, not text or a mapping."""
    return (not isinstance(value, str | bytes | Mapping) and hasattr(value, "__len__")
            and hasattr(value, "__iter__") and len(value) == len(PPA_KEYS))


class Objectives(tuple[float, float, float]):
    """A design's objective vector: ``(P_gold/P, D_gold/D, A_gold/A)``, every ratio maximised.

    A tuple, so it goes to numpy and compares like the tuples and JSON lists that held it
    before (a list of the same numbers is equal too). Way in: :meth:`parse` (a 3-sequence,
    array, or a mapping's ``"objectives"`` or ``"ratio"``, the two spellings histories used)
    or :meth:`of` (a PPA over its golden's); way out: a JSON list. Old records may hold
    non-finite ratios: reading keeps them, and the hypervolume code refuses them.
    """

    def __new__(cls, values: Any) -> Objectives:
        if hasattr(values, "tolist"):
            values = values.tolist()
        if not is_vector(values) or any(isinstance(v, bool) for v in values):
            raise ValueError(f"objective vector {values!r} is not 3 numbers")
        return super().__new__(cls, (float(v) for v in values))

    def __eq__(self, other: object) -> bool:
        return tuple.__eq__(self, tuple(other) if isinstance(other, list) else other)

    __hash__ = tuple.__hash__

    @classmethod
    def parse(cls, value: Any) -> Objectives | None:
        """None, a 3-sequence, or a mapping's ``"objectives"`` (or legacy ``"ratio"``)."""
        if isinstance(value, Mapping):
            value = value.get("objectives", value.get("ratio"))
        return None if value is None else cls(value)

    @classmethod
    def of(cls, ppa: PPAResult | None, golden: PPAResult | None) -> Objectives | None:
        """``golden / ppa`` per objective; None unless both are valid and every ratio is finite
        and > 0 (so a zero is refused before any division and the ratio needs no ``eps``)."""
        if ppa is None or golden is None or not (ppa.valid and golden.valid):
            return None
        gen, gold = ppa.triple(), golden.triple()
        out = tuple(gold[k] / gen[k] for k in PPA_KEYS)
        return cls(out) if all(math.isfinite(v) and v > 0 for v in out) else None

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
        from pydantic_core import core_schema

        return core_schema.no_info_plain_validator_function(
            lambda v: v if isinstance(v, Objectives) else cls(v),
            serialization=core_schema.plain_serializer_function_ser_schema(
                list, return_schema=core_schema.list_schema(core_schema.float_schema())))


class HistoryEntry(_Frozen):
    """What one earlier circuit contributes to a history: its source, its PPA or objective
    vector, and its verdict (and first message) when it did not pass.

    Sequential prompts render it, the HVC reward scores against it, reconstruction writes it
    to datasets. Way in (``model_validate``): this model's fields, a PPA, a bare objective
    vector, or the flat mapping ``{code, power, delay, area, ratio}`` of dataset columns
    (``objectives`` for ``ratio``, ``source`` for ``code`` and unit-named PPA keys too; other
    keys are ignored, as dataset rows carry their own). An entry with its code but without all
    three numbers has no PPA. Way out (``model_dump``): that flat mapping, with ``iteration``,
    ``verdict`` and ``message`` only when set (never ``cells``: a checkpoint keeps the triple).
    """

    source: str | None = Field(None, validation_alias=AliasChoices("source", "code"))
    iteration: int | None = None
    ppa: PPAResult | None = None
    objectives: Objectives | None = None
    verdict: Verdict = Verdict.PASS
    message: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _flat(cls, entry: Any) -> Any:
        neither = (f"history entry {entry!r} is neither a PPA mapping {{power, delay, area}} "
                   "nor a 3-element objective vector")
        if isinstance(entry, PPAResult):
            return {"ppa": entry}
        if is_vector(entry) or hasattr(entry, "tolist"):
            return {"objectives": entry}
        if not isinstance(entry, Mapping):
            raise ValueError(neither)
        code = next((entry[k] for k in ("source", "code") if isinstance(entry.get(k), str)),
                    None)
        out = {k: entry[k] for k in ("iteration", "verdict", "message") if k in entry}
        try:
            objectives = Objectives.parse(entry)
        except ValueError:
            raise ValueError(neither) from None
        ppa = entry["ppa"] if "ppa" in entry else PPAResult.from_flat(
            entry, what="history entry", partial_is_absent=code is not None)
        if code is None and ppa is None and objectives is None:
            raise ValueError(neither)
        return {**out, "source": code, "ppa": ppa, "objectives": objectives}

    @model_serializer(mode="plain")
    def _to_flat(self) -> dict[str, Any]:
        ppa = self.ppa
        flat: dict[str, Any] = {"code": self.source,
                                **(ppa.triple() if ppa else dict.fromkeys(PPA_KEYS)),
                                "ratio": list(self.objectives) if self.objectives else None}
        # no cells: a dataset row must read the same after a checkpoint, which keeps the triple
        extra = {"iteration": self.iteration,
                 "verdict": None if self.verdict is Verdict.PASS else self.verdict.value,
                 "message": self.message}
        return {**flat, **{k: v for k, v in extra.items() if v is not None}}

    @property
    def code(self) -> str | None:
        return self.source

    @property
    def has_ppa(self) -> bool:
        return self.ppa is not None and self.ppa.finite


class StageResult(_Frozen):
    name: str
    verdict: Verdict
    seconds: float = 0.0
    feedback: tuple[Feedback, ...] = ()
    tools: tuple[ToolInfo, ...] = ()
    log: str = ""  # truncated tool output, for humans
    metrics: dict[str, Any] = Field(default_factory=dict)  # e.g. cell count, latches
    #: Files a stage leaves for the user when asked (``wave.vcd`` of ``iverilog-sim(wave=True)``).
    files: tuple[SourceFile, ...] = ()


class ValidationReport(_Frozen):
    """The result of running a pipeline on one candidate."""

    verdict: Verdict
    stages: tuple[StageResult, ...] = ()
    task_id: str | None = None
    candidate_digest: str | None = None
    seconds: float = 0.0
    cached: bool = False

    @property
    def feedback(self) -> tuple[Feedback, ...]:
        return tuple(fb for stage in self.stages for fb in stage.feedback)

    @property
    def tools(self) -> tuple[ToolInfo, ...]:
        seen: dict[str, ToolInfo] = {}
        for stage in self.stages:
            for tool in stage.tools:
                seen.setdefault(tool.name, tool)
        return tuple(seen.values())

    @property
    def passed(self) -> bool:
        return self.verdict is Verdict.PASS

    def to_summary(self) -> dict[str, Any]:
        """The stable JSON shape the CLI prints (used by tooling outside this repo)."""
        return {
            "verdict": self.verdict.value,
            "task_id": self.task_id,
            "cached": self.cached,
            "seconds": round(self.seconds, 4),
            "stages": [
                {
                    "name": s.name,
                    "verdict": s.verdict.value,
                    "seconds": round(s.seconds, 4),
                    "metrics": s.metrics,
                }
                for s in self.stages
            ],
            "feedback": [
                {
                    "category": f.category,
                    "message": f.message,
                    "file": f.file,
                    "line": f.line,
                    "context": f.context,
                    "hint": f.hint,
                    "stage": f.stage,
                    "severity": f.severity,
                    "mismatches": [m.model_dump() for m in f.mismatches],
                }
                for f in self.feedback
            ],
            "tools": [t.model_dump() for t in self.tools],
        }
