"""The six built-in plugin interfaces of the core, and the runner they talk to tools through.

Each is an ABC derived from :class:`Plugin` (a class-level ``name`` and optional ``Options``);
plugins register the class (or a factory returning an instance) through the hooks in
:mod:`rtlforge.core.hookspecs`. What a caller may rely on is declared here, with defaults, rather
than probed for: a validator's ``order`` and ``toolchain``, a reward's ``needs_ppa`` and
``score_detailed``, an estimator's ``close``, a trainer's ``config_class`` and ``from_config``.
Interfaces are batch-first where a batch is the natural unit (generation, rewards, PPA in RL
loops), and every method that touches an external tool reports infrastructure failures distinctly
from verdicts about the design. :data:`BUILTIN_KINDS` declares these six kinds to the plugin host
the same way a plugin declares a new one (the seventh built-in kind, executors, is declared next
to its interface in :mod:`rtlforge.core.executor`).
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal, Protocol, Self

from pydantic import BaseModel, ConfigDict, Field

from rtlforge.core.hookspecs import PluginKind

# PPAResult is re-exported here (it was defined in this module): the model is in core.models.
from rtlforge.core.models import (
    Candidate,
    PPAResult,
    SourceFile,
    StageResult,
    Task,
    ToolInfo,
    ToolSpec,
    Verdict,
)

# --------------------------------------------------------------------------------------------
# Runner: what validators and estimators need from the sandbox
# --------------------------------------------------------------------------------------------

#: Who wrote a file handed to :meth:`Runner.put` (decides how strictly the gate checks it).
FileRole = Literal["design", "testbench", "netlist", "trusted"]


class ToolResult(Protocol):
    """One finished tool run (``rtlforge.sandbox.runner.ToolRun`` is the implementation)."""

    @property
    def returncode(self) -> int | None: ...
    @property
    def stdout(self) -> str: ...
    @property
    def stderr(self) -> str: ...
    @property
    def seconds(self) -> float: ...
    @property
    def timed_out(self) -> bool: ...
    @property
    def output_overflow(self) -> bool: ...
    @property
    def tool(self) -> ToolInfo | None: ...
    @property
    def ok(self) -> bool: ...
    @property
    def output(self) -> str: ...


class Runner(Protocol):
    """The sandbox as plugins see it; ``rtlforge.sandbox.runner.SandboxRunner`` satisfies it.

    Declared here so the interfaces need nothing outside the core: tools run only inside a
    :meth:`workspace`, files get in only through :meth:`put` (the security gate), and
    long-lived tools (an interactive ``sta``) start through :meth:`spawn` under the same jail.
    """

    @property
    def limits(self) -> Any: ...  # the default per-run limits (``sandbox.runner.Limits``)

    def workspace(self, prefix: str = ...) -> AbstractContextManager[Path]: ...

    def put(self, workdir: str | Path, files: Sequence[SourceFile], *, role: FileRole,
            readable: Iterable[str] | None = None,
            rewrite: Callable[[SourceFile], str] | None = None) -> tuple[SourceFile, ...]: ...

    def run(self, argv: Sequence[str], cwd: str | Path, *, timeout: float | None = None,
            limits: Any = None, env: Mapping[str, str] | None = None, stdin: str | None = None,
            ro_paths: Sequence[str | Path] = (), tool: ToolSpec | None = None) -> ToolResult: ...

    def spawn(self, argv: Sequence[str], cwd: str | Path, *, limits: Any = None,
              ro_paths: Sequence[str | Path] = (), merge_stderr: bool = True,
              tool: ToolSpec | None = None) -> Any: ...


# --------------------------------------------------------------------------------------------
# Plugin
# --------------------------------------------------------------------------------------------


class Plugin(ABC):
    """What every plugin class declares: its registered ``name`` and its ``Options``.

    ``Options`` is a pydantic model (``extra="forbid"``, e.g. a subclass of
    ``rtlforge.core.options.PluginOptions``) that ``PluginHost.create`` validates keyword
    options against. Left as None, the model is derived from what the class already declares:
    a dataclass's fields, or the keyword parameters of ``__init__``.
    """

    name: ClassVar[str]
    Options: ClassVar[type[BaseModel] | None] = None


# --------------------------------------------------------------------------------------------
# Validator
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ValidationContext:
    """What one validation stage sees.

    ``workdir`` is a private run directory that already holds the candidate's files, the task's
    testbench and support files, all security-checked. Every tool must run through ``runner``,
    and files a stage adds must go in through ``runner.put`` (anything else is gated as
    untrusted before the next tool starts). ``artifacts`` is shared by the stages of one
    validation, so a build one stage made can serve the next (Icarus compiles once for lint and
    simulation).
    """

    task: Task
    candidate: Candidate
    workdir: Path
    runner: Runner
    timeout: float = 60.0
    options: dict[str, Any] = field(default_factory=dict)
    artifacts: dict[Any, Any] = field(default_factory=dict)
    #: The testbench's module names as the tools see them in this run (original -> per-run
    #: name; see ``rtlforge.eda.verdicts.testbench_renames``). Anything that names a testbench
    #: module to a tool (``-s``, ``--top-module``, a cocotb toplevel) goes through
    #: :meth:`tool_name`; the pipeline maps the per-run names back in what the author sees.
    testbench_names: Mapping[str, str] = field(default_factory=dict)
    #: This run's verdict marker (``rtlforge.eda.verdicts.new_nonce``): the testbench's prints
    #: are bracketed by it, so only text between the markers is the testbench's (None: the
    #: testbench was not instrumented, e.g. a validator driven outside the pipeline).
    nonce: str | None = None

    @property
    def top(self) -> str:
        return self.candidate.top or self.task.top

    def tool_name(self, module: str) -> str:
        """The name a tool knows the task's module ``module`` by in this run."""
        return self.testbench_names.get(module, module)

    @property
    def design_files(self) -> list[str]:
        return [f.name for f in self.candidate.files]

    @property
    def testbench_files(self) -> list[str]:
        return [f.name for f in self.task.testbench]


class Validator(Plugin):
    """One stage of the validation pipeline (lint, simulate, synthesise, ...).

    ``order`` places the validator in a pipeline (ascending; equal orders keep the order they
    were given in). The built-ins are spaced so a third-party check fits between them: lint 100,
    simulate 200, synthesise 300; the default, 400, runs after them. ``stage`` is a label
    (``lint``, ``simulate``, ``synth`` or anything else) and ``toolchain`` names the tool family
    (``icarus``, ``verilator``, ``yosys``): ``Pipeline.build`` picks its lint, simulation and
    synthesis validators by the two, so it names no tool. ``needs_testbench`` lets the pipeline
    skip a stage for tasks without one instead of failing the design.
    """

    stage: ClassVar[str] = "custom"
    order: ClassVar[int] = 400
    toolchain: ClassVar[str | None] = None
    needs_testbench: ClassVar[bool] = False

    #: The external tools this validator runs, with install hints and version flags
    #: (``rtlforge doctor`` lists them; the runner asks their versions).
    tools: ClassVar[tuple[ToolSpec, ...]] = ()

    def tool_names(self) -> Sequence[str]:
        """External executables this validator runs (for version pinning and cache keys)."""
        return ()

    def predefined_macros(self) -> tuple[str, ...]:
        """Macros this stage's tools define before they read the design (``NAME=VALUE``).

        What the tool predefines (Icarus ``__ICARUS__``, Verilator ``VERILATOR``, Yosys
        ``SYNTHESIS``, ...) plus any ``-D`` this validator passes. The security gate checks the
        design once per distinct set of a pipeline's validators, so it judges the program each
        tool compiles (a branch only one tool takes is checked too). Default: none, right for
        a stage that runs no HDL tool on the design; one that does must declare its set.
        """
        return ()

    def cache_key(self) -> dict[str, Any]:
        """Everything about this validator's configuration that can change its result.

        Dataclass validators get their fields included automatically; others override this.
        """
        fields = dataclasses.asdict(self) if dataclasses.is_dataclass(self) else {}
        return {"name": self.name, **fields}

    def applies(self, task: Task) -> bool:
        """Whether this stage has anything to check for ``task`` (else the pipeline skips it)."""
        return not self.needs_testbench or bool(task.testbench)

    @abstractmethod
    def validate(self, ctx: ValidationContext) -> StageResult:
        """Run the stage. Raise nothing for design problems: return a StageResult saying so."""


# --------------------------------------------------------------------------------------------
# Generator
# --------------------------------------------------------------------------------------------


class SamplingParams(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    n: int = Field(1, ge=1)
    temperature: float = Field(0.8, ge=0.0)
    top_p: float = Field(0.95, gt=0.0, le=1.0)
    max_tokens: int = Field(2048, ge=1)
    seed: int | None = None
    stop: tuple[str, ...] = ()


class GenerationRequest(BaseModel):
    """A prompt to sample from; ``task`` is kept so generators that need structure can use it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    prompt: str
    system: str | None = None
    task: Task | None = None
    request_id: str | None = None
    #: Exploration/refinement round this request belongs to (0 = first). Generators that replay
    #: or cycle through alternatives use it to hand out a different variant per round.
    iteration: int | None = Field(None, ge=0)
    #: Free-form selectors and tags for a generator (e.g. ``{"trial": 2}`` for replay).
    metadata: dict[str, Any] = Field(default_factory=dict)


class Generation(BaseModel):
    """One sample: the raw text plus accounting. Extraction into a Candidate is separate."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    text: str
    generator: str
    candidate: Candidate | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency_s: float | None = None
    finish_reason: str | None = None
    #: Model (or recorded method) that produced the text, when the generator knows it.
    model: str | None = None
    #: Generator-specific accounting and provenance (attempts, trial, source file, ...).
    metadata: dict[str, Any] = Field(default_factory=dict)


class GenerationUsage(BaseModel):
    """Cumulative accounting of one generator instance (a snapshot; see ``Generator.usage``).

    Token counts are what servers reported; requests without a ``usage`` block add nothing, so
    the totals are lower bounds, never estimates.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    requests: int = 0  # backend calls that succeeded (an HTTP request, a replay lookup)
    attempts: int = 0  # every try, retries included
    retries: int = 0
    failures: int = 0  # calls that failed for good (after retries)
    cancelled: int = 0  # calls abandoned because of cancel()/close()
    generations: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0  # summed wall time of successful calls


class Generator(Plugin):
    """Turns prompts into samples.

    ``cancel``, ``close``, ``usage`` and the context-manager protocol have safe defaults, so a
    generator only has to implement :meth:`generate`; those that talk to servers or hold devices
    override them.
    """

    @abstractmethod
    def generate(
        self, requests: Sequence[GenerationRequest], params: SamplingParams
    ) -> list[list[Generation]]:
        """Return ``params.n`` generations per request, in request order.

        A generator may return fewer (a symbolic solver declines); infrastructure failures raise
        a typed error rather than returning empty text.
        """

    def cancel(self) -> None:
        """Stop the ``generate`` calls in progress as soon as possible (from any thread).

        Calls that stop early raise ``rtlforge.generation.base.GenerationCancelled``; later
        calls work normally. The default does nothing: a generator that cannot be interrupted
        finishes its current batch.
        """
        return None

    def close(self) -> None:
        """Release connections/devices; cancels work in progress. Idempotent."""
        self.cancel()

    def usage(self) -> GenerationUsage | None:
        """Cumulative accounting since construction, or None when the generator keeps none."""
        return None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# --------------------------------------------------------------------------------------------
# PPA
# --------------------------------------------------------------------------------------------


class PPAEstimator(Plugin):
    """Measures power, performance and area of a design that passed validation."""

    #: The external tools this estimator runs (see ``Validator.tools``).
    tools: ClassVar[tuple[ToolSpec, ...]] = ()

    @abstractmethod
    def estimate(self, candidate: Candidate, top: str, runner: Runner, *,
                 clock: str | None = None, period_ns: float | None = None) -> PPAResult:
        """Measure one design that already passed validation.

        ``clock`` names the clock port (None: estimator's choice, e.g. auto-detect) and
        ``period_ns`` the target clock period (None: the estimator's default).
        """

    def estimate_many(
        self, candidates: Sequence[Candidate], top: str, runner: Runner, *,
        clock: str | None = None, period_ns: float | None = None,
    ) -> list[PPAResult | Exception]:
        """Batch form; errors are returned in place so one bad design does not sink the batch."""
        # Only pass what was given: estimators written against the three-argument form still work.
        opts = {k: v for k, v in (("clock", clock), ("period_ns", period_ns)) if v is not None}
        out: list[PPAResult | Exception] = []
        for cand in candidates:
            try:
                out.append(self.estimate(cand, top, runner, **opts))
            except Exception as exc:  # noqa: BLE001 - returned to the caller, typed
                out.append(exc)
        return out

    def predefined_macros(self) -> tuple[str, ...]:
        """Macros the estimator's synthesis tool defines before it reads the design (see
        :meth:`Validator.predefined_macros`); default none."""
        return ()

    def cache_key(self) -> dict[str, Any]:
        """Everything about this estimator's configuration that can change a measurement (its
        name by default; the built-ins add their liberty, tool version, corner). Computing it
        reads that configuration, so calling it early turns a bad setting (a missing liberty)
        into an error before any work."""
        return {"name": self.name}

    def close(self) -> None:
        """Stop helper processes the estimator keeps (a persistent STA shell). Idempotent."""
        return None


# --------------------------------------------------------------------------------------------
# Reward
# --------------------------------------------------------------------------------------------


class ScoredCompletion(Protocol):
    """What :meth:`Reward.score_detailed` returns per completion: at least its ``reward``."""

    @property
    def reward(self) -> float | None: ...


@dataclass(frozen=True)
class Score:
    """The detail of a reward that keeps none beyond the number (the default detail)."""

    reward: float | None


class Reward(Plugin):
    """Batch-first reward: ``None`` means abstain (infrastructure failure), never a zero score.

    ``needs_ppa`` says the reward takes a PPA ``estimator`` keyword (so builders such as the
    trainer adapters pass one); ``score_detailed`` returns why each completion got its reward,
    richer rewards returning their own detail type.
    """

    needs_ppa: ClassVar[bool] = False

    @abstractmethod
    def score(
        self, prompts: Sequence[str], completions: Sequence[str], **columns: Sequence[Any]
    ) -> list[float | None]:
        """One float (or None) per completion; ``columns`` are per-sample dataset columns."""

    def score_detailed(
        self, prompts: Sequence[str], completions: Sequence[Any], **columns: Sequence[Any]
    ) -> Sequence[ScoredCompletion]:
        """One detail per completion, in order; the default wraps :meth:`score`."""
        return [Score(r) for r in self.score(prompts, completions, **columns)]


# --------------------------------------------------------------------------------------------
# Archive
# --------------------------------------------------------------------------------------------


class ArchiveEntry(BaseModel):
    # NaN/inf stay NaN/inf in JSON (not null), so a stored entry reads back as it was written
    model_config = ConfigDict(frozen=True, extra="forbid", ser_json_inf_nan="constants")

    task_id: str
    candidate: Candidate
    objectives: tuple[float, ...] | None = None  # maximised; None for failed candidates
    verdict: Verdict
    record: dict[str, Any] = Field(default_factory=dict)


class Archive(Plugin):
    """Evaluated candidates per task, their Pareto front, and small keyed JSON notes (``meta``:
    run configuration, resume bookkeeping) kept in the same store.

    Contract: every write (``add``, ``put_meta``) is atomic and durable when it returns, and
    writes made inside ``with archive.batch():`` land together when the block ends normally and
    not at all when it raises or the process dies inside it. Archives that cannot keep notes or
    group writes inherit the defaults below; consumers that need them (explore) say so.
    """

    @abstractmethod
    def add(self, entries: Iterable[ArchiveEntry]) -> None:
        """Persist entries durably before returning: all of them or none."""

    @abstractmethod
    def entries(self, task_id: str | None = None) -> Iterator[ArchiveEntry]:
        ...

    @abstractmethod
    def front(self, task_id: str) -> list[ArchiveEntry]:
        """The non-dominated entries of one task."""

    def batch(self) -> AbstractContextManager[None]:
        """Group writes into one all-or-nothing unit (nested batches join the outer one).

        Default: no grouping beyond each write being atomic by itself.
        """
        return nullcontext()

    def put_meta(self, key: str, value: Any, *, overwrite: bool = True) -> bool:
        """Store a JSON value under ``key``; with ``overwrite=False`` an existing key is kept
        and False returned (nothing written), which makes ``key`` a once-only marker."""
        raise NotImplementedError(f"archive {self.name!r} keeps no metadata")

    def get_meta(self, key: str) -> Any:
        """The value stored under ``key``, None when there is none."""
        raise NotImplementedError(f"archive {self.name!r} keeps no metadata")

    def meta(self, prefix: str = "") -> dict[str, Any]:
        """Every stored key starting with ``prefix``, with its value."""
        raise NotImplementedError(f"archive {self.name!r} keeps no metadata")

    def close(self) -> None:
        """Release files and connections (default: nothing to release). Idempotent."""
        return None

    def __len__(self) -> int:
        return sum(1 for _ in self.entries())

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# --------------------------------------------------------------------------------------------
# Trainer
# --------------------------------------------------------------------------------------------


#: Called with each metrics record a trainer writes (the CLI draws its progress bar from it).
TrainerProgress = Callable[[Mapping[str, Any]], None]


class Trainer(Plugin):
    """Trains a model as a validated config says.

    ``config_class`` is the pydantic model a config file is validated with (dispatching on its
    ``trainer`` key); :meth:`from_config` is how callers construct a trainer, so a trainer with a
    different constructor overrides it rather than being probed for its signature.
    """

    config_class: ClassVar[type[BaseModel] | None] = None
    #: True when the constructor takes ``progress=`` (called with each metrics record).
    reports_progress: ClassVar[bool] = False

    @classmethod
    def from_config(cls, config: Any, *, host: Any,
                    progress: TrainerProgress | None = None) -> Self:
        """Build from a validated config (its output directory included): ``cls(config,
        host=host)``, plus ``progress=`` when the trainer declares ``reports_progress``."""
        if cls.reports_progress:
            return cls(config, host=host, progress=progress)  # type: ignore[call-arg]
        return cls(config, host=host)  # type: ignore[call-arg]

    @abstractmethod
    def train(self) -> dict[str, Any]:
        ...

    @abstractmethod
    def evaluate(self) -> dict[str, Any]:
        ...

    @abstractmethod
    def save(self, path: Path) -> None:
        ...

    @abstractmethod
    def resume(self, path: Path) -> None:
        ...


#: The built-in plugin kinds, declared to every host through ``register_plugin_kinds`` like a
#: plugin's own; keyed in the host by the name used in the CLI and ``PluginHost.get``.
BUILTIN_KINDS: tuple[PluginKind, ...] = (
    PluginKind("validator", Validator, "register_validators", "a validation stage",
               facts=("stage", "toolchain")),
    PluginKind("generator", Generator, "register_generators", "turns prompts into samples"),
    PluginKind("ppa_estimator", PPAEstimator, "register_ppa_estimators", "measures PPA"),
    PluginKind("reward", Reward, "register_rewards", "scores completions for RL"),
    PluginKind("archive", Archive, "register_archives", "stores evaluated candidates"),
    PluginKind("trainer", Trainer, "register_trainers", "trains a model from a config"),
)
