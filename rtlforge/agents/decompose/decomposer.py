"""Hierarchical decomposition: plan sub-modules, build them in order, wire the top, check it.

:class:`Decomposer` is what the orchestrator's ``decomposer`` seam calls for a task whose spec
names several components (:func:`~.complexity.is_complex`). Every model call goes through the
``call_llm(system, prompt, *, purpose)`` function the orchestrator hands in, so token and call
accounting stay in the loop; ``purpose`` is ``"decompose"``, ``"submodule:NAME"`` or ``"top"``.

The steps, each a thought event on the trace:

1. **Plan**: the model answers JSON, parsed and checked by :func:`~.plan.parse_plan`; an
   unusable plan is re-asked once with the reason (``max_attempts``), then the result carries
   the :class:`~.plan.DecompositionError` message and no candidate.
2. **Order**: :func:`~.plan.build_order` (dependencies first, plan order breaks ties).
3. **Sub-modules**, in that order. Each prompt carries the headers of the sub-modules built so
   far, read from their generated code, not from the plan: the code is what will be compiled.
   An answer without the module is re-asked; an answer that defines exactly one module under
   another name is renamed (a deterministic fix, recorded).
4. **Top**, given every sub-module's real header.
5. **Port synchronisation**: every instantiation (in the top and in sub-modules) is checked
   against the real ports of the module it instantiates. Two kinds of mismatch are fixed
   deterministically by renaming the connection: a port the plan named one way and the
   generated module another (same port count, same position), and a port whose name differs
   only in case. What is left (unknown ports or modules, unconnected inputs, width mismatches,
   wrong positional counts) is rendered as feedback and the top is asked again with it; if it
   is still wrong, the candidate is assembled anyway and the issues go into the result as
   error feedback (validation will judge it, and the loop can refine it).
6. **Duplicates**: each sub-module's own file wins; a copy of it in another answer (the top's,
   typically) is dropped, and a helper defined by several answers is kept once (first built).
7. **Combined lint** of all files with Verilator (a lint-only pipeline, through the sandbox),
   then **validation** of the assembled top with the pipeline.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict

from rtlforge.agents.base import RoleTemplate
from rtlforge.agents.decompose.complexity import (
    COMPLEXITY_THRESHOLD,
    component_keywords,
)
from rtlforge.agents.decompose.plan import (
    DecompositionError,
    DecompositionPlan,
    SubModule,
    build_order,
    parse_plan,
)
from rtlforge.agents.decompose.verilog import (
    PortIssue,
    check_instances,
    module_ports,
    port_width,
    rename_connections,
    render_header,
    split_modules,
)
from rtlforge.agents.knowledge.indexer import RefPort
from rtlforge.agents.trace import ThoughtKind, Trace
from rtlforge.core.errors import ExtractionError, RtlforgeError
from rtlforge.core.extract import extract_verilog
from rtlforge.core.models import (
    Candidate,
    Feedback,
    Provenance,
    SourceFile,
    Task,
    ValidationReport,
    Verdict,
)
from rtlforge.eda.feedback import make_feedback
from rtlforge.eda.modules import rename_module, scan_modules

if TYPE_CHECKING:
    from rtlforge.core.plugins import PluginHost
    from rtlforge.sandbox.runner import SandboxRunner
    from rtlforge.validate.pipeline import Pipeline

__all__ = ["CallLLM", "Decomposer", "DecompositionResult", "ModuleBuild", "assemble", "synchronise"]

AGENT = "decompose"
Step = Literal["plan", "submodule", "top"]


class CallLLM(Protocol):
    """The orchestrator's model call: ``(system, prompt, *, purpose) -> completion text``."""

    def __call__(self, system: str | None, prompt: str, *, purpose: str) -> str: ...


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ModuleBuild(_Frozen):
    """One generated sub-module (or the top): its file, its real header and what was fixed."""

    name: str
    file: str
    planned_header: str | None = None  # None for the top
    header: str
    attempts: int = 1
    drift: tuple[str, ...] = ()  # how the generated interface differs from the plan
    fixes: tuple[str, ...] = ()  # deterministic fixes applied to this answer


class DecompositionResult(_Frozen):
    """Everything one decomposition did; ``candidate`` is None when it could not finish."""

    task_id: str
    applies: bool  # the spec met the complexity threshold
    components: tuple[str, ...] = ()
    plan: DecompositionPlan | None = None
    order: tuple[str, ...] = ()
    modules: tuple[ModuleBuild, ...] = ()  # sub-modules in build order, then the top
    files: tuple[SourceFile, ...] = ()
    candidate: Candidate | None = None
    fixes: tuple[str, ...] = ()  # port synchronisation fixes applied to the assembled files
    duplicates_removed: tuple[str, ...] = ()
    interface_feedback: tuple[Feedback, ...] = ()  # mismatches left after synchronisation
    lint: ValidationReport | None = None  # the combined Verilator lint
    lint_feedback: tuple[Feedback, ...] = ()
    report: ValidationReport | None = None  # validation of the assembled top
    llm_calls: int = 0
    error: str | None = None
    failed_step: Step | None = None

    @property
    def passed(self) -> bool:
        return self.report is not None and self.report.verdict is Verdict.PASS


class _Failed(Exception):
    def __init__(self, step: Step, message: str) -> None:
        super().__init__(message)
        self.step = step


def _ports_text(declarations: Sequence[str]) -> str:
    return "\n".join(declarations) or "(not given: choose them from the specification)"


def _task_ports(task: Task) -> list[str]:
    return [f"{p.direction} {'signed ' if p.signed else ''}"
            f"{f'[{p.width - 1}:0] ' if p.width > 1 else ''}{p.name}" for p in task.ports]


def _same_interface(planned: SubModule, ports: Sequence[RefPort]) -> list[str]:
    """Differences between the plan's ports and the generated ones, as short sentences."""
    real = {p.name: p for p in ports}
    drift = []
    for want in planned.ports:
        got = real.get(want.name)
        if got is None:
            drift.append(f"planned port {want.name!r} is missing")
        elif got.direction != want.direction:
            drift.append(f"port {want.name!r} is {got.direction}, planned {want.direction}")
        elif (width := port_width(got)) is not None and width != want.width:
            drift.append(f"port {want.name!r} is {width} bit(s), planned {want.width}")
    drift.extend(f"port {name!r} was not planned" for name in real
                 if name not in {p.name for p in planned.ports})
    return drift


#: Issue kind -> the feedback category the validators use for the same problem.
_ISSUE_CATEGORY = {"unknown_module": "missing_module", "width": "width_mismatch"}


def _issue_feedback(issue: PortIssue) -> Feedback:
    feedback = make_feedback(_ISSUE_CATEGORY.get(issue.kind, "port_mismatch"), issue.message,
                             stage="decompose", files={}, file=issue.file)
    if issue.rename_to:
        feedback = feedback.model_copy(
            update={"hint": f"connect {issue.port!r} as .{issue.rename_to}(...)"})
    return feedback


def _render_issues(issues: Sequence[PortIssue]) -> str:
    lines = "\n".join(f"- {i.message}" for i in issues)
    return ("Your last top module does not match the sub-modules' interfaces:\n"
            f"{lines}\nFix these connections; keep the sub-modules' port names and widths.")


class Decomposer:
    """Builds a multi-component design as sub-modules plus a top (see the module docstring).

    ``pipeline`` validates the assembled top (default: ``Pipeline.build(host, runner=runner)``;
    pass the orchestrator's own so its cache serves the loop's re-validation). ``lint_pipeline``
    is the combined lint (default: Verilator lint only); ``lint=False`` or ``validate=False``
    skips a step. Calling the instance is the orchestrator's seam: the candidate, or None.
    """

    def __init__(
        self,
        call_llm: CallLLM | Callable[..., str],
        *,
        host: PluginHost | None = None,
        pipeline: Pipeline | None = None,
        runner: SandboxRunner | None = None,
        lint_pipeline: Pipeline | None = None,
        threshold: int = COMPLEXITY_THRESHOLD,
        max_attempts: int = 2,
        lint: bool = True,
        validate: bool = True,
    ) -> None:
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        self.call_llm = call_llm
        self.host = host
        self.runner = runner
        self.threshold = threshold
        self.max_attempts = max_attempts
        self.lint = lint
        self.validate = validate
        self._pipeline = pipeline
        self._lint_pipeline = lint_pipeline
        self.templates = {name: RoleTemplate.load(name)
                          for name in ("decompose", "submodule", "decompose_top")}

    # ---------------------------------------------------------------- seams

    def applies(self, task: Task) -> bool:
        """Whether ``task``'s spec names at least ``threshold`` components."""
        return len(component_keywords(task.spec)) >= self.threshold

    def __call__(self, task: Task, *, trace: Trace | None = None) -> Candidate | None:
        """The orchestrator's seam: the assembled candidate, or None when the build failed."""
        return self.build(task, trace=trace).candidate

    @property
    def pipeline(self) -> Pipeline:
        if self._pipeline is None:
            from rtlforge.validate.pipeline import Pipeline

            self._pipeline = Pipeline.build(self._host(), runner=self.runner)
        return self._pipeline

    @property
    def lint_pipeline(self) -> Pipeline:
        if self._lint_pipeline is None:
            from rtlforge.validate.pipeline import Pipeline

            # the validation pipeline's runner when there is one: a runner of its own per
            # build would start gate workers that nothing closes (two processes per task)
            runner = self.runner if self.runner is not None else (
                self._pipeline.runner if self._pipeline is not None else None)
            self._lint_pipeline = Pipeline.build(self._host(), simulator="verilator", lint=True,
                                                 simulate=False, runner=runner)
        return self._lint_pipeline

    def _host(self) -> PluginHost:
        if self.host is None:
            from rtlforge.core.plugins import PluginHost

            self.host = PluginHost.default()
        return self.host

    # ---------------------------------------------------------------- the build

    def build(self, task: Task, *, trace: Trace | None = None) -> DecompositionResult:
        """Decompose ``task`` (whether or not it :meth:`applies`: the caller decided)."""
        run = _Run(self, task, trace if trace is not None else Trace(task.id))
        return run.execute()


class _Run:
    """The state of one :meth:`Decomposer.build` (never shared between builds)."""

    def __init__(self, owner: Decomposer, task: Task, trace: Trace) -> None:
        self.owner = owner
        self.task = task
        self.trace = trace
        self.calls = 0
        self.fields: dict[str, Any] = {}

    def emit(self, kind: ThoughtKind, message: str, **fields: Any) -> None:
        self.trace.emit(kind, message, agent=AGENT, **fields)

    def ask(self, template: str, values: Mapping[str, object], purpose: str) -> str:
        system, prompt = self.owner.templates[template].render(values)
        self.calls += 1
        try:
            return self.owner.call_llm(system, prompt, purpose=purpose)
        except RtlforgeError as exc:
            step: Step = "plan" if purpose == "decompose" else (
                "top" if purpose == "top" else "submodule")
            raise _Failed(step, f"{purpose}: the model call failed: {exc}") from exc

    def execute(self) -> DecompositionResult:
        task = self.task
        components = component_keywords(task.spec)
        applies = len(components) >= self.owner.threshold
        self.emit(ThoughtKind.ANALYSIS,
                  f"spec names {len(components)} component(s); decomposition "
                  f"{'applies' if applies else 'was not indicated'} "
                  f"(threshold {self.owner.threshold})",
                  evidence=components, data={"components": list(components)})
        self.fields = {"task_id": task.id, "applies": applies, "components": components}
        try:
            return self._build()
        except _Failed as failed:
            self.emit(ThoughtKind.ERROR, str(failed), data={"step": failed.step})
            return DecompositionResult(**self.fields, llm_calls=self.calls, error=str(failed),
                                       failed_step=failed.step)

    def _build(self) -> DecompositionResult:
        task = self.task
        plan = self._plan()
        order = build_order(plan)
        self.fields.update(plan=plan, order=order)
        self.emit(ThoughtKind.DECISION, f"build order: {', '.join(order)}",
                  evidence=tuple(f"{m.name} <- {', '.join(m.dependencies) or '(none)'}"
                                 for m in plan.modules), data={"order": list(order)})
        texts: dict[str, str] = {}
        builds: list[ModuleBuild] = []
        ports: dict[str, tuple[RefPort, ...]] = {}
        for name in order:
            build, text, real = self._submodule(plan.module(name), builds, plan)
            builds.append(build)
            texts[name] = text
            ports[name] = real
        self.fields["modules"] = tuple(builds)
        planned = {m.name: [p.name for p in m.ports] for m in plan.modules}
        top_build, files, fixes, removed, issues = self._top(plan, builds, texts, ports, planned)
        builds.append(top_build)
        candidate = Candidate(
            files=files, top=task.top, task_id=task.id,
            provenance=Provenance(generator="decomposition",
                                  extra={"modules": list(order), "llm_calls": self.calls}))
        self.fields.update(modules=tuple(builds), files=files, candidate=candidate, fixes=fixes,
                           duplicates_removed=removed,
                           interface_feedback=tuple(_issue_feedback(i) for i in issues))
        lint, lint_feedback = self._lint(candidate)
        report = self._validate(candidate)
        verdict = report.verdict.value if report is not None else "not validated"
        self.emit(ThoughtKind.PROGRESS,
                  f"decomposition finished: {len(order)} sub-modules + top, {self.calls} model "
                  f"call(s), {verdict}", data={"llm_calls": self.calls, "verdict": verdict})
        return DecompositionResult(**self.fields, lint=lint, lint_feedback=lint_feedback,
                                   report=report, llm_calls=self.calls)

    # ---------------------------------------------------------------- steps

    def _plan(self) -> DecompositionPlan:
        task = self.task
        values: dict[str, object] = {"spec": task.spec.strip(), "top": task.top,
                                     "ports": _ports_text(_task_ports(task))}
        problem = ""
        for attempt in range(1, self.owner.max_attempts + 1):
            answer = self.ask("decompose", values, "decompose")
            try:
                plan = parse_plan(answer, top=task.top)
            except DecompositionError as exc:
                problem = str(exc)
                self.emit(ThoughtKind.ERROR, f"unusable decomposition (attempt {attempt}): "
                          f"{problem}", data={"step": "plan", "attempt": attempt})
                values["feedback"] = (f"Your previous decomposition could not be used: "
                                      f"{problem}. Answer again, fixing that.")
                continue
            self.emit(ThoughtKind.PROPOSAL,
                      f"decompose into {len(plan.modules)} sub-modules: "
                      f"{', '.join(plan.names)}",
                      evidence=tuple(f"{m.name}: {m.purpose}" for m in plan.modules),
                      data={"plan": plan.model_dump(mode="json"), "attempt": attempt})
            return plan
        raise _Failed("plan", f"no usable decomposition after {self.owner.max_attempts} "
                              f"attempt(s): {problem}")

    def _submodule(self, module: SubModule, built: Sequence[ModuleBuild],
                   plan: DecompositionPlan) -> tuple[ModuleBuild, str, tuple[RefPort, ...]]:
        deps = ", ".join(module.dependencies) or "none"
        spec = (f"Purpose of `{module.name}`: {module.purpose}\n"
                f"Sub-modules it instantiates: {deps}.\n\n"
                f"The whole system, for context (implement only `{module.name}`):\n"
                f"{self.task.spec.strip()}")
        headers = "\n\n".join(b.header for b in built)
        values: dict[str, object] = {
            "spec": spec, "top": module.name,
            "ports": _ports_text([p.declaration() for p in module.ports]),
            "submodules": ("Sub-modules already built (instantiate them with exactly these "
                           f"ports):\n```verilog\n{headers}\n```") if headers else "",
        }
        others = set(plan.names) | {self.task.top}
        problem = ""
        for attempt in range(1, self.owner.max_attempts + 1):
            answer = self.ask("submodule", values, f"submodule:{module.name}")
            text, fixes, problem = self._module_text(answer, module.name, others - {module.name})
            if text is None:
                self.emit(ThoughtKind.ERROR, f"sub-module {module.name} (attempt {attempt}): "
                          f"{problem}", data={"step": "submodule", "module": module.name})
                values["feedback"] = f"Your previous answer could not be used: {problem}."
                continue
            real = module_ports(text, module.name) or ()
            drift = _same_interface(module, real)
            build = ModuleBuild(name=module.name, file=f"{module.name}.v",
                                planned_header=module.header(),
                                header=render_header(module.name, real), attempts=attempt,
                                drift=tuple(drift), fixes=tuple(fixes))
            self.emit(ThoughtKind.GENERATION,
                      f"built sub-module {module.name}"
                      f"{' (interface differs from the plan)' if drift else ''}",
                      evidence=(*drift, *fixes), confidence=0.5 if drift else None,
                      data={"module": module.name, "attempt": attempt,
                            "header": build.header, "drift": drift})
            return build, text, real
        raise _Failed("submodule", f"sub-module {module.name}: no usable answer after "
                                   f"{self.owner.max_attempts} attempt(s): {problem}")

    def _module_text(self, answer: str, name: str, forbidden: set[str]
                     ) -> tuple[str | None, list[str], str]:
        """The code of an answer that defines ``name`` (renamed when that is unambiguous)."""
        try:
            code = extract_verilog(answer)
        except ExtractionError as exc:
            return None, [], f"no Verilog module in the answer ({exc})"
        declared = scan_modules(code).declared
        if name in declared:
            return code, [], ""
        own = [d for d in declared if d not in forbidden]
        if len(declared) == 1 and own:
            renamed = rename_module(code, own[0], name)
            if renamed is not None:
                return renamed, [f"renamed module {own[0]!r} to {name!r}"], ""
        return None, [], (f"the answer must define module `{name}`; it defines "
                          f"{', '.join(declared) or 'nothing'}")

    def _top(self, plan: DecompositionPlan, builds: Sequence[ModuleBuild],
             texts: Mapping[str, str], ports: Mapping[str, tuple[RefPort, ...]],
             planned: Mapping[str, Sequence[str]],
             ) -> tuple[ModuleBuild, tuple[SourceFile, ...], tuple[str, ...], tuple[str, ...],
                        list[PortIssue]]:
        task = self.task
        headers = "\n\n".join(b.header for b in builds)
        values: dict[str, object] = {
            "spec": task.spec.strip(), "top": task.top,
            "ports": _ports_text(_task_ports(task)),
            "submodules": ("The sub-modules, already built (instantiate them with exactly "
                           f"these ports):\n```verilog\n{headers}\n```"),
        }
        problem = ""
        result = None
        for attempt in range(1, self.owner.max_attempts + 1):
            answer = self.ask("decompose_top", values, "top")
            code, fixes, problem = self._module_text(answer, task.top, set(plan.names))
            if code is None:
                self.emit(ThoughtKind.ERROR, f"top {task.top} (attempt {attempt}): {problem}",
                          data={"step": "top"})
                values["feedback"] = f"Your previous answer could not be used: {problem}."
                continue
            files, removed = assemble([*((b.name, texts[b.name]) for b in builds),
                                       (task.top, code)], task.top)
            files, sync_fixes, issues = synchronise(files, ports, planned,
                                                   support=task.support)
            top_text = next(f.content for f in files if f.name == f"{task.top}.v")
            build = ModuleBuild(name=task.top, file=f"{task.top}.v",
                                header=render_header(task.top,
                                                     module_ports(top_text, task.top) or ()),
                                attempts=attempt, fixes=tuple(fixes))
            result = (build, files, tuple(sync_fixes), tuple(removed), issues)
            self.emit(ThoughtKind.GENERATION,
                      f"built top {task.top}: {len(sync_fixes)} port fix(es), "
                      f"{len(removed)} duplicate(s) removed, {len(issues)} interface issue(s)",
                      evidence=(*sync_fixes, *removed, *(i.message for i in issues)),
                      data={"module": task.top, "attempt": attempt, "issues": len(issues)})
            if not issues:
                return result
            self.emit(ThoughtKind.BOTTLENECK, "the top does not match the sub-modules' "
                      "interfaces", evidence=tuple(i.message for i in issues))
            values["feedback"] = _render_issues(issues)
            values["code"] = f"Your last top module:\n```verilog\n{code.strip()}\n```"
        if result is None:
            raise _Failed("top", f"top {task.top}: no usable answer after "
                                 f"{self.owner.max_attempts} attempt(s): {problem}")
        return result

    def _lint(self, candidate: Candidate) -> tuple[ValidationReport | None, tuple[Feedback, ...]]:
        if not self.owner.lint:
            return None, ()
        task = self.task
        lint_task = Task(id=f"{task.id}.decomposition-lint", spec=task.spec, top=task.top,
                         support=task.support)
        try:
            report = self.owner.lint_pipeline.validate(lint_task, candidate)
        except (RtlforgeError, ValueError) as exc:  # no Verilator lint registered
            self.emit(ThoughtKind.ERROR, f"combined lint unavailable: {exc}",
                      data={"step": "lint"})
            return None, ()
        feedback = tuple(fb for stage in report.stages for fb in stage.feedback)
        errors = sum(fb.severity == "error" for fb in feedback)
        self.emit(ThoughtKind.VALIDATION,
                  f"combined lint of {len(candidate.files)} files: {report.verdict.value} "
                  f"({errors} error(s), {len(feedback) - errors} other finding(s))",
                  evidence=tuple(fb.message for fb in feedback[:5]),
                  data={"verdict": report.verdict.value, "stage": "lint"})
        return report, feedback

    def _validate(self, candidate: Candidate) -> ValidationReport | None:
        if not self.owner.validate:
            return None
        report = self.owner.pipeline.validate(self.task, candidate)
        failing = next((s for s in report.stages if s.verdict is not Verdict.PASS), None)
        self.emit(ThoughtKind.VALIDATION,
                  f"assembled top {self.task.top}: {report.verdict.value}"
                  f"{f' at {failing.name}' if failing else ''}",
                  evidence=tuple(fb.message for fb in (failing.feedback if failing else ())[:3]),
                  data={"verdict": report.verdict.value,
                        "stages": [s.name for s in report.stages]})
        return report


def assemble(answers: Sequence[tuple[str, str]], top: str
             ) -> tuple[tuple[SourceFile, ...], list[str]]:
    """One file per answer (``NAME.v``), each module defined once.

    ``answers`` are ``(owner, code)`` in build order, the top last. A module named like an
    answer's owner belongs to that answer: copies of it elsewhere are dropped (the sub-module's
    own file wins over the top's copy). Any other module (a helper) is kept where it first
    appears. Returns the files and a sentence per dropped copy.
    """
    owners = {owner for owner, _ in answers}
    kept: set[str] = set()
    removed: list[str] = []
    files = []
    for owner, code in answers:
        parts = []
        for name, text in split_modules(code):
            if name != owner and (name in owners or name in kept):
                where = "its own file" if name in owners else "an earlier answer"
                removed.append(f"dropped the copy of module {name!r} in {owner}'s answer "
                               f"({where} defines it)")
                continue
            if name == owner and name in kept:
                removed.append(f"dropped a second definition of {name!r} in its own answer")
                continue
            kept.add(name)
            parts.append(text.strip("\n"))
        files.append(SourceFile(name=f"{owner}.v", content="\n\n".join(parts) + "\n"))
    return tuple(files), removed


def synchronise(files: Sequence[SourceFile], ports: Mapping[str, Sequence[RefPort]],
                planned: Mapping[str, Sequence[str]], *, support: Sequence[SourceFile] = ()
                ) -> tuple[tuple[SourceFile, ...], list[str], list[PortIssue]]:
    """Apply the deterministic port fixes to ``files``; return them, the fixes and what is left.

    ``ports`` are the sub-modules' real ports; helper modules declared in the files (and in
    the task's ``support`` files, which are compiled with the design) are checked with theirs.
    """
    texts = {f.name: f.content for f in files}
    provided = frozenset(name for f in support for name in scan_modules(f.content).declared)
    known = dict(ports)
    for text in (*texts.values(), *(f.content for f in support)):
        for name in scan_modules(text).declared:
            if name not in known and (found := module_ports(text, name)) is not None:
                known[name] = found
    fixes: list[str] = []
    issues = check_instances(texts, known, planned=planned, provided=provided)
    by_file: dict[str, dict[tuple[str, str, str], str]] = {}
    for issue in issues:
        if issue.rename_to and issue.port:
            key = (issue.parent, issue.instance, issue.port)
            taken = {v for (p, i, _), v in by_file.get(issue.file, {}).items()
                     if (p, i) == key[:2]}
            if issue.rename_to in taken:
                continue
            by_file.setdefault(issue.file, {})[key] = issue.rename_to
            fixes.append(f"{issue.file}: {issue.parent}.{issue.instance}: connected "
                         f".{issue.port} as .{issue.rename_to} (the port {issue.module} has)")
    if by_file:
        texts = {name: rename_connections(text, by_file.get(name, {}))
                 for name, text in texts.items()}
        issues = check_instances(texts, known, planned=planned, provided=provided)
    return (tuple(SourceFile(name=f.name, content=texts[f.name]) for f in files), fixes,
            issues)
