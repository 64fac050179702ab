"""The validation-first pipeline: security check, then lint → simulate → synthesise.

Stages run in ascending ``Validator.order`` (lint 100, simulate 200, synthesise 300 for the
built-ins; a third-party check picks any number, e.g. 150 to run between lint and simulation) and
stop at the first one that does not pass. :meth:`Pipeline.build` names no tool: it picks the
registered validators whose ``stage`` and ``toolchain`` match what was asked for.

The pipeline owns everything the validators should not have to think about: the security check
of untrusted sources before any tool reads them, a private run directory per candidate, the
per-run nonce that lets a verdict tell the testbench's output from the design's, mapping
infrastructure failures to ``infra_error`` (never a design verdict), the content-addressed cache
and parallel batches. A pipeline made by :meth:`Pipeline.build` remembers how (its
:class:`PipelineSpec`), so a cluster executor can rebuild it on each worker instead of pickling it.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import shutil
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from rtlforge.core.errors import (
    ConfigError,
    InvalidSourceError,
    PluginError,
    RtlforgeError,
    SandboxError,
    SecurityViolation,
    ToolMissingError,
    is_infra,
)
from rtlforge.core.executor import Executor, ThreadExecutor, Work, WorkerServices, WorkSpec
from rtlforge.core.interfaces import ValidationContext, Validator
from rtlforge.core.log import get_logger
from rtlforge.core.models import (
    Candidate,
    Feedback,
    SourceFile,
    StageResult,
    Task,
    ValidationReport,
    Verdict,
)
from rtlforge.core.options import PluginSpec, validate_options
from rtlforge.core.plugins import HostSpec
from rtlforge.eda.feedback import make_feedback, source_context
from rtlforge.eda.verdicts import (
    instrument_testbench,
    name_suffix,
    new_nonce,
    rename_testbench,
    testbench_renames,
)
from rtlforge.sandbox import runfiles
from rtlforge.sandbox.runner import SandboxRunner, find_tool, tool_spec
from rtlforge.validate.cache import MemoryCache, ResultCache, SQLiteCache

if TYPE_CHECKING:
    from rtlforge.core.plugins import PluginHost

log = get_logger("rtlforge.pipeline")

#: The stage results a bundle holds next to the copied run directory (written by the host).
BUNDLE_STAGES = "stages.json"
_HDL_SUFFIXES = (".v", ".sv", ".vh", ".svh", ".vams")
_CACHEABLE = (Verdict.PASS, Verdict.FAIL, Verdict.ERROR)


def toolchains(host: PluginHost, *stages: str) -> list[str]:
    """Toolchains that have a validator for every one of ``stages`` (e.g. the simulators).

    Read from the validators' declared ``stage`` and ``toolchain`` (``PluginHost.declared``):
    with the CLI's manifest no validator plugin is imported to answer; factories declare
    nothing (use them through ``extra``)."""
    found: dict[str, set[str | None]] = {}
    for facts in host.declared("validator").values():
        if facts["toolchain"] is not None:
            found.setdefault(facts["toolchain"], set()).add(facts["stage"])
    return sorted(tc for tc, have in found.items() if set(stages) <= have)


def select_validator(host: PluginHost, stage: str, toolchain: str) -> str:
    """The one registered validator of ``stage`` for ``toolchain``; none or several is an
    error that names them (pick one explicitly with ``extra`` instead)."""
    names = [n for n, facts in host.declared("validator").items()
             if facts["stage"] == stage and facts["toolchain"] == toolchain]
    if not names:
        raise PluginError(f"no {stage} validator for toolchain {toolchain!r} is registered")
    if len(names) > 1:
        raise PluginError(f"several {stage} validators for toolchain {toolchain!r}: "
                          f"{', '.join(sorted(names))}")
    return names[0]


def _is_hdl(name: str) -> bool:
    return name.lower().endswith(_HDL_SUFFIXES)


def _noting_untested(stage: StageResult, task: Task, skipped: list[str]) -> StageResult:
    """``stage`` with a note that a pass says less than it seems: nothing ran the design."""
    note = Feedback(
        category="not_simulated", severity="info", stage=stage.name,
        message=f"task {task.id!r} has no testbench, so {', '.join(skipped)} did not run: this "
                "pass says the design compiles (and synthesises, if asked), not that it does "
                "what the spec says",
        hint="Give the task a self-checking testbench (testbench = [...] in task.toml, or "
             "--testbench) to check its behaviour.")
    return stage.model_copy(update={"feedback": (*stage.feedback, note)})


def _pair(index: int, item: object) -> tuple[Task, Candidate]:
    """A batch item checked for shape: a caller's mistake is a TypeError that says the
    expected form, not an unpacking error deep inside the batch."""
    if (isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], Task)
            and isinstance(item[1], Candidate)):
        return item
    got = type(item).__name__ + (f" of {len(item)}" if isinstance(item, tuple) else "")
    raise TypeError(f"validate_many takes (task, candidate) pairs; item {index} is a {got}: "
                    "pass [(task, candidate), ...], or validate(task, candidate) for one")


class PipelineSpec(BaseModel):
    """Everything :meth:`Pipeline.build` was given, as plain data: a pipeline rebuilt from it
    in another process validates exactly alike (same validators, options, timeout, cache key).

    ``cache`` is a SQLite file (None: each process keeps its own memory cache); ``host`` the
    plugin host's :class:`~rtlforge.core.plugins.HostSpec`.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    host: HostSpec = Field(default_factory=HostSpec)
    simulator: str = "icarus"
    lint: bool = True
    simulate: bool = True
    synth: bool = False
    extra: tuple[PluginSpec, ...] = ()
    synthesizer: str = "yosys"
    timeout: float = 60.0
    options: dict[str, Any] = Field(default_factory=dict)
    cache: str | None = None
    bundle_dir: str | None = None

    def build(self, *, cache: ResultCache | None = None) -> Pipeline:
        """The pipeline; ``cache`` (a store the executor shares) wins over the spec's file."""
        host = self.host.build()
        if cache is None and self.cache is not None:
            cache = SQLiteCache(self.cache)
        return Pipeline.build(host, simulator=self.simulator, lint=self.lint,
                              simulate=self.simulate, synth=self.synth, extra=self.extra,
                              synthesizer=self.synthesizer, timeout=self.timeout,
                              options=self.options, cache=cache, bundle_dir=self.bundle_dir)


class ValidateWork(WorkSpec):
    """``Pipeline.validate`` over ``(task, candidate)`` pairs, rebuilt on a worker."""

    pipeline: PipelineSpec

    def build(self, services: WorkerServices) -> Any:
        pipeline = self.pipeline.build(cache=services.cache)
        return lambda pair: pipeline.validate(*pair)


def _spec_of(host: HostSpec, build: dict[str, Any]) -> PipelineSpec | None:
    """The spec of a ``Pipeline.build`` call, or None when an argument is a live object that
    cannot be described (a custom runner, a cache other than memory or SQLite)."""
    build = dict(build)
    if build.pop("runner", None) is not None:
        return None
    cache = build.pop("cache", None)
    if type(cache) is SQLiteCache:  # exactly: a subclass may behave otherwise
        build["cache"] = str(cache.path)
    elif cache is not None and type(cache) is not MemoryCache:
        return None
    if build.get("bundle_dir") is not None:
        build["bundle_dir"] = str(build["bundle_dir"])
    return PipelineSpec(host=host, **build)


def lost_report(pair: tuple[Task, Candidate], reason: str) -> ValidationReport:
    """What a pair becomes when no worker could validate it: infrastructure, never a verdict."""
    task, candidate = pair
    return ValidationReport(verdict=Verdict.INFRA_ERROR, stages=(_infra_stage("executor", reason),),
                            task_id=task.id, candidate_digest=candidate.digest())


class Pipeline:
    """Validates candidates against tasks. Thread-safe: one instance serves a worker pool.

    ``spec`` says how to rebuild it in another process; None for a pipeline made from validator
    instances (it can run only on executors of this process).
    """

    def __init__(
        self,
        validators: Sequence[Validator],
        *,
        runner: SandboxRunner | None = None,
        cache: ResultCache | None = None,
        timeout: float = 60.0,
        options: dict[str, Any] | None = None,
        bundle_dir: str | Path | None = None,
    ) -> None:
        if not validators:
            raise ValueError("a pipeline needs at least one validator")
        self.validators = sorted(validators, key=lambda v: v.order)  # stable: ties keep order
        self.runner = runner or SandboxRunner()
        self.cache = cache if cache is not None else MemoryCache()
        self.timeout = timeout
        self.options = dict(options or {})
        self.bundle_dir = Path(bundle_dir) if bundle_dir is not None else None
        self.spec: PipelineSpec | None = None
        self._config_key: str | None = None

    @classmethod
    def build(
        cls,
        host: PluginHost | None = None,
        *,
        simulator: str = "icarus",
        lint: bool = True,
        simulate: bool = True,
        synth: bool = False,
        extra: Iterable[str | tuple[str, Mapping[str, Any]] | PluginSpec] = (),
        synthesizer: str = "yosys",
        **kwargs: Any,
    ) -> Pipeline:
        """Compose a pipeline from the validator plugins registered with ``host``.

        ``simulator`` and ``synthesizer`` are toolchains: the lint and simulation validators
        of ``simulator`` and the synthesis validator of ``synthesizer`` are chosen by their
        declared ``stage``/``toolchain``. ``extra`` adds validators by name, as a
        ``(name, options)`` pair or a :class:`~rtlforge.core.options.PluginSpec`; each runs
        where its ``order`` places it. Options are checked against the validator's options
        model (:class:`~rtlforge.core.errors.PluginOptionsError` names what is wrong) before
        anything is built. Without a host, :meth:`PluginHost.default` builds one.
        """
        if host is None:
            from rtlforge.core.plugins import PluginHost

            host = PluginHost.default()
        simulators = toolchains(host, "lint", "simulate")
        if simulator not in simulators:
            raise ValueError(f"simulator must be one of {simulators}, not {simulator!r}")
        wanted = (("lint", simulator, lint), ("simulate", simulator, simulate),
                  ("synth", synthesizer, synth))
        specs = [PluginSpec(name=select_validator(host, stage, tc))
                 for stage, tc, on in wanted if on]
        extras = [PluginSpec.of(item) for item in extra]
        specs.extend(extras)
        for spec in specs:  # every name and option checked before any validator is built
            validate_options(host.options_model("validator", spec.name), spec.options,
                             what=f"validator {spec.name!r}")
        pipeline = cls([host.create("validator", s.name, **s.options) for s in specs], **kwargs)
        try:
            host_spec = host.spec()
        except ConfigError:  # an in-process plugin object: this pipeline stays local
            return pipeline
        pipeline.spec = _spec_of(host_spec, {
            "simulator": simulator, "lint": lint, "simulate": simulate, "synth": synth,
            "extra": tuple(extras), "synthesizer": synthesizer, **kwargs})
        return pipeline

    # ---------------------------------------------------------------- cache key

    def _pipeline_key(self) -> str:
        """Validators, options and tool versions: computed once per pipeline."""
        if self._config_key is None:
            tools: dict[str, str | None] = {}
            for validator in self.validators:
                for tool in validator.tool_names():
                    try:
                        tools[tool] = find_tool(tool_spec(tool, validator.tools)).version
                    except ToolMissingError:
                        tools[tool] = None
            blob = {
                "validators": [v.cache_key() for v in self.validators],
                "tools": tools,
                "timeout": self.timeout,
                "options": self.options,
                "schema": 1,
            }
            self._config_key = hashlib.sha256(
                json.dumps(blob, sort_keys=True, default=str).encode()
            ).hexdigest()
        return self._config_key

    def cache_key(self, task: Task, candidate: Candidate) -> str:
        return hashlib.sha256(
            f"{self._pipeline_key()}:{task.digest()}:{candidate.digest()}".encode()
        ).hexdigest()

    # ---------------------------------------------------------------- validation

    def validate(self, task: Task, candidate: Candidate) -> ValidationReport:
        """Validate one candidate. Never raises for anything the design or the tools do."""
        start = time.perf_counter()
        key = self.cache_key(task, candidate)
        hit = self.cache.get(key)
        if hit is not None:
            log.debug("validation_cache_hit", task=task.id)
            return hit.model_copy(update={"cached": True})

        try:
            stages = self._run_stages(task, candidate)
        except Exception as exc:  # a bug of ours must not sink a batch or pass as a verdict
            log.exception("pipeline_crashed", task=task.id)
            stages = [_infra_stage("pipeline", f"internal error: {type(exc).__name__}: {exc}")]
        verdict = next((s.verdict for s in stages if s.verdict is not Verdict.PASS), Verdict.PASS)
        report = ValidationReport(
            verdict=verdict,
            stages=tuple(stages),
            task_id=task.id,
            candidate_digest=candidate.digest(),
            seconds=time.perf_counter() - start,
        )
        if verdict in _CACHEABLE:
            self.cache.put(key, report)
        log.info("validated", task=task.id, verdict=verdict.value,
                 seconds=round(report.seconds, 3), stages=[s.name for s in stages])
        return report

    def validate_many(
        self,
        pairs: Iterable[tuple[Task, Candidate]],
        *,
        executor: Executor | None = None,
    ) -> list[ValidationReport]:
        """Validate a batch in parallel; results are in input order.

        Pairs this pipeline's cache already knows are answered here, and what comes back is
        cached here too, so a remote executor's results serve the next batch without a round
        trip. A remote executor rebuilds this pipeline from :attr:`spec` on its workers; a pair
        whose worker kept dying comes back ``infra_error`` (never a verdict).
        """
        pairs = [_pair(i, item) for i, item in enumerate(pairs)]
        keys = [self.cache_key(task, candidate) for task, candidate in pairs]
        reports: list[ValidationReport | None] = []
        for key in keys:
            hit = self.cache.get(key)
            reports.append(hit.model_copy(update={"cached": True}) if hit is not None else None)
        todo = [i for i, report in enumerate(reports) if report is None]
        if not todo:
            return [r for r in reports if r is not None]
        own = executor is None
        pool: Executor = executor or ThreadExecutor()
        work: Work[tuple[Task, Candidate], ValidationReport] = Work(
            fn=lambda pair: self.validate(*pair),
            spec=ValidateWork(pipeline=self.spec) if self.spec is not None else None,
            lost=lost_report)
        try:
            done = pool.run(work, [pairs[i] for i in todo])
        finally:
            if own:
                pool.close()
        for i, report in zip(todo, done, strict=True):
            reports[i] = report
            # a local executor ran self.validate, which cached the report already; only one
            # that came back from another process is new here (a get after a put is a hit in
            # the cache's memory front, so this skips a second SQLite write per candidate)
            if (report.verdict in _CACHEABLE and not report.cached
                    and self.cache.get(keys[i]) is None):
                self.cache.put(keys[i], report)
        return [r for r in reports if r is not None]

    def _run_stages(self, task: Task, candidate: Candidate) -> list[StageResult]:
        candidate = self._resolve_name_clashes(task, candidate)
        nonce = new_nonce()
        # The names tag is not the marker nonce: a design may learn its own path at run time
        # (%m), which must not tell it the marker.
        tag = secrets.token_hex(8)
        renames = self._testbench_renames(task, candidate, tag)
        stages: list[StageResult] = []
        try:
            with self.runner.workspace(prefix=f"rtlforge-{_slug(task.id)}-") as workdir:
                security = self._security_stage(workdir, task, candidate, nonce, renames)
                stages.append(security)
                if security.verdict is not Verdict.PASS:
                    return stages
                ctx = ValidationContext(
                    task=task, candidate=candidate, workdir=workdir, runner=self.runner,
                    timeout=self.timeout, options=dict(self.options), nonce=nonce,
                    testbench_names=renames,
                )
                unchecked = []
                for validator in self.validators:
                    if not validator.applies(task):
                        unchecked += [validator.name] if validator.needs_testbench else []
                        continue
                    result = _forget_names(self._run_one(validator, ctx), tag)
                    stages.append(result)
                    if result.verdict is not Verdict.PASS:
                        self._bundle(workdir, task, candidate, stages)
                        break
                else:
                    if unchecked and len(stages) > 1:
                        stages[-1] = _noting_untested(stages[-1], task, unchecked)
        except RtlforgeError as exc:  # the workspace or a trusted file could not be set up
            if not is_infra(exc):
                raise
            stages.append(_infra_stage("sandbox", str(exc)))
        if len(stages) == 1 and stages[0].verdict is Verdict.PASS:
            stages.append(_infra_stage(
                "pipeline", f"no validator in this pipeline applies to task {task.id!r} "
                "(simulation needs a testbench; a port check needs declared ports)"))
        return stages

    @staticmethod
    def _resolve_name_clashes(task: Task, candidate: Candidate) -> Candidate:
        """A design file named like a task or harness file would overwrite it, and one an
        interpreter could import is Python from the candidate: rename it
        (:func:`~rtlforge.sandbox.runfiles.design_file_name`)."""
        taken = {f.name for f in (*task.testbench, *task.support)}
        if task.cocotb_module is not None:
            taken.add(task.cocotb_module.name)
        names = [f.name for f in candidate.files]
        safe = runfiles.design_file_names(names, taken)
        if safe == names:
            return candidate
        renamed = tuple(SourceFile(name=new, content=f.content)
                        for f, new in zip(candidate.files, safe, strict=True))
        return candidate.model_copy(update={"files": renamed})

    @staticmethod
    def _testbench_renames(task: Task, candidate: Candidate, tag: str) -> dict[str, str]:
        """This run's names for the testbench's modules (the design's top and the task's
        support modules, which both sides name, keep theirs)."""
        from rtlforge.eda.modules import declared_modules

        keep = {candidate.top or task.top, task.top,
                *(n for f in task.support for n in declared_modules(f.content))}
        return testbench_renames([f.content for f in task.testbench if _is_hdl(f.name)], tag,
                                 keep=keep)

    def _predefines(self, task: Task) -> list[tuple[str, ...]]:
        """The distinct macro sets of the tools this pipeline runs on ``task``."""
        views = {tuple(v.predefined_macros()) for v in self.validators if v.applies(task)}
        return sorted(views) or [()]

    def _security_stage(self, workdir: Path, task: Task, candidate: Candidate,
                        nonce: str, renames: Mapping[str, str] | None = None) -> StageResult:
        """Put every file into the run directory through the gate; the design may read only
        its own files and the task's support files (never the testbench, which holds the
        nonce), and may not name anything of the testbench's, under any tool's macros.

        The testbench goes in with its module names renamed for this run (``renames``) and
        its prints bracketed by the nonce; the gate judges the design against the original
        testbench, so a name of the task's is refused whatever this run calls it."""
        renames = renames or {}
        start = time.perf_counter()
        runner = self.runner
        support = [f.name for f in task.support]
        everything = [*support, *(f.name for f in (*candidate.files, *task.testbench))]
        files = {f.name: f.content for f in (*task.support, *task.testbench, *candidate.files)}
        try:
            runner.put(workdir, task.support, role="testbench", readable=everything)
            # the design's check and its containment (under every tool's macros) are one
            # request to the gate
            runner.put(workdir, candidate.files, role="design",
                       readable=[*support, *(f.name for f in candidate.files)],
                       contain=(task.testbench, task.support, self._predefines(task)))
            runner.put(workdir, task.testbench, role="testbench", readable=everything,
                       rewrite=lambda f: instrument_testbench(
                           rename_testbench(f.content, renames), nonce)
                       if _is_hdl(f.name) else f.content)
            if task.cocotb_module is not None:
                # Python that cocotb runs inside the jail; no HDL tool reads it, so the gate has
                # nothing to judge (and the design may not read it).
                runner.put(workdir, [task.cocotb_module], role="trusted")
        except InvalidSourceError as exc:
            feedback = make_feedback("invalid_source", str(exc), stage="security", files={},
                                     file=exc.file)
            return StageResult(name="security", verdict=Verdict.ERROR,
                               seconds=time.perf_counter() - start, feedback=(feedback,))
        except SecurityViolation as exc:
            context = (source_context(files[exc.file], exc.line)
                       if exc.file in files and exc.line else None)
            # the exception's text starts with "file:line: " for a person reading it alone;
            # the feedback carries the location in its own fields (printed once, before it)
            message = str(exc).removeprefix(f"{exc.file}:{exc.line}: ")
            feedback = make_feedback("security", message, stage="security", files=files,
                                     file=exc.file, line=exc.line)
            if context and feedback.context is None:
                feedback = feedback.model_copy(update={"context": context})
            if exc.hint:
                feedback = feedback.model_copy(update={"hint": exc.hint})
            log.warning("security_violation", task=task.id, construct=exc.construct,
                        file=exc.file, line=exc.line)
            return StageResult(name="security", verdict=Verdict.FAIL,
                               seconds=time.perf_counter() - start, feedback=(feedback,))
        return StageResult(name="security", verdict=Verdict.PASS,
                           seconds=time.perf_counter() - start)

    def _run_one(self, validator: Validator, ctx: ValidationContext) -> StageResult:
        """The validator's result; an error it raises becomes a verdict by :func:`is_infra`."""
        start = time.perf_counter()
        verdict = Verdict.INFRA_ERROR
        try:
            return validator.validate(ctx)
        except RtlforgeError as exc:
            message, category = str(exc), _error_category(exc)
            if not is_infra(exc):  # the design's fault, raised rather than returned
                verdict = Verdict.FAIL if isinstance(exc, SecurityViolation) else Verdict.ERROR
        except Exception as exc:  # a validator bug is infrastructure, not a verdict
            log.exception("validator_crashed", validator=validator.name)
            message, category = f"validator {validator.name!r} crashed: {exc!r}", "internal_error"
        return StageResult(
            name=validator.name, verdict=verdict, seconds=time.perf_counter() - start,
            feedback=(Feedback(category=category, message=message, stage=validator.name),),
        )

    def _bundle(self, workdir: Path, task: Task, candidate: Candidate,
                stages: list[StageResult]) -> None:
        """Keep a failing run directory with its stage results, so it can be reproduced."""
        if self.bundle_dir is None:
            return
        dest = self.bundle_dir / f"{_slug(task.id)}-{candidate.digest()[:12]}"
        shutil.rmtree(dest, ignore_errors=True)
        self.bundle_dir.mkdir(parents=True, exist_ok=True)
        # Regular files and directories only (never a link the run planted), bounded; the
        # host's stages.json is then created fresh in the copy, which holds no link to follow.
        copied = runfiles.copy_tree(workdir, dest, exclude=frozenset({BUNDLE_STAGES}))
        if copied.skipped:
            log.warning("bundle_left_out", bundle=str(dest), skipped=copied.skipped[:20])
        runfiles.write_new(dest, BUNDLE_STAGES, json.dumps(
            [s.model_dump(mode="json") for s in stages], indent=2))


def _forget_names(result: StageResult, tag: str) -> StageResult:
    """``result`` with this run's testbench names turned back into the task's own.

    Tools print the names they compiled (errors, ``%m``, a dump's scopes); the author must see
    the task's names, and never a per-run tag (it would say what the next run will not use,
    but a log is no place for it either).
    """
    suffix = name_suffix(tag)
    text = result.model_dump_json()
    if suffix not in text:
        return result
    return StageResult.model_validate_json(text.replace(suffix, ""))


def _error_category(exc: RtlforgeError) -> str:
    """Feedback category of an error a validator raised (the names agents already know)."""
    for kind, category in ((ToolMissingError, "tool_missing"), (SandboxError, "sandbox"),
                           (SecurityViolation, "security"), (InvalidSourceError, "invalid_source"),
                           (ConfigError, "config")):
        if isinstance(exc, kind):
            return category
    return "infra" if is_infra(exc) else "design_error"


def _infra_stage(name: str, message: str) -> StageResult:
    return StageResult(
        name=name, verdict=Verdict.INFRA_ERROR,
        feedback=(Feedback(category="infra", message=message, stage=name),),
    )


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in text)[:40]
