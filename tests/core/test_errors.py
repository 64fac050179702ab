"""The error taxonomy: which error is whose fault, and every decision site following is_infra.

The table below is written by hand from what each error means (its docstring and where it is
raised), not derived from the classes, so a class moved to the wrong branch fails here. Each call
site family (pipeline verdicts, rewards, evaluation PPA, the AST reward's preprocessing, the
``ppa`` command) is then driven with one error of each kind and checked against the table.
"""

from __future__ import annotations

import ast
import contextlib
import importlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import click
import pytest
from click.testing import CliRunner

from rtlforge.cmdline import EXIT_INFRA, EXIT_NOT_PASSED
from rtlforge.core.errors import (
    ConfigError,
    DesignError,
    InfraError,
    InvalidSourceError,
    RtlforgeError,
    SandboxError,
    SecurityViolation,
    TaskFormatError,
    ToolMissingError,
    is_infra,
)
from rtlforge.core.interfaces import PPAEstimator, PPAResult, ValidationContext, Validator
from rtlforge.core.models import Candidate, SourceFile, StageResult, Task, Verdict
from rtlforge.eda.liberty import LibertyError
from rtlforge.evaluation.evaluate import measure_ppa
from rtlforge.plugins.estimators import ppa as ppa_plugin
from rtlforge.plugins.estimators.ppa import PPAError, PPATimeoutError
from rtlforge.rewards import ast as ast_reward
from rtlforge.rewards.builtin import PPAScalarReward
from rtlforge.validate.pipeline import Pipeline

ROOT = Path(__file__).resolve().parents[2]
INFRA, DESIGN, CONFIG = "infra", "design", "config"

#: Every RtlforgeError subclass in rtlforge, by hand: whose fault is it?
BRANCH: dict[str, str] = {
    # the harness could not do its job
    "rtlforge.core.errors:ToolMissingError": INFRA,
    "rtlforge.core.errors:SandboxError": INFRA,
    "rtlforge.core.errors:WorkerLostError": INFRA,
    "rtlforge.core.errors:IsolationUnavailableError": INFRA,
    "rtlforge.generation.base:GenerationError": INFRA,  # a server down, a request timed out
    "rtlforge.generation.base:GenerationCancelled": INFRA,
    "rtlforge.generation.base:GenerationTimeout": INFRA,
    "rtlforge.generation.base:GenerationConnectionError": INFRA,
    "rtlforge.generation.base:GenerationHTTPError": INFRA,
    "rtlforge.generation.base:MalformedResponseError": INFRA,
    "rtlforge.generation.base:ResponseTooLargeError": INFRA,
    "rtlforge.generation.local:ModelLoadError": INFRA,
    "rtlforge.generation.local:ExtraMissingError": INFRA,
    "rtlforge.rewards.ast:ASTBackendUnavailable": INFRA,  # a missing optional extra
    "rtlforge.rewards.ast:SimilarityBudgetExceeded": INFRA,  # the harness's own time budget
    "rtlforge.trainers.errors:TrainerInfraError": INFRA,
    "rtlforge.trainers.errors:QLoRAUnavailableError": INFRA,
    "rtlforge.plugins.generators.scripted:ScriptExhausted": INFRA,  # the script, not the design
    # the candidate's own fault
    "rtlforge.core.errors:SecurityViolation": DESIGN,
    # a link, FIFO or device where the host expected a regular file: only the run made it
    "rtlforge.sandbox.runfiles:PlantedFileError": DESIGN,
    "rtlforge.core.errors:ExtractionError": DESIGN,
    "rtlforge.core.errors:InvalidSourceError": DESIGN,
    "rtlforge.plugins.estimators.ppa.errors:PPAError": DESIGN,  # does not synthesise, no timed path
    "rtlforge.plugins.estimators.ppa.errors:PPATimeoutError": DESIGN,  # like a ``timeout`` verdict
    "rtlforge.rewards.ast:TreeTooLarge": DESIGN,
    "rtlforge.agents.decompose.plan:DecompositionError": DESIGN,  # the model's plan is unusable
    "rtlforge.agents.testbench:TestbenchError": DESIGN,  # the model wrote no usable testbench
    "rtlforge.behave.sim.golden:TaskModelError": DESIGN,  # an agent's model that does not check
    # the caller's setup
    "rtlforge.core.errors:TaskFormatError": CONFIG,
    "rtlforge.tasks.loader:NoTasksError": CONFIG,  # a folder with no task in any layout
    "rtlforge.core.errors:PluginError": CONFIG,
    "rtlforge.core.errors:PluginOptionsError": CONFIG,
    "rtlforge.generation.prompts:TemplateError": CONFIG,
    "rtlforge.evaluation.metrics:RecordsError": CONFIG,
    "rtlforge.pareto.hypervolume:InvalidObjectivesError": CONFIG,
    "rtlforge.eda.liberty:LibertyError": CONFIG,
    "rtlforge.trainers.errors:TrainerConfigError": CONFIG,
    "rtlforge.trainers.errors:CheckpointError": CONFIG,  # a path to a wrong or partial checkpoint
    "rtlforge.agents.base:RoleTemplateError": CONFIG,
    "rtlforge.agents.testbench:RealTestbenchError": CONFIG,  # asked to replace a real testbench
    "rtlforge.agents.config:AgentsFileError": CONFIG,
    "rtlforge.agents.run:UnsafeRunDirError": CONFIG,  # a run dir with links or foreign files
    "rtlforge.behave.sim.task:BehaveTaskError": CONFIG,  # a bad behave.toml
    "rtlforge.behave.sim.golden:GoldenUnavailable": CONFIG,  # the task's golden cannot load
    "rtlforge.core.errors:UnboundedRegexError": CONFIG,  # a task's regex RE2 cannot run
    "rtlforge.core.untrusted:UntrustedTextError": CONFIG,  # input over a size/depth bound
    "rtlforge.core.untrusted:JSONLimitError": CONFIG,
    "rtlforge.core.untrusted:TOMLLimitError": CONFIG,
}
#: Abstract bases: on no branch themselves (their subclasses are).
BASES = {"rtlforge.core.errors:InfraError", "rtlforge.core.errors:DesignError",
         "rtlforge.core.errors:ConfigError", "rtlforge.trainers.errors:TrainerError"}
#: Other bases that callers catch today and must keep catching.
KEPT_BASES: dict[str, type[BaseException]] = {
    "rtlforge.generation.prompts:TemplateError": ValueError,
    "rtlforge.evaluation.metrics:RecordsError": ValueError,
    "rtlforge.pareto.hypervolume:InvalidObjectivesError": ValueError,
    "rtlforge.trainers.errors:TrainerConfigError": ValueError,
    "rtlforge.agents.base:RoleTemplateError": ValueError,
    "rtlforge.agents.testbench:RealTestbenchError": ValueError,
    "rtlforge.agents.config:AgentsFileError": ValueError,
    "rtlforge.behave.sim.golden:TaskModelError": ValueError,
    "rtlforge.agents.run:UnsafeRunDirError": ValueError,
    "rtlforge.agents.decompose.plan:DecompositionError": ValueError,
    "rtlforge.core.errors:UnboundedRegexError": ValueError,
    "rtlforge.core.untrusted:UntrustedTextError": ValueError,
    "rtlforge.core.untrusted:JSONLimitError": importlib.import_module("json").JSONDecodeError,
    "rtlforge.core.untrusted:TOMLLimitError": importlib.import_module("tomllib").TOMLDecodeError,
    "rtlforge.generation.local:ExtraMissingError": ToolMissingError,
    "rtlforge.generation.local:ModelLoadError":
        importlib.import_module("rtlforge.generation.base").GenerationError,
}
BRANCH_CLASS = {INFRA: InfraError, DESIGN: DesignError, CONFIG: ConfigError}


def _load(qualified: str) -> type[BaseException]:
    module, name = qualified.split(":")
    cls: type[BaseException] = getattr(importlib.import_module(module), name)
    return cls


def _error_classes_in_source() -> set[str]:
    """Every class in rtlforge/ that derives, by base name, from RtlforgeError (no imports)."""
    classes: dict[str, tuple[str, set[str]]] = {}
    for path in (ROOT / "rtlforge").rglob("*.py"):
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                bases = {b.id if isinstance(b, ast.Name) else getattr(b, "attr", "")
                         for b in node.bases}
                classes[f"{module}:{node.name}"] = (node.name, bases)
    errors = {"RtlforgeError"}
    while True:
        grown = errors | {name for name, bases in classes.values() if bases & errors}
        if grown == errors:
            break
        errors = grown
    return {q for q, (name, _) in classes.items() if name in errors and name != "RtlforgeError"}


# ------------------------------------------------------------------------------ the tree


def test_table_covers_every_error_class_in_the_source() -> None:
    assert _error_classes_in_source() == set(BRANCH) | BASES


@pytest.mark.parametrize("qualified", sorted(BRANCH))
def test_each_error_is_on_exactly_its_branch(qualified: str) -> None:
    cls = _load(qualified)
    assert issubclass(cls, RtlforgeError)
    on = {branch for branch, base in BRANCH_CLASS.items() if issubclass(cls, base)}
    assert on == {BRANCH[qualified]}


@pytest.mark.parametrize("qualified", sorted(KEPT_BASES))
def test_existing_bases_are_kept(qualified: str) -> None:
    assert issubclass(_load(qualified), KEPT_BASES[qualified])


def test_is_infra_only_a_design_error_is_the_designs_fault() -> None:
    assert is_infra(SandboxError("jail cannot start"))
    assert is_infra(ToolMissingError("sta", "apt-get install opensta"))
    assert is_infra(TaskFormatError("bad task.toml"))  # not the candidate's fault either
    assert is_infra(RtlforgeError("on no branch"))  # unclassified: never held against a design
    assert is_infra(RuntimeError("a bug of ours"))
    assert not is_infra(SecurityViolation("$system", file="d.v", line=3))
    assert not is_infra(InvalidSourceError("NUL at 4", file="d.v"))
    assert not is_infra(PPAError("no timed path", stage="sta"))


# ------------------------------------------------------------------- one error of each kind

#: (error raised by a fake tool step, its branch by the table above)
SAMPLES: list[tuple[BaseException, str]] = [
    (ToolMissingError("sta", "install it"), INFRA),
    (SandboxError("cannot create a run directory"), INFRA),
    (LibertyError("liberty not found"), CONFIG),
    (RuntimeError("estimator bug"), INFRA),  # untyped: a crash is the harness's
    (PPAError("yosys could not synthesise 'm'", stage="synth"), DESIGN),
    (PPATimeoutError("sta ran past 1 s", stage="sta"), DESIGN),
    (InvalidSourceError("NUL character", file="design.v"), DESIGN),
    (SecurityViolation("$system is not allowed", file="design.v", line=2), DESIGN),
]
IDS = [type(exc).__name__ for exc, _ in SAMPLES]

GOLDEN = "module m(input a, output y);\n  assign y = a;\nendmodule\n"
CANDIDATE = "module m(input a, output y);\n  assign y = a; // candidate\nendmodule\n"


@pytest.fixture
def task() -> Task:
    return Task(id="t", spec="a wire", top="m",
                testbench=(SourceFile(name="tb.v", content="module tb; endmodule\n"),),
                golden=(SourceFile(name="m.v", content=GOLDEN),))


class _Passes(Validator):
    name: ClassVar[str] = "passes"
    stage: ClassVar[str] = "lint"

    def validate(self, ctx: ValidationContext) -> StageResult:
        return StageResult(name=self.name, verdict=Verdict.PASS)


class _Raises(Validator):
    name: ClassVar[str] = "raises"
    stage: ClassVar[str] = "simulate"

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc

    def validate(self, ctx: ValidationContext) -> StageResult:
        raise self.exc


class _RaisingPPA(PPAEstimator):
    """Measures the golden; raises ``exc`` for anything else."""

    name: ClassVar[str] = "raising-ppa"

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc

    def estimate(self, candidate: Candidate, top: str, runner: Any, **_: Any) -> PPAResult:
        if candidate.files[0].content == GOLDEN:
            return PPAResult(power_mw=1.0, delay_ns=1.0, area_um2=1.0, cells=1, liberty="fake")
        raise self.exc


@pytest.mark.parametrize(("exc", "branch"), SAMPLES, ids=IDS)
def test_pipeline_verdict_of_a_raising_validator(task: Task, exc: BaseException,
                                                 branch: str) -> None:
    report = Pipeline([_Raises(exc)]).validate(task, Candidate.from_source(CANDIDATE))
    assert report.stages[-1].name == "raises"
    if branch == DESIGN:  # the design's fault, even when raised: a verdict about it
        expected = Verdict.FAIL if isinstance(exc, SecurityViolation) else Verdict.ERROR
    else:
        expected = Verdict.INFRA_ERROR
    assert report.verdict is expected


class _BrokenWorkspace:
    """A runner whose run directory cannot be created (the jail's own failure)."""

    unsafe_skip_gate = False

    def workspace(self, prefix: str = "") -> Any:
        raise SandboxError("cannot create a run directory: disk full")


def test_pipeline_sandbox_failure_outside_a_validator_is_infra(task: Task) -> None:
    pipeline = Pipeline([_Passes()], runner=_BrokenWorkspace())  # type: ignore[arg-type]
    report = pipeline.validate(task, Candidate.from_source(CANDIDATE))
    assert report.verdict is Verdict.INFRA_ERROR
    assert "disk full" in report.feedback[-1].message


@pytest.mark.parametrize(("exc", "branch"), SAMPLES, ids=IDS)
def test_reward_abstains_on_infra_and_scores_zero_on_design(task: Task, exc: BaseException,
                                                            branch: str) -> None:
    reward = PPAScalarReward({task.id: task}, Pipeline([_Passes()]),
                             estimator=_RaisingPPA(exc), probe_testbench=False)
    [detail] = reward.score_detailed([""], [CANDIDATE], task_id=[task.id])
    if branch == DESIGN:
        assert detail.reward == 0.0
    else:
        assert detail.reward is None and "ppa_infra_error" in detail.flags


@pytest.mark.parametrize(("exc", "branch"), SAMPLES, ids=IDS)
def test_evaluation_ppa_marks_infra_and_stops_only_on_a_missing_tool(
        exc: BaseException, branch: str) -> None:
    candidate = Candidate.from_source(CANDIDATE)
    if isinstance(exc, ToolMissingError):  # every design would fail alike: stop the batch
        with pytest.raises(ToolMissingError):
            measure_ppa(_RaisingPPA(exc), candidate, "m", None)  # type: ignore[arg-type]
        return
    measured = measure_ppa(_RaisingPPA(exc), candidate, "m", None)  # type: ignore[arg-type]
    assert not measured.ok and measured.error and str(exc) in measured.error
    assert measured.infra is (branch != DESIGN)


class _PutRaises:
    """A runner whose gate (``put``) or jail fails with ``exc``."""

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc

    @contextlib.contextmanager
    def workspace(self, prefix: str = "") -> Iterator[Path]:
        yield Path("/nonexistent")

    def put(self, *args: Any, **kwargs: Any) -> Any:
        raise self.exc


@pytest.mark.parametrize(("exc", "branch"), [s for s in SAMPLES if isinstance(s[0], RtlforgeError)],
                         ids=[i for i, s in zip(IDS, SAMPLES, strict=True)
                              if isinstance(s[0], RtlforgeError)])
def test_ast_preprocess_failure_is_infra_only_when_not_the_designs(
        exc: BaseException, branch: str) -> None:
    failure = ast_reward._iverilog_preprocess(CANDIDATE, _PutRaises(exc))  # type: ignore[arg-type]
    assert isinstance(failure, ast_reward.ParseFailure)
    assert failure.infra is (branch != DESIGN)


@pytest.mark.parametrize(("exc", "branch"), [s for s in SAMPLES if isinstance(s[0], RtlforgeError)],
                         ids=[i for i, s in zip(IDS, SAMPLES, strict=True)
                              if isinstance(s[0], RtlforgeError)])
def test_ppa_command_exit_code_follows_the_branch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  exc: BaseException, branch: str) -> None:
    class Fake:
        liberty = (tmp_path / "fake.lib", None)

        def __init__(self, **options: Any) -> None:
            pass

        def estimate(self, *args: Any, **kwargs: Any) -> PPAResult:
            raise exc

    monkeypatch.setitem(ppa_plugin.ESTIMATORS, "yosys-sta", Fake)  # type: ignore[arg-type]
    cli = click.Group()
    ppa_plugin.register_commands(cli)
    design = tmp_path / "m.v"
    design.write_text(CANDIDATE)
    result = CliRunner().invoke(cli, ["ppa", str(design), "--top", "m", "--json"])
    assert result.exit_code == (EXIT_NOT_PASSED if branch == DESIGN else EXIT_INFRA), result.output
