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
from collections.abc import Sequence
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, field_validator

#: Characters allowed in a source file name. Files are materialised inside a run directory, so a
#: name must never be able to climb out of it or hide as a dot-file.
_SAFE_NAME_CHARS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")


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
        return cls(files=(SourceFile(name=name, content=source),), **kwargs)

    @classmethod
    def from_file(cls, path: str | Path, **kwargs: Any) -> Candidate:
        """A candidate of one file, keeping its real name (feedback then points at it)."""
        return cls.from_files([path], **kwargs)

    @classmethod
    def from_files(cls, paths: Sequence[str | Path], **kwargs: Any) -> Candidate:
        """A candidate of several files under their own names (UTF-8; ValueError otherwise)."""
        files = []
        for path in map(Path, paths):
            try:
                files.append(SourceFile(name=path.name, content=path.read_text(encoding="utf-8")))
            except UnicodeDecodeError as exc:
                raise ValueError(f"{path} is not a UTF-8 text file") from exc
        return cls(files=tuple(files), **kwargs)

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


def _ppa_field(short: str, long: str) -> object:
    # Datasets and records spell PPA keys short ({"power", "delay", "area"}); estimators use
    # the unit-carrying names. Both are the same field (the short one leads in error messages).
    return Field(validation_alias=AliasChoices(short, long))


class PPAResult(_Frozen):
    """The PPA of one measured design: the one PPA model of rtlforge.

    Validates from the estimator's names (``power_mw``...) or the short keys datasets and
    records use (``power``, ``delay``, ``area``). ``cells`` and ``liberty`` are optional because
    a PPA read back from a record or a dataset column does not carry them.
    """

    area_um2: float = _ppa_field("area", "area_um2")  # type: ignore[assignment]
    delay_ns: float = _ppa_field("delay", "delay_ns")  # type: ignore[assignment]
    power_mw: float = _ppa_field("power", "power_mw")  # type: ignore[assignment]
    cells: int | None = None
    liberty: str | None = None
    tools: tuple[ToolInfo, ...] = ()
    details: dict[str, Any] = Field(default_factory=dict)

    def triple(self) -> dict[str, float]:
        """``{"power", "delay", "area"}``: the shape objective vectors and reward columns use."""
        return {"power": self.power_mw, "delay": self.delay_ns, "area": self.area_um2}

    @property
    def finite(self) -> bool:
        return all(math.isfinite(v) for v in (self.power_mw, self.delay_ns, self.area_um2))


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
