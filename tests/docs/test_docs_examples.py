"""The plugin-authoring guides' example plugins (docs/examples/*.py) really work.

The guides include these files verbatim (``--8<--`` snippets), so what a reader copies is what
runs here: each example is loaded by path, registered in a host like a third-party plugin and
exercised. Oracles are worked out by hand from the examples' documented rules.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from datetime import date
from pathlib import Path
from types import ModuleType

import pytest

from rtlforge.core.errors import PluginOptionsError
from rtlforge.core.executor import Work, WorkerServices, WorkSpec
from rtlforge.core.interfaces import ArchiveEntry, GenerationRequest, SamplingParams
from rtlforge.core.models import Verdict
from rtlforge.testing import make_candidate, make_plugin_host, make_task, requires_tools

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "docs" / "examples"
GUIDES = REPO / "docs" / "guides"
#: The built-in plugin that declares the agent_role and router kinds.
AGENTS = (("agents", "rtlforge.agents.plugin"),)


def load_example(stem: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"docs_example_{stem}",
                                                  EXAMPLES / f"{stem}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses and pydantic resolve the module by name
    spec.loader.exec_module(module)
    return module


def host_with(*stems: str, builtin: tuple[tuple[str, str], ...] = ()):  # type: ignore[no-untyped-def]
    plugins: list[tuple[str, object]] = [(name, importlib.import_module(module))
                                         for name, module in builtin]
    plugins += [(stem, load_example(stem)) for stem in stems]
    host = make_plugin_host(*plugins)
    assert host.failures == {}
    return host


def test_every_example_is_shown_by_a_guide() -> None:
    guides = "\n".join(p.read_text(encoding="utf-8") for p in GUIDES.glob("*.md"))
    examples = sorted(p.name for p in EXAMPLES.glob("*.py"))
    assert len(examples) >= 11
    assert [e for e in examples if f'--8<-- "docs/examples/{e}"' not in guides] == []


def test_every_example_option_is_documented() -> None:
    host = host_with("validator_plugin", "generator_plugin", "ppa_plugin", "reward_plugin",
                     "archive_plugin", "router_plugin", builtin=AGENTS)
    for kind, name in [("validator", "no-initial"), ("generator", "canned"),
                       ("ppa_estimator", "line-area"), ("reward", "brevity"),
                       ("archive", "jsonl"), ("router", "round-robin")]:
        options = host.options(kind, name)
        assert options and all(o.description for o in options), (kind, name)


# ------------------------------------------------------------------------------ validator

AND2 = make_task("and2", ports=["input a", "input b", "output y"],
                 vectors=[{"a": a, "b": b, "y": a & b} for a in (0, 1) for b in (0, 1)])
CLEAN = """module and2(input a, input b, output y);
  // an initial block would be wrong here
  assign y = a & b;
endmodule
"""
WITH_INITIAL = """module and2(input a, input b, output reg y);
  /* comment
     spanning lines */ initial y = 0;
  always @* y = a & b;
endmodule
"""


def test_validator_fails_an_initial_block_and_ignores_comments(validation_context) -> None:  # type: ignore[no-untyped-def]
    host = host_with("validator_plugin")
    check = host.create("validator", "no-initial")
    assert check.validate(validation_context(AND2, make_candidate(CLEAN))).verdict is Verdict.PASS
    result = check.validate(validation_context(AND2, make_candidate(WITH_INITIAL)))
    assert result.verdict is Verdict.FAIL
    [finding] = result.feedback
    assert (finding.file, finding.line, finding.category) == ("design.v", 3, "initial_block")
    lenient = host.create("validator", "no-initial", warn_only=True)
    result = lenient.validate(validation_context(AND2, make_candidate(WITH_INITIAL)))
    assert result.verdict is Verdict.PASS and result.feedback[0].severity == "warning"
    with pytest.raises(PluginOptionsError, match="warn_only"):
        host.create("validator", "no-initial", warn_only="perhaps")


@requires_tools("iverilog", "vvp")
def test_validator_runs_between_lint_and_simulation_in_a_real_pipeline() -> None:
    from rtlforge.validate.pipeline import Pipeline

    host = host_with("validator_plugin",
                     builtin=(("iverilog", "rtlforge.plugins.validators.iverilog"),))
    pipeline = Pipeline.build(host, extra=["no-initial"])
    good = pipeline.validate(AND2, make_candidate(CLEAN))
    assert good.verdict is Verdict.PASS
    assert [s.name for s in good.stages] == ["security", "iverilog-lint", "no-initial",
                                             "iverilog-sim"]
    # The design with an initial block passes its testbench; the new stage stops it first.
    bad = pipeline.validate(AND2, make_candidate(WITH_INITIAL))
    assert bad.verdict is Verdict.FAIL and bad.stages[-1].name == "no-initial"


# ------------------------------------------------------------------------------ generator


def test_generator_returns_n_samples_per_request() -> None:
    host = host_with("generator_plugin")
    gen = host.create("generator", "canned", text="module m; endmodule")
    out = gen.generate([GenerationRequest(prompt="a"), GenerationRequest(prompt="b")],
                       SamplingParams(n=3))
    assert [len(group) for group in out] == [3, 3]
    assert {g.text for group in out for g in group} == {"module m; endmodule"}


# ------------------------------------------------------------------------------ PPA


def test_estimator_charges_area_per_non_blank_line() -> None:
    host = host_with("ppa_plugin")
    candidate = make_candidate("module m;\n\n  wire w;\nendmodule\n")  # 3 non-blank lines
    assert host.create("ppa_estimator", "line-area").estimate(candidate, "m", None).area_um2 == 30
    cheap = host.create("ppa_estimator", "line-area", um2_per_line=2.5, delay_ns=4.0)
    result = cheap.estimate(candidate, "m", None)
    assert (result.area_um2, result.delay_ns) == (7.5, 4.0)


# ------------------------------------------------------------------------------ reward


def test_reward_prefers_short_answers_and_abstains_on_empty_ones() -> None:
    host = host_with("reward_plugin")
    assert host.create("reward", "brevity").score(["", "", ""], ["abc", "", "a"]) == [
        0.25, None, 0.5]
    assert host.create("reward", "brevity", scale=2.0).score([""], ["abc"]) == [0.5]


# ------------------------------------------------------------------------------ archive


def _entry(task: str, objectives: tuple[float, ...] | None, code: str) -> ArchiveEntry:
    return ArchiveEntry(task_id=task, candidate=make_candidate(code), objectives=objectives,
                        verdict="pass" if objectives else "fail")


def test_archive_keeps_entries_across_instances_and_finds_the_front(tmp_path: Path) -> None:
    host = host_with("archive_plugin")
    path = tmp_path / "runs" / "archive.jsonl"
    archive = host.create("archive", "jsonl", path=str(path))
    archive.add([_entry("t", (1.0, 2.0), "module a; endmodule"),
                 _entry("t", (2.0, 1.0), "module b; endmodule"),
                 _entry("t", (0.5, 0.5), "module c; endmodule"),  # dominated by both
                 _entry("t", None, "module d"),
                 _entry("u", (9.0, 9.0), "module e; endmodule")])
    with path.open("a", encoding="utf-8") as fh:
        fh.write('{"task_id": "t", "cand')  # a write cut short: ignored
    reopened = host.create("archive", "jsonl", path=str(path))
    assert len(reopened) == 5
    assert sorted(e.objectives for e in reopened.front("t")) == [(1.0, 2.0), (2.0, 1.0)]
    assert [e.task_id for e in reopened.front("u")] == ["u"]


# ------------------------------------------------------------------------------ trainer


def test_trainer_keeps_the_best_completion_per_task(tmp_path: Path) -> None:
    from rtlforge.trainers.config import create_trainer, parse_config

    host = host_with("reward_plugin", "trainer_plugin")
    samples = tmp_path / "samples.jsonl"
    samples.write_text("\n".join(json.dumps(r) for r in [
        {"task_id": "a", "completion": "longer answer"},
        {"task_id": "a", "completion": "short"},
        {"task_id": "b", "completion": ""},  # brevity abstains: never kept
        {"task_id": "b", "completion": "only b"},
    ]) + "\n", encoding="utf-8")
    config = parse_config({"trainer": "best-of", "model": {"path": "recorded"}, "steps": 1,
                           "out_dir": str(tmp_path / "out"), "samples": str(samples),
                           "reward": "brevity"}, host=host)
    trainer = create_trainer(config, host=host)
    summary = trainer.train()
    assert summary == {"tasks": 2, "mean_best": (1 / 6 + 1 / 7) / 2}
    saved = json.loads((tmp_path / "out" / "final" / "best.json").read_text())
    assert {t: b["completion"] for t, b in saved.items()} == {"a": "short", "b": "only b"}
    fresh = create_trainer(config, host=host)
    fresh.resume(tmp_path / "out" / "final")
    assert fresh.evaluate() == summary


# ------------------------------------------------------------------------------ agents

def test_agent_role_matches_async_reset_specs_and_builds_its_prompt() -> None:
    from rtlforge.agents.base import AgentContext
    from rtlforge.agents.models import AgentAction

    host = host_with("agent_role_plugin", builtin=AGENTS)
    assert "reset-first" in host.names("agent_role")
    role = host.create("agent_role", "reset-first")
    spec = "A counter with an asynchronous active-low reset rst_n."
    task = make_task("cnt", ports=["input clk", "input rst_n", "output [3:0] q"], spec=spec)
    assert role.matches(task, spec) == "asynchronous-reset"
    assert role.matches(task, "A counter with a synchronous reset.") is None
    ctx = AgentContext(task=task, spec=spec, action=AgentAction(agent="reset-first"),
                       iteration=0, max_iterations=3)
    request = role.build_request(ctx)
    assert spec in request.prompt and "input [3:0]" not in request.prompt
    assert "output [3:0] q" in request.prompt and "sensitivity list" in request.prompt
    assert role.sampling(ctx.action).temperature == 0.2


def test_router_takes_turns_and_focuses_on_errors_after_feedback() -> None:
    from rtlforge.agents.models import RouterContext
    from rtlforge.core.models import Feedback

    host = host_with("router_plugin", builtin=AGENTS)
    router = host.create("router", "round-robin", offset=1)
    agents = ["fast", "debug", "genius"]
    picks = [router.decide(RouterContext(task_id="t", spec="s", iteration=i), agents).agent
             for i in range(4)]
    assert picks == ["debug", "genius", "fast", "debug"]
    failed = RouterContext(task_id="t", spec="s", iteration=1,
                           feedback=(Feedback(category="syntax", message="syntax error"),))
    assert router.decide(failed, agents).focus.value == "error"


def test_retriever_ranks_by_keyword_overlap_and_detector_fires_on_pipelines() -> None:
    from rtlforge.agents.knowledge.base import KnowledgeEntry, Provenance

    host = host_with("knowledge_plugin",
                     builtin=(("knowledge", "rtlforge.agents.knowledge.plugin"),
                              ("guidance", "rtlforge.agents.guidance.plugin")))
    made = Provenance(source="test", date=date(2026, 1, 1))
    entries = [KnowledgeEntry(id=f"e{i}", kind="pattern", title=f"entry {i}", description="",
                              keywords=kw, provenance=made)
               for i, kw in enumerate([("fifo", "full", "empty", "pointer"), ("uart",),
                                       ("fifo", "gray")])]
    retriever = host.create("retriever", "keyword-overlap", entries=entries)
    hits = retriever.rank("a fifo with full and empty flags", focus="full")
    # e0 shares fifo, full, empty of 4 keywords (0.75); e2 shares fifo of 2 (0.5); e1 none
    assert [(h.entry.id, h.score) for h in hits] == [("e0", 0.75), ("e2", 0.5)]
    detector = host.create("guidance_detector", "pipelined")
    task = make_task("p", spec="x")
    assert detector.detect(task, "A 3-stage pipeline multiplier.").title == "Pipeline"
    assert detector.detect(task, "An 8-bit adder.") is None


# ------------------------------------------------------------------------------ commands


def test_command_lists_task_ports() -> None:
    from click.testing import CliRunner

    from rtlforge.cli import cli

    host = host_with("commands_plugin")
    result = CliRunner().invoke(cli, ["task-ports", "--tasks", str(REPO / "examples" / "tasks"),
                                      "--json"], obj=host)
    assert result.exit_code == 0, result.output
    ports = json.loads(result.output)
    assert len(ports) == 16  # the bundled suite (examples/tasks)
    # examples/tasks/add8_carry/task.toml declares a, b (8 bits), cin, sum (8), cout.
    assert ports["add8_carry"] == ["input a[8]", "input b[8]", "input cin[1]", "output sum[8]",
                                   "output cout[1]"]
    missing = CliRunner().invoke(cli, ["task-ports", "--tasks", "/nonexistent"], obj=host)
    assert missing.exit_code == 2


# ------------------------------------------------------------------------------ hookspecs


def test_a_package_declares_a_kind_that_another_implements_in_any_order() -> None:
    example = load_example("hookspecs_plugin")
    for order in ([("rules", example.NoTabsPlugin()), ("lint-kind", example)],
                  [("lint-kind", example), ("rules", example.NoTabsPlugin())]):
        host = make_plugin_host(*order)
        assert host.failures == {}
        assert host.names("lint_rule") == ["no-tabs"]
        assert example.run_lint_rules(host, "a\n\tb\nc\t") == {
            "no-tabs": ["line 2: tab character", "line 3: tab character"]}


# ------------------------------------------------------------------------------ executor


class _PidWork(WorkSpec):
    """Each item becomes the id of the process that ran it."""

    def build(self, services: WorkerServices):  # type: ignore[no-untyped-def]
        return lambda _item: os.getpid()


class _DyingWork(WorkSpec):
    """Every item kills the process that runs it."""

    def build(self, services: WorkerServices):  # type: ignore[no-untyped-def]
        return lambda _item: os._exit(3)


OR2 = CLEAN.replace("a & b", "a | b")


def test_executor_ships_specs_to_processes_and_keeps_closures_local() -> None:
    host = host_with("executor_plugin")
    with host.create("executor", "process", workers=2) as pool:
        # a closure over live objects stays in this process
        assert list(pool.map(lambda x: x * 2, [1, 2, 3])) == [2, 4, 6]
        pids = pool.run(Work(fn=lambda _item: os.getpid(), spec=_PidWork()), list(range(6)))
        assert len(pids) == 6 and os.getpid() not in pids
        # work without a spec cannot travel: it runs here
        assert pool.run(Work(fn=lambda _item: os.getpid()), [0]) == [os.getpid()]


def test_executor_turns_a_dead_worker_into_lost_items_and_recovers() -> None:
    host = host_with("executor_plugin")
    with host.create("executor", "process", workers=2) as pool:
        lost = pool.run(Work(fn=lambda _item: 0, spec=_DyingWork(),
                             lost=lambda item, reason: ("lost", item, "died" in reason)),
                        [1, 2])
        assert lost == [("lost", 1, True), ("lost", 2, True)]
        # the broken pool was replaced: the next batch runs normally
        assert len(pool.run(Work(fn=lambda _item: 0, spec=_PidWork()), [1, 2])) == 2


@requires_tools("iverilog")
def test_executor_validates_a_batch_like_the_thread_pool() -> None:
    from rtlforge.core.executor import ThreadExecutor
    from rtlforge.validate.pipeline import Pipeline

    host = host_with("executor_plugin",
                     builtin=(("iverilog", "rtlforge.plugins.validators.iverilog"),))
    pipeline = Pipeline.build(host)
    assert pipeline.spec is not None  # built from names: it can be rebuilt in a worker
    pairs = [(AND2, make_candidate(CLEAN)), (AND2, make_candidate(OR2)),
             (AND2, make_candidate("module and2(input a"))]
    with host.create("executor", "process", workers=2) as pool:
        remote = pipeline.validate_many(pairs, executor=pool)
    local = Pipeline.build(host).validate_many(pairs, executor=ThreadExecutor(2))
    # and2 passes, or2 fails its vectors (a=1, b=0 gives 1, expected 0), the fragment is no design
    assert [r.verdict for r in remote][:2] == [Verdict.PASS, Verdict.FAIL]
    assert remote[2].verdict not in (Verdict.PASS, Verdict.FAIL, Verdict.INFRA_ERROR)
    assert [r.verdict for r in remote] == [r.verdict for r in local]
    assert all(not r.cached for r in remote)


def test_every_plugin_kind_has_a_guide() -> None:
    """A kind a built-in plugin declares shows in the guides' index table."""
    from rtlforge.core.plugins import PluginHost

    index = (GUIDES / "index.md").read_text(encoding="utf-8")
    kinds = sorted(k.name for k in PluginHost.default().kinds())
    assert "executor" in kinds
    assert [k for k in kinds if f"`{k}`" not in index] == []
