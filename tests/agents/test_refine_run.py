"""The refine run directory: pass@1, the solve rate and cost per tier, the settings check,
resuming."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from rtlforge.agents.base import Router
from rtlforge.agents.models import AgentAction, IterationRecord, SolveResult, Tier
from rtlforge.agents.run import RefineRun, RunSettingsMismatch, refine_settings, summarise_results
from rtlforge.core.models import Verdict
from rtlforge.testing.builders import make_candidate, make_task

TASKS = {tid: make_task(tid, spec=f"spec of {tid}") for tid in ("a", "b", "c")}


def _rec(i: int, tier: Tier, agent: str, verdict: Verdict, calls: int = 1,
         prompt: int = 100, completion: int = 50) -> IterationRecord:
    return IterationRecord(iteration=i, tier=tier, agent=agent, verdict=verdict,
                           llm_calls=calls, prompt_tokens=prompt, completion_tokens=completion,
                           action=AgentAction(agent=agent) if tier is Tier.ROUTER else None)


def _result(task_id: str, records: list[IterationRecord], verdict: Verdict,
            solved_by: Tier | None = None) -> SolveResult:
    return SolveResult(
        task_id=task_id, verdict=verdict, iterations=len(records),
        llm_calls=sum(r.llm_calls for r in records), tokens=sum(r.tokens for r in records),
        agents=tuple(r.agent for r in records), tiers=tuple(r.tier for r in records),
        solved_by=solved_by, records=tuple(records), seconds=0.5,
        candidate=make_candidate(f"module {task_id}; endmodule\n") if records else None)


def _results() -> list[SolveResult]:
    symbolic = _result("a", [_rec(0, Tier.SYMBOLIC, "symbolic", Verdict.PASS, calls=0,
                                  prompt=0, completion=0)], Verdict.PASS, Tier.SYMBOLIC)
    routed = _result("b", [_rec(0, Tier.ROUTER, "fast", Verdict.FAIL),
                           _rec(1, Tier.ROUTER, "debug", Verdict.PASS)],
                     Verdict.PASS, Tier.ROUTER)
    failed = _result("c", [_rec(0, Tier.SPECIALIST, "waveform", Verdict.ERROR),
                           *(_rec(i, Tier.ROUTER, "genius", Verdict.FAIL) for i in (1, 2))],
                     Verdict.FAIL)
    infra = _result("d", [], Verdict.INFRA_ERROR)
    return [symbolic, routed, failed, infra]


def test_summary_pass_at_1_excludes_infra_and_costs_per_solved_and_tier() -> None:
    s = summarise_results(_results())
    # 2 of the 3 judged tasks passed; the infra error is counted apart
    assert (s["tasks"], s["passed"], s["infra_errors"]) == (4, 2, 1)
    assert s["solve_rate"] == pytest.approx(2 / 3)
    # only a's first iteration passed (b failed first and passed at its second): pass@1 1/3
    assert s["passed_first"] == 1 and s["pass_at_1"] == pytest.approx(1 / 3)
    # everything spent (5 calls, 750 tokens; the failed task's too) over 2 solved
    assert (s["llm_calls"], s["tokens"]) == (5, 750)
    assert s["llm_calls_per_solved"] == pytest.approx(2.5)
    assert s["tokens_per_solved"] == pytest.approx(375)
    tiers = s["tiers"]
    assert tiers["symbolic"] == {"solved": 1, "iterations": 1, "llm_calls": 0, "tokens": 0,
                                 "llm_calls_per_solved": 0.0, "tokens_per_solved": 0.0}
    assert (tiers["router"]["solved"], tiers["router"]["iterations"],
            tiers["router"]["llm_calls"]) == (1, 4, 4)
    assert (tiers["specialist"]["solved"], tiers["specialist"]["llm_calls"]) == (0, 1)
    assert tiers["specialist"]["llm_calls_per_solved"] is None  # solved nothing
    assert tiers["decomposition"]["iterations"] == 0
    assert s["verdicts"] == {"fail": 1, "infra_error": 1, "pass": 2}


def test_summary_of_only_infra_errors_has_no_pass_at_1() -> None:
    s = summarise_results([_result("d", [], Verdict.INFRA_ERROR)])
    assert s["pass_at_1"] is None and s["llm_calls_per_solved"] is None
    assert s["solve_rate"] is None and s["passed_first"] == 0


def test_pass_at_1_counts_first_attempts_not_tasks_solved_in_the_end() -> None:
    """Every task fails its first attempt and is then fixed: solved 1, pass@1 0."""
    results = [_result(t, [_rec(0, Tier.ROUTER, "fast", Verdict.FAIL),
                           _rec(1, Tier.ROUTER, "debug", Verdict.PASS)], Verdict.PASS,
                       Tier.ROUTER) for t in ("a", "b", "c")]
    s = summarise_results(results)
    assert (s["solve_rate"], s["pass_at_1"], s["passed_first"]) == (1.0, 0.0, 0)
    # a first attempt that passed and an optimisation round that failed later: still a pass
    again = _result("a", [_rec(0, Tier.ROUTER, "fast", Verdict.PASS),
                          _rec(1, Tier.ROUTER, "optimize", Verdict.FAIL)], Verdict.PASS,
                    Tier.ROUTER)
    assert summarise_results([again])["pass_at_1"] == 1.0


def _settings(**over: object) -> dict[str, object]:
    base: dict[str, object] = dict(
        tasks=TASKS, generator="scripted", generator_options={"api_key": "sk-secret"},
        router="heuristic", router_options={}, roles={}, agents_file=None, max_iterations=5,
        candidates=1, symbolic=True, optimize=False)
    base.update(over)
    return refine_settings(**base)  # type: ignore[arg-type]


def test_settings_are_stored_with_secrets_redacted(tmp_path: Path) -> None:
    RefineRun(tmp_path, _settings()).prepare()
    stored = (tmp_path / "settings.json").read_text()
    assert "sk-secret" not in stored
    data = json.loads(stored)
    assert data["generator"]["options"]["api_key"].startswith("sha256:")
    assert set(data["tasks"]) == {"a", "b", "c"}


def _partial_state(run: RefineRun) -> None:
    """Task a finished; task b was interrupted midway (trace and a decision written)."""
    results = _results()
    run.record(results[0])
    with run.results_path.open("a") as fh:
        fh.write('{"task_id": "b", "verdict": "pa')  # torn by the kill
    run.trace_path("a").write_text('{"kind": "progress", "message": "a done"}\n')
    run.trace_path("b").write_text('{"kind": "analysis", "message": "b half"}\n')
    run.decisions_path.write_text(json.dumps({"task_id": "a", "iteration": 0}) + "\n"
                                  + json.dumps({"task_id": "b", "iteration": 0}) + "\n")


def test_resume_keeps_finished_tasks_and_drops_an_interrupted_ones_trace(tmp_path: Path
                                                                         ) -> None:
    first = RefineRun(tmp_path, _settings())
    assert first.prepare() == {}
    _partial_state(first)
    again = RefineRun(tmp_path, _settings())
    done = again.prepare()
    assert list(done) == ["a"] and done["a"] == _results()[0]
    assert again.trace_path("a").exists() and not again.trace_path("b").exists()
    assert [d["task_id"] for d in again.decisions()] == ["a"]
    # the torn line is gone, so the next result starts on its own line
    again.record(_results()[1])
    assert sorted(again.finished()) == ["a", "b"]


def test_other_settings_are_refused_naming_each_difference(tmp_path: Path) -> None:
    RefineRun(tmp_path, _settings()).prepare()
    with pytest.raises(RunSettingsMismatch) as info:
        RefineRun(tmp_path, _settings(max_iterations=3, symbolic=False)).check()
    assert [d[0] for d in info.value.diffs] == ["max_iterations", "symbolic"]
    assert "--overwrite" in str(info.value)
    changed = {**TASKS, "b": make_task("b", spec="another spec")}
    with pytest.raises(RunSettingsMismatch, match=r"tasks\.b"):
        RefineRun(tmp_path, _settings(tasks=changed)).check()


def test_an_edited_agents_file_is_a_different_setting(tmp_path: Path) -> None:
    agents = tmp_path / "agents.toml"
    agents.write_text("[fast]\ntemperature = 0.5\n")
    run_dir = tmp_path / "run"
    RefineRun(run_dir, _settings(agents_file=agents)).prepare()
    RefineRun(run_dir, _settings(agents_file=agents)).check()  # unchanged: accepted
    agents.write_text("[fast]\ntemperature = 0.9\n")
    with pytest.raises(RunSettingsMismatch, match=r"agents\.file_digest"):
        RefineRun(run_dir, _settings(agents_file=agents)).check()


def test_overwrite_deletes_only_what_refine_wrote(tmp_path: Path) -> None:
    run = RefineRun(tmp_path, _settings())
    run.prepare()
    _partial_state(run)
    (tmp_path / "notes.txt").write_text("mine")
    fresh = RefineRun(tmp_path, _settings(max_iterations=2), overwrite=True)
    assert fresh.prepare() == {}
    assert not fresh.results_path.exists() and not list(fresh.traces_dir.iterdir())
    assert not fresh.decisions_path.exists()
    assert (tmp_path / "notes.txt").read_text() == "mine"
    assert json.loads(fresh.settings_path.read_text())["max_iterations"] == 2


def test_write_summary_writes_summary_and_report(tmp_path: Path) -> None:
    run = RefineRun(tmp_path, _settings())
    run.prepare()
    summary, report = run.write_summary(_results())
    on_disk = json.loads((tmp_path / "summary.json").read_text())
    assert on_disk["pass_at_1"] == pytest.approx(1 / 3) == summary["pass_at_1"]
    assert on_disk["solve_rate"] == pytest.approx(2 / 3) == summary["solve_rate"]
    assert on_disk["run"]["generator"] == "scripted"
    assert report == tmp_path / "report.html" and report.stat().st_size > 0


def test_trace_paths_are_the_orchestrators(tmp_path: Path) -> None:
    """Resuming keeps a finished task's trace by name, so the names must be the ones the
    orchestrator writes (ids with characters a file name should not carry included)."""
    from rtlforge.agents import plugin as agents_plugin
    from rtlforge.agents.orchestrator import Orchestrator
    from rtlforge.agents.run import trace_path
    from rtlforge.plugins.generators import scripted, symbolic
    from rtlforge.plugins.validators import iverilog
    from rtlforge.testing.builders import make_plugin_host
    from rtlforge.validate.pipeline import Pipeline

    class _First(Router):
        name = "first"

        def decide(self, ctx: Any, agents: Sequence[str]) -> AgentAction:
            return AgentAction(agent=agents[0])

    host = make_plugin_host(iverilog, symbolic, scripted, agents_plugin)
    task = make_task("dut", task_id="grp/odd id:1", spec="Implement dut.")
    gen = host.create("generator", "scripted", script={"*": {"*": ["no verilog here"]}})
    with Orchestrator(generator=gen, host=host, pipeline=Pipeline.build(host), max_iterations=1,
                      router=_First(),
                      symbolic=False, retriever=None, run_dir=tmp_path) as orch:
        result = orch.solve(task)
    assert result.trace is not None
    assert Path(result.trace) == trace_path(tmp_path, task.id)
    assert trace_path(tmp_path, task.id).is_file()
