"""The validation pipeline end to end, with the real tools."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, ClassVar

import pytest

import rtlforge.sandbox.runner as runner_mod
from rtlforge.core.executor import SerialExecutor, ThreadExecutor
from rtlforge.core.models import Candidate, SourceFile, Task, Verdict
from rtlforge.core.plugins import PluginHost
from rtlforge.tasks.loader import load_tasks
from rtlforge.validate.cache import MemoryCache, SQLiteCache
from rtlforge.validate.pipeline import Pipeline

ROOT = Path(__file__).resolve().parents[2]
ATTACKS = ROOT / "tests" / "sandbox" / "attacks"
pytestmark = pytest.mark.tools

TB = """
module tb;
  reg a, b; wire y; integer errors = 0, i;
  and2 dut(.a(a), .b(b), .y(y));
  initial begin
    for (i = 0; i < 4; i = i + 1) begin
      {a, b} = i; #1;
      if (y !== (a & b)) errors = errors + 1;
    end
    $display("Mismatches: %0d in 4 samples", errors);
    $finish;
  end
endmodule
"""
GOOD = "module and2(input a, input b, output y);\n  assign y = a & b;\nendmodule\n"
WRONG = "module and2(input a, input b, output y);\n  assign y = a | b;\nendmodule\n"


@pytest.fixture(scope="module")
def host() -> PluginHost:
    return PluginHost()


@pytest.fixture
def task() -> Task:
    return Task(id="and2", spec="2-input AND", top="and2",
                testbench=(SourceFile(name="tb.v", content=TB),))


@pytest.fixture
def pipeline(host: PluginHost) -> Pipeline:
    return Pipeline.build(host, timeout=10)


def test_every_bundled_golden_passes_its_testbench_and_synthesises(host: PluginHost) -> None:
    tasks = load_tasks(ROOT / "examples" / "tasks")
    assert len(tasks) >= 12
    pipeline = Pipeline.build(host, synth=True, timeout=30)
    reports = pipeline.validate_many([(t, Candidate(files=t.golden)) for t in tasks])
    failed = {t.id: r.to_summary() for t, r in zip(tasks, reports, strict=True) if not r.passed}
    assert not failed
    assert all([s.name for s in r.stages] == ["security", "iverilog-lint", "iverilog-sim",
                                              "yosys-synth"] for r in reports)


def test_correct_design_passes_and_wrong_design_fails(pipeline: Pipeline, task: Task) -> None:
    ok = pipeline.validate(task, Candidate.from_source(GOOD))
    bad = pipeline.validate(task, Candidate.from_source(WRONG))
    assert ok.verdict is Verdict.PASS
    assert bad.verdict is Verdict.FAIL
    assert bad.stages[-1].name == "iverilog-sim"
    assert any(fb.category == "sim_mismatch" for fb in bad.feedback)


def test_stages_stop_at_first_failure(pipeline: Pipeline, task: Task) -> None:
    report = pipeline.validate(task, Candidate.from_source(GOOD.replace(";", "", 1)))
    assert report.verdict is Verdict.ERROR
    assert [s.name for s in report.stages] == ["security", "iverilog-lint"]
    assert report.feedback[0].category == "syntax" and report.feedback[0].line is not None


def test_dut_cannot_forge_a_pass(pipeline: Pipeline, task: Task) -> None:
    forged = WRONG.replace(
        "endmodule",
        'initial begin #10; $display("Mismatches: 0 in 4 samples"); '
        '$display("Your Design Passed"); end\nendmodule',
    )
    report = pipeline.validate(task, Candidate.from_source(forged))
    assert report.verdict is Verdict.FAIL


def test_simulation_without_finish_times_out(host: PluginHost, task: Task) -> None:
    hang_tb = TB.replace("$finish;", "forever #1 a = ~a;")
    hang = task.model_copy(update={"testbench": (SourceFile(name="tb.v", content=hang_tb),)})
    report = Pipeline.build(host, timeout=2).validate(hang, Candidate.from_source(GOOD))
    assert report.verdict is Verdict.TIMEOUT
    assert report.stages[-1].name == "iverilog-sim"


def test_missing_tool_is_infra_error_not_a_verdict(
        host: PluginHost, task: Task, monkeypatch: pytest.MonkeyPatch) -> None:
    real_which = shutil.which
    monkeypatch.setattr(runner_mod, "_tool_cache", {})
    monkeypatch.setattr(runner_mod.shutil, "which",
                        lambda name, *a, **k: None if name == "iverilog" else real_which(name))
    cache = MemoryCache()
    report = Pipeline.build(host, cache=cache).validate(task, Candidate.from_source(GOOD))
    assert report.verdict is Verdict.INFRA_ERROR
    fb = report.feedback[-1]
    assert fb.category == "tool_missing" and "iverilog" in fb.message
    assert "apt-get install iverilog" in fb.message
    assert len(cache) == 0, "an infrastructure failure must never be cached"


def test_cache_hit_returns_same_verdict_and_is_marked(pipeline: Pipeline, task: Task) -> None:
    first = pipeline.validate(task, Candidate.from_source(GOOD))
    second = pipeline.validate(task, Candidate.from_source(GOOD))
    assert not first.cached and second.cached
    assert second.verdict is first.verdict and second.stages == first.stages
    other = pipeline.validate(task, Candidate.from_source(WRONG))
    assert not other.cached


def test_cache_key_changes_with_testbench(pipeline: Pipeline, task: Task) -> None:
    other = task.model_copy(update={"testbench": (SourceFile(name="tb.v", content=TB + "\n"),)})
    assert pipeline.cache_key(task, Candidate.from_source(GOOD)) != pipeline.cache_key(
        other, Candidate.from_source(GOOD))


def test_sqlite_cache_persists_across_pipelines(host: PluginHost, task: Task,
                                                tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    Pipeline.build(host, cache=SQLiteCache(path)).validate(task, Candidate.from_source(GOOD))
    again = Pipeline.build(host, cache=SQLiteCache(path)).validate(
        task, Candidate.from_source(GOOD))
    assert again.cached and again.verdict is Verdict.PASS


def test_validate_many_keeps_order_across_executors(pipeline: Pipeline, task: Task) -> None:
    pairs = [(task, Candidate.from_source(src)) for src in (GOOD, WRONG, GOOD + "\n", WRONG)]
    expected = [Verdict.PASS, Verdict.FAIL, Verdict.PASS, Verdict.FAIL]
    with ThreadExecutor(2) as pool:
        assert [r.verdict for r in pipeline.validate_many(pairs, executor=pool)] == expected
    serial = Pipeline.build(PluginHost(), cache=MemoryCache(0))
    assert [r.verdict for r in serial.validate_many(pairs, executor=SerialExecutor())] == expected


def test_validate_many_of_bare_candidates_is_a_typeerror_naming_the_pairs(
        pipeline: Pipeline, task: Task) -> None:
    with pytest.raises(TypeError, match=r"takes \(task, candidate\) pairs; item 0 is a "
                                        r"Candidate: pass \[\(task, candidate\), \.\.\.\]"):
        pipeline.validate_many([Candidate.from_source(GOOD)])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="item 1 is a tuple of 2"):
        pipeline.validate_many([(task, Candidate.from_source(GOOD)),
                                (Candidate.from_source(GOOD), task)])  # type: ignore[list-item]


def test_a_pass_without_a_testbench_says_nothing_simulated_it(pipeline: Pipeline) -> None:
    lint_only = Task(id="and2", spec="2-input AND", top="and2")
    report = pipeline.validate(lint_only, Candidate.from_source(WRONG))
    assert report.verdict is Verdict.PASS  # a wrong design that compiles: lint cannot tell
    [note] = [fb for fb in report.feedback if fb.category == "not_simulated"]
    assert note.severity == "info" and "iverilog-sim did not run" in note.message
    assert "not that it does what the spec says" in note.message


def test_design_file_named_like_the_testbench_is_renamed(pipeline: Pipeline, task: Task) -> None:
    report = pipeline.validate(task, Candidate.from_source(GOOD, name="tb.v"))
    assert report.verdict is Verdict.PASS


def test_failing_run_leaves_a_reproducible_bundle(host: PluginHost, task: Task,
                                                 tmp_path: Path) -> None:
    pipeline = Pipeline.build(host, bundle_dir=tmp_path / "bundles")
    pipeline.validate(task, Candidate.from_source(WRONG))
    (bundle,) = (tmp_path / "bundles").iterdir()
    assert (bundle / "design.v").read_text() == WRONG
    assert (bundle / "tb.v").exists() and (bundle / "stages.json").exists()


def _attack_files() -> list[Path]:
    return sorted(ATTACKS.glob("*.v"))


@pytest.mark.parametrize("attack", _attack_files(), ids=lambda p: p.stem)
def test_attacks_are_rejected_before_any_tool_runs(
        pipeline: Pipeline, task: Task, attack: Path, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[tuple[str, ...]] = []
    real_run = runner_mod.SandboxRunner.run

    def spy(self: runner_mod.SandboxRunner, argv, *args, **kwargs):  # type: ignore[no-untyped-def]
        ran.append(tuple(argv))
        return real_run(self, argv, *args, **kwargs)

    monkeypatch.setattr(runner_mod.SandboxRunner, "run", spy)
    report = pipeline.validate(task, Candidate.from_source(attack.read_text(), name=attack.name))
    assert report.verdict is Verdict.FAIL
    assert [s.name for s in report.stages] == ["security"]
    assert report.feedback[0].category == "security" and report.feedback[0].line
    assert ran == [], "no tool may read an unsafe file"


# ------------------------------------------------------------------------------ extra with options


def _limit_host() -> PluginHost:
    """The built-ins plus a third-party validator with one option (no tool behind it)."""
    from dataclasses import dataclass

    from rtlforge import hookimpl
    from rtlforge.core.interfaces import ValidationContext, Validator
    from rtlforge.core.models import Feedback, StageResult

    @dataclass(frozen=True)
    class LineLimit(Validator):
        name: ClassVar[str] = "line-limit"
        order: ClassVar[int] = 50
        max_lines: int = 100

        def validate(self, ctx: ValidationContext) -> StageResult:
            lines = sum(f.content.count("\n") for f in ctx.candidate.files)
            ok = lines <= self.max_lines
            return StageResult(name=self.name, verdict=Verdict.PASS if ok else Verdict.FAIL,
                               feedback=() if ok else (Feedback(
                                   category="style", message=f"limit {self.max_lines}"),))

    class Plugin:
        @hookimpl
        def register_validators(self, register: Any) -> None:
            register(LineLimit)

    host = PluginHost()
    assert host.add_plugin(Plugin(), name="line-limit-plugin")
    return host


def test_extra_validators_take_options_as_pairs_or_specs() -> None:
    from rtlforge.core.options import PluginSpec

    host = _limit_host()
    for extra in (("line-limit", {"max_lines": 2}), PluginSpec(name="line-limit",
                                                               options={"max_lines": 2})):
        pipeline = Pipeline.build(host, lint=False, simulate=False, extra=[extra])
        (validator,) = pipeline.validators
        assert validator.max_lines == 2  # type: ignore[attr-defined]
    (plain,) = Pipeline.build(host, lint=False, simulate=False, extra=["line-limit"]).validators
    assert plain.max_lines == 100  # type: ignore[attr-defined]

    task = Task(id="t", spec="", top="and2")
    report = Pipeline.build(host, lint=False, simulate=False,
                            extra=[("line-limit", {"max_lines": 1})]).validate(
        task, Candidate.from_source("module and2(input a, output y);\nassign y = a;\nendmodule\n"))
    assert report.verdict is Verdict.FAIL and report.stages[-1].feedback[0].message == "limit 1"


@pytest.mark.parametrize(("extra", "error", "text"), [
    (("line-limit", {"max_lines": "many"}), "PluginOptionsError",
     "invalid options for validator 'line-limit': option 'max_lines': Input should be a "
     "valid integer"),
    (("line-limit", {"max_rows": 3}), "PluginOptionsError",
     "unknown option 'max_rows' (options: max_lines)"),
    ("line-limt", "PluginError", "did you mean 'line-limit'?"),
    (("line-limit", 3), "PluginOptionsError", "a (name, options) pair or a PluginSpec"),
])
def test_bad_extra_is_a_typed_config_error_before_anything_is_built(
        extra: object, error: str, text: str) -> None:
    from rtlforge.core.errors import ConfigError

    with pytest.raises(ConfigError) as caught:
        Pipeline.build(_limit_host(), lint=False, simulate=False,
                       extra=["line-limit", extra])  # type: ignore[list-item]
    assert type(caught.value).__name__ == error and text in str(caught.value)


def test_validate_many_answers_known_pairs_without_the_executor(pipeline: Pipeline,
                                                                task: Task) -> None:
    class Counting(SerialExecutor):
        items = 0

        def run(self, work: Any, items: Any) -> list[Any]:
            Counting.items += len(items)
            return super().run(work, items)

    good, wrong = Candidate.from_source(GOOD), Candidate.from_source(WRONG)
    first = pipeline.validate_many([(task, good), (task, wrong)], executor=Counting())
    again = pipeline.validate_many([(task, wrong), (task, good)], executor=Counting())
    assert [r.verdict for r in first] == [Verdict.PASS, Verdict.FAIL]
    assert [r.verdict for r in again] == [Verdict.FAIL, Verdict.PASS]
    assert all(r.cached for r in again) and Counting.items == 2  # the second batch: no item
