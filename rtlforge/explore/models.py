"""The typed data of an explore run: methods, events, results and one explored candidate.

:class:`ExploreRecord` is the per-candidate record the archive keeps (``ArchiveEntry.record``)
and every reader of a run consumes: its JSON form (:meth:`ExploreRecord.to_json_dict`) has
exactly the keys ``records.jsonl``, ``candidates.jsonl``, the report and the SFT harvester
have always read, so runs written before the model existed still load.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict

from rtlforge.core.interfaces import Generator, SamplingParams
from rtlforge.core.models import (
    Feedback,
    FlatPPA,
    Objectives,
    PPAMeasure,
    ValidationReport,
    Verdict,
)
from rtlforge.evaluation.protocol import EvalProtocol, MethodProtocol, preset
from rtlforge.generation.prompts import PromptTemplate, load_template

__all__ = [
    "HISTORY_POLICIES",
    "Cell",
    "ExploreEvent",
    "ExploreRecord",
    "ExploreResult",
    "HistoryPolicy",
    "Method",
    "SimilarityScore",
    "SimilarityScorer",
    "format_request_id",
    "parse_request_id",
]

HistoryPolicy = Literal["passing-only", "all", "front"]
HISTORY_POLICIES: tuple[str, ...] = ("passing-only", "all", "front")
Cell = tuple[str, str, int]  # (method, task, trial)


@dataclass(frozen=True)
class Method:
    """One way of generating: a generator, a prompt template and its settings.

    ``history`` decides which earlier circuits the prompt shows: ``"all"`` (default, the paper's
    section 5.3: passing circuits with their PPA and failing ones with their verdict and first
    feedback message), ``"passing-only"`` (shorter prompts) or ``"front"`` (only the trial's
    current Pareto front). ``history_limit`` keeps the most recent entries (None, the default
    and the paper's: the whole history). ``sampling`` defaults to the paper's temperature 0.5.
    HVC is always scored against every passing circuit of the trial, whatever the policy.
    ``select`` names labels (``method``, ``trial``, ``iteration``, 1-based) each request carries
    in its ``metadata``: a replaying generator uses them to pick the recording of exactly that
    method, trial and iteration. ``metadata`` is added to every request as is.
    ``generator_options`` are the options the generator was built with: a generator does not
    keep them, and a run directory is only resumed with the same ones (secret-looking values
    are stored as a digest).
    """

    name: str
    generator: Generator
    template: str | Path | PromptTemplate = "pareto"
    sampling: SamplingParams = field(default_factory=lambda: SamplingParams(temperature=0.5))
    history: HistoryPolicy = "all"
    history_limit: int | None = None
    select: tuple[str, ...] = ()
    metadata: Mapping[str, Any] = field(default_factory=dict)
    generator_options: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        bad = sorted(set(self.select) - {"method", "trial", "iteration"})
        if bad:
            raise ValueError(f"select takes method, trial and iteration, not {bad}")
        if not self.name or "/" in self.name:
            raise ValueError(f"method name {self.name!r} must be non-empty without '/'")
        if self.history not in HISTORY_POLICIES:
            raise ValueError(f"history policy must be one of {HISTORY_POLICIES}, "
                             f"not {self.history!r}")
        if self.history_limit is not None and self.history_limit < 1:
            raise ValueError("history_limit must be >= 1 or None")
        object.__setattr__(self, "template", load_template(self.template))

    @property
    def prompt_template(self) -> PromptTemplate:
        assert isinstance(self.template, PromptTemplate)
        return self.template

    @classmethod
    def from_protocol(cls, name: str, generator: Generator,
                      protocol: str | EvalProtocol = "paper", **overrides: Any) -> Method:
        """A method that follows ``protocol`` (a preset name or an :class:`EvalProtocol`): its
        temperature, samples per iteration, history policy and limit and template; keyword
        ``overrides`` (``template=``, ``history=``, ``sampling=``, ``select=``...) win."""
        proto = preset(protocol).method
        base: dict[str, Any] = {
            "template": proto.template, "history": proto.history,
            "history_limit": proto.history_limit,
            "sampling": SamplingParams(n=proto.samples, temperature=proto.temperature)}
        return cls(name=name, generator=generator, **{**base, **overrides})

    def protocol(self) -> MethodProtocol:
        """What this method's prompts and sampling follow (compared with the paper's)."""
        return MethodProtocol(temperature=self.sampling.temperature, samples=self.sampling.n,
                              history=self.history, history_limit=self.history_limit,
                              template=self.prompt_template.name)


@dataclass(frozen=True)
class ExploreEvent:
    """Progress report. ``kind``: start, resumed, generate_start, generate_end,
    evaluate_start, evaluate_end, finish. ``time`` is ``time.monotonic()``."""

    kind: str
    method: str | None = None
    task: str | None = None
    trial: int | None = None
    iteration: int | None = None
    data: dict[str, Any] = field(default_factory=dict)
    time: float = field(default_factory=time.monotonic)


@dataclass(frozen=True)
class ExploreResult:
    run_dir: Path
    summary: dict[str, Any]
    paths: dict[str, Path]
    candidates: int  # in the archive, after this run
    evaluated: int  # groups evaluated by this run (not resumed)
    resumed: int  # groups found complete in the archive
    #: groups the generator answered with nothing (a replay without that task's recording),
    #: by method and task: they hold no candidate, so a silent gap would read as a bad method
    empty_groups: dict[str, dict[str, int]] = field(default_factory=dict)
    #: cells ("method/task/trial") stopped by an infrastructure failure, with why: their group
    #: was not stored, so rerunning the run directory retries it
    held: dict[str, str] = field(default_factory=dict)


class SimilarityScore(Protocol):
    """What explore keeps of an AST-similarity score (the ``ast-similarity`` reward's)."""

    @property
    def similarity(self) -> float | None: ...

    @property
    def status(self) -> str: ...

    @property
    def backend(self) -> str | None: ...


class SimilarityScorer(Protocol):
    """A reward that explains its scores, e.g. ``ast-similarity``."""

    def score_detailed(self, prompts: Sequence[str], completions: Sequence[Any],
                       **columns: Sequence[Any]) -> Sequence[SimilarityScore]: ...


class ExploreRecord(BaseModel):
    """One explored candidate: where it came from, how it fared, and its PPA and HVC.

    ``objectives`` (maximised, ``golden / candidate``) and ``hvc`` (its hypervolume
    contribution over the trial's earlier circuits) are None when the candidate failed or its
    PPA could not be measured. ``explore`` marks explore records among other archive entries.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    explore: int = 1
    key: str
    method: str
    task: str
    trial: int
    iteration: int
    sample: int
    verdict: Verdict
    source: str | None = None  # the extracted Verilog, None when nothing could be extracted
    completion: str | None = None  # the raw generation
    generator: str | None = None
    message: str | None = None  # the first feedback message of a candidate that did not pass
    feedback: list[Feedback] = []
    report: ValidationReport
    ppa: PPAMeasure | None = None
    golden: FlatPPA | None = None  # stored as the golden's {"power", "delay", "area"}
    objectives: Objectives | None = None
    hvc: float | None = None
    ast_similarity: float | None = None
    ast_status: str | None = None
    ast_backend: str | None = None
    latency_s: float | None = None
    finish_reason: str | None = None

    @staticmethod
    def make_key(method: str, task: str, trial: int, iteration: int, sample: int) -> str:
        """The record's unique key, as stored since the first explore runs."""
        return json.dumps([method, task, trial, iteration, sample])

    @property
    def group(self) -> tuple[str, str, int, int]:
        """``(method, task, trial, iteration)``: the group this candidate was sampled in."""
        return self.method, self.task, self.trial, self.iteration

    @property
    def passed(self) -> bool:
        return self.verdict == Verdict.PASS

    def to_json_dict(self) -> dict[str, Any]:
        """The plain-JSON record (what the archive stores and the report files hold)."""
        return self.model_dump(mode="json")


def format_request_id(method: str, task: str, trial: int, iteration: int) -> str:
    """``explore/<method>/<task>/t<trial>/i<iteration>``: lets a replay generator find its
    recorded sample (task ids may contain ``/``; :func:`parse_request_id` splits safely)."""
    return f"explore/{method}/{task}/t{trial}/i{iteration}"


def parse_request_id(request_id: str | None) -> tuple[str, str, int, int] | None:
    """``(method, task, trial, iteration)`` of an explore request id, None for any other id."""
    if not request_id or not request_id.startswith("explore/"):
        return None
    head, _, rest = request_id[len("explore/"):].partition("/")
    parts = rest.rsplit("/", 2)
    if not head or len(parts) != 3 or not parts[1][1:].isdigit() or not parts[2][1:].isdigit():
        return None
    if parts[1][0] != "t" or parts[2][0] != "i":
        return None
    return head, parts[0], int(parts[1][1:]), int(parts[2][1:])
