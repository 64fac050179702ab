"""Acquisition rounds with scripted roles: the repair loop, the 3-round limit, the
Implementer's separate context, typed rejections of malformed answers, the pool."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from acquire_helpers import (
    EXAMPLE,
    SOURCES,
    Recording,
    acquisition_host,
    example_answers,
)

from rtlforge.agents.acquire.roles import DSL_PRIMER, ImplementerRole
from rtlforge.behave.acquire.roles import (
    BuilderContext,
    ImplementerContext,
    parse_builder,
    parse_reviewer,
)
from rtlforge.behave.acquire.round import RoundConfig, read_rollout_log, run_round
from rtlforge.behave.acquire.schedule import TaskSchedule
from rtlforge.behave.acquire.sources import load_library
from rtlforge.behave.acquire.taskpool import TaskPool
from rtlforge.behave.sim.golden import golden_model
from rtlforge.behave.sim.task import load_behave_task
from rtlforge.core.errors import ConfigError

ROLLOUTS = read_rollout_log(EXAMPLE / "rollouts.jsonl")
ACCEPT = '```json\n{"spec_matches_sources": true, "decision": "accept", "notes": "ok"}\n```'
POP_BUILDER_OK = example_answers("popcount", "acquire-builder")[1]
POP_B2_OK = example_answers("popcount", "acquire-implementer")[1]


def _analyst(*sources: str, note: str = "n") -> str:
    picks = [{"source": s, "objective": f"exercise {s}"} for s in sources]
    return "```json\n" + json.dumps({"gaps": [{"name": "g"}], "picks": picks,
                                     "experience": note}) + "\n```"


def _run(tmp_path: Path, script: dict[str, Any] | None = None, *, library: Any = None,
         config: RoundConfig | None = None, record: bool = False) -> tuple[Any, Any]:
    host = acquisition_host()
    if script is None:
        inner = host.create("generator", "scripted", path=str(EXAMPLE / "script.toml"))
    else:
        inner = host.create("generator", "scripted", script=script)
    generator = Recording(inner) if record else inner
    result = run_round(host=host, generator=generator, pool=TaskPool(tmp_path / "pool"),
                       library=library or load_library(SOURCES), rollouts=ROLLOUTS,
                       config=config)
    return result, generator


def test_example_round_repairs_one_candidate_and_rejects_the_other(tmp_path: Path) -> None:
    result, _ = _run(tmp_path)
    assert result.round == 1
    assert result.gaps == ("bit-level loops over a whole word",
                           "priority among simultaneous requests")
    (admitted,) = result.of("admission")
    assert admitted.task_id == "acq001_01_popcount"
    # round 1: B2 (low byte only) disagrees, the reviewer asks for a repair; round 2 agrees
    assert [(a.outcome, a.check_verdict) for a in admitted.attempts] == [
        ("disagree", "fail"), ("accepted", "pass")]
    assert admitted.attempts[0].reviewer is not None
    assert admitted.attempts[0].reviewer.decision == "repair"
    (rejected,) = result.of("rejection")
    assert rejected.candidate == "acq001_02_prio_enc" and rejected.reason == "max_rounds"
    assert [a.outcome for a in rejected.attempts] == ["disagree"] * 3
    assert "after 3 construction-and-review rounds" in rejected.message

    pool = TaskPool(tmp_path / "pool")
    assert pool.task_ids() == ["acq001_01_popcount"]
    task = load_behave_task(pool.tasks_dir / "acq001_01_popcount")
    assert task.top == "popcount16" and "each of the 16 bits" in task.spec
    assert golden_model(task).instance().process({"x": 0xFFFF}) == {"count": 16}
    assert (pool.tasks_dir / "acq001_01_popcount" / "golden.py").read_text() == (
        parse_builder(POP_BUILDER_OK).model)
    # the admitted task joins the RL schedule unseen
    assert TaskSchedule.load(pool.root / "schedule.json").candidates() == [
        "acq001_01_popcount"]
    assert pool.state().rounds_completed == 1
    rows = [json.loads(line) for line in
            (pool.round_dir(1) / "records.jsonl").read_text().splitlines()]
    assert [(r["kind"], r["reason"]) for r in rows] == [("admission", "accepted"),
                                                       ("rejection", "max_rounds")]
    report = (pool.round_dir(1) / "report.html").read_text()
    assert "acq001_02_prio_enc" in report and "max_rounds" in report
    assert "say which set bit wins" in report
    assert len((pool.root / "acquisition.jsonl").read_text().splitlines()) == 2


def test_the_implementer_never_receives_the_sources_or_b1(tmp_path: Path) -> None:
    assert set(ImplementerContext.model_fields) == {"spec", "interface"}
    _, recorder = _run(tmp_path, record=True)
    library = load_library(SOURCES)
    secrets = [library.get("popcount").code, library.get("prio_enc").code]  # type: ignore
    secrets += [parse_builder(t).model for t in example_answers("popcount", "acquire-builder")]
    secrets += [parse_builder(t).model for t in example_answers("prio_enc", "acquire-builder")]
    implementer = [r for r in recorder.requests if r.metadata["stage"] == "implementer"]
    assert len(implementer) == 5  # 2 popcount rounds + 3 prio_enc rounds
    for request in implementer:
        seen = f"{request.system}\n{request.prompt}"
        for secret in secrets:
            for line in secret.splitlines():
                # distinctive lines only: not "pass", not the DSL primer's public lines
                if len(line.strip()) > 12 and line.strip() not in DSL_PRIMER:
                    assert line.strip() not in seen, line
    builders = [r for r in recorder.requests if r.metadata["stage"] == "builder"]
    assert "clears the lowest set bit" in builders[0].prompt  # the source did reach B1's side
    # the role refuses any other context type, so nothing else can be rendered for it
    role = ImplementerRole()
    with pytest.raises(TypeError, match="ImplementerContext"):
        role.acquisition_request(BuilderContext(sources=(), objective="o", gap="",
                                                attempt=1, max_attempts=3))


def test_a_later_round_reads_the_experience_and_refuses_a_duplicate(tmp_path: Path) -> None:
    _run(tmp_path)
    script = {
        "analyst": {"acquire-analyst": [{
            "text": _analyst("popcount", note="second"),
            # the first round's note and its outcome, and the source's use by the pool task
            "when_prompt_contains": ["rollouts fail on loops over all bits",
                                     "admitted acq001_01_popcount from popcount",
                                     "already used by acq001_01_popcount"]}]},
        "popcount": {"acquire-builder": [POP_BUILDER_OK],
                     "acquire-implementer": [POP_B2_OK], "acquire-reviewer": [ACCEPT]},
    }
    result, _ = _run(tmp_path, script)
    assert result.round == 2
    (record,) = result.records
    assert (record.kind, record.reason) == ("rejection", "duplicate_task")
    assert "acq001_01_popcount" in record.message
    assert TaskPool(tmp_path / "pool").task_ids() == ["acq001_01_popcount"]


def test_malformed_builder_answers_are_typed_rejections(tmp_path: Path) -> None:
    good = parse_builder(POP_BUILDER_OK)
    with_id = POP_BUILDER_OK.replace('top = "popcount16"', 'id = "mine"\ntop = "popcount16"')
    bad_model = POP_BUILDER_OK.replace("from rtlforge.behave.model.dsl import *",
                                       "import os")
    script = {"analyst": {"acquire-analyst": [_analyst("popcount")]},
              "popcount": {"acquire-builder": ["I think a popcount is a fine idea.", with_id,
                                               bad_model]}}
    result, _ = _run(tmp_path, script)
    (record,) = result.records
    assert (record.kind, record.reason) == ("rejection", "max_rounds")
    assert [(a.outcome, a.reason) for a in record.attempts] == [
        ("builder_invalid", "missing_block"), ("builder_invalid", "bad_task"),
        ("builder_invalid", "bad_model")]
    assert "['id']" in record.attempts[1].message
    assert "import" in record.attempts[2].message
    assert good.model  # the unmodified answer parses (the mutations made the difference)


def test_a_spec_that_quotes_b1_is_refused(tmp_path: Path) -> None:
    answer = parse_builder(POP_BUILDER_OK)
    leaking = POP_BUILDER_OK.replace("the upper byte included", "as in\n" + answer.model)
    script = {"analyst": {"acquire-analyst": [_analyst("popcount")]},
              "popcount": {"acquire-builder": [leaking]}}
    result, _ = _run(tmp_path, script, config=RoundConfig(max_rounds=1))
    (record,) = result.records
    assert [a.reason for a in record.attempts] == ["spec_leak"]


def test_reviewer_reject_ends_the_candidate_at_once(tmp_path: Path) -> None:
    reject = ('```json\n{"spec_matches_sources": false, "decision": "reject", '
              '"notes": "too trivial"}\n```')
    script = {"analyst": {"acquire-analyst": [_analyst("popcount")]},
              "popcount": {"acquire-builder": [POP_BUILDER_OK] * 2,
                           "acquire-implementer": [POP_B2_OK] * 2,
                           "acquire-reviewer": ["no json here", reject]}}
    result, _ = _run(tmp_path, script)
    (record,) = result.records
    assert (record.kind, record.reason) == ("rejection", "reviewer_rejected")
    # a malformed review is a repair round, not a verdict
    assert [a.outcome for a in record.attempts] == ["reviewer_invalid", "rejected"]
    assert record.attempts[0].reason == "bad_json"


def test_a_generator_failure_is_unresolved_not_a_rejection(tmp_path: Path) -> None:
    script = {"analyst": {"acquire-analyst": [_analyst("popcount")]},
              "popcount": {"acquire-builder": [POP_BUILDER_OK]}}  # no implementer answer
    result, _ = _run(tmp_path, script)
    (record,) = result.records
    assert (record.kind, record.reason) == ("unresolved", "infrastructure")
    assert "implementer" in record.message
    assert TaskPool(tmp_path / "pool").task_ids() == []


def test_analyst_garbage_and_unknown_or_excluded_picks(tmp_path: Path) -> None:
    result, _ = _run(tmp_path, {"analyst": {"acquire-analyst": ["```json\n{oops\n```"]}})
    assert [(r.kind, r.reason) for r in result.records] == [("rejection", "analyst_bad_json")]

    library = tmp_path / "lib"
    shutil.copytree(SOURCES, library)
    tainted = library / "zz_tainted"
    shutil.copytree(SOURCES / "popcount", tainted)
    meta = (tainted / "meta.toml").read_text()
    (tainted / "meta.toml").write_text(
        meta.replace('id = "popcount"', 'id = "tainted"').replace(
            "written for rtlforge", "ported from RTLLM v2, written for rtlforge"))
    (tainted / "reference.py").write_text("def f(x):\n    return bin(x).count('1')\n")
    loaded = load_library(library)
    script = {"analyst": {"acquire-analyst": [_analyst("tainted", "nonesuch")]}}
    result, _ = _run(tmp_path / "second", script, library=loaded)
    got = [(r.kind, r.reason) for r in result.records]
    assert got == [("exclusion", "evaluation_provenance"), ("rejection", "unknown_source"),
                   ("rejection", "unknown_source")]
    assert "excluded" in result.records[1].message
    assert "not in the library" in result.records[2].message


def test_a_role_that_is_not_an_acquisition_role_is_a_config_error(tmp_path: Path) -> None:
    config = RoundConfig(roles={"analyst": "fast", "builder": "acquire-builder",
                                "implementer": "acquire-implementer",
                                "reviewer": "acquire-reviewer"})
    with pytest.raises(ConfigError, match="does not play the acquisition stage"):
        _run(tmp_path, {}, config=config)
    assert not (tmp_path / "pool" / "state.json").exists()


def test_answer_parsers_refuse_ambiguity_and_bad_fields() -> None:
    from rtlforge.behave.acquire.roles import AnswerRejected, parse_analyst

    two = "```python\na\n```\n```python\nb\n```"
    with pytest.raises(AnswerRejected) as info:
        parse_builder("```toml\nx=1\n```\n```markdown\ns\n```\n" + two)
    assert info.value.reason == "ambiguous"
    with pytest.raises(AnswerRejected) as info:
        parse_reviewer('{"spec_matches_sources": "maybe", "decision": "accept"}')
    assert info.value.reason == "bad_fields"
    with pytest.raises(AnswerRejected) as info:
        parse_analyst("x" * 300_000)
    assert info.value.reason == "too_long"
    with pytest.raises(AnswerRejected) as info:
        parse_analyst(None)
    assert info.value.reason == "empty"
    assert parse_reviewer(ACCEPT).decision == "accept"


def test_a_round_killed_after_admitting_is_rerun_cleanly(tmp_path: Path) -> None:
    _run(tmp_path)
    pool = TaskPool(tmp_path / "pool")
    # simulate a kill after the admission but before the round was recorded
    pool.complete_round(0)
    (pool.root / "acquisition.jsonl").unlink()
    result, _ = _run(tmp_path)
    assert result.round == 1
    assert [r.task_id for r in result.of("admission")] == ["acq001_01_popcount"]
    assert pool.task_ids() == ["acq001_01_popcount"]
    assert list(TaskSchedule.load(pool.root / "schedule.json").state.tasks) == [
        "acq001_01_popcount"]
