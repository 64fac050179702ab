"""ExploreRecord: the JSON it writes is the record format the readers of a run have always used."""

from __future__ import annotations

import json
import math

import pytest
from pydantic import ValidationError

from rtlforge.core.interfaces import ArchiveEntry
from rtlforge.core.models import Candidate, Feedback, StageResult, ValidationReport, Verdict
from rtlforge.evaluation.evaluate import PPAMeasure
from rtlforge.explore.models import ExploreRecord
from rtlforge.explore.report import CANDIDATE_FIELDS

#: The keys of one explore record, in the order the engine wrote them before the model existed
#: (and that records.jsonl, candidates.jsonl, the report and the SFT harvester read).
RECORD_KEYS = [
    "explore", "key", "method", "task", "trial", "iteration", "sample", "verdict", "source",
    "completion", "generator", "message", "feedback", "report", "ppa", "golden", "objectives",
    "hvc", "ast_similarity", "ast_status", "ast_backend", "latency_s", "finish_reason",
]

FAIL = Feedback(category="simulation", message="mismatch at t=10", stage="sim")
REPORT = ValidationReport(verdict=Verdict.FAIL, task_id="a/b", stages=(
    StageResult(name="lint", verdict=Verdict.PASS),
    StageResult(name="sim", verdict=Verdict.FAIL, feedback=(FAIL,), metrics={"sim_s": 0.5})))

#: A failing candidate's record exactly as the dict-building engine stored it.
LEGACY_FAILED = {
    "explore": 1, "key": json.dumps(["m", "a/b", 2, 3, 1]), "method": "m", "task": "a/b",
    "trial": 2, "iteration": 3, "sample": 1, "verdict": "fail",
    "source": "module top; endmodule", "completion": "```verilog\nmodule top; endmodule\n```",
    "generator": "replay", "message": "mismatch at t=10",
    "feedback": [FAIL.model_dump(mode="json")], "report": REPORT.model_dump(mode="json"),
    "ppa": None, "golden": {"power": 1.0, "delay": 2.0, "area": 3.0}, "objectives": None,
    "hvc": None, "ast_similarity": 0.25, "ast_status": "parsed", "ast_backend": "pyslang",
    "latency_s": 1.5, "finish_reason": "stop",
}


def passing(**changes: object) -> ExploreRecord:
    fields: dict[str, object] = {
        "key": ExploreRecord.make_key("m", "t", 1, 1, 0), "method": "m", "task": "t",
        "trial": 1, "iteration": 1, "sample": 0, "verdict": Verdict.PASS,
        "source": "module t; endmodule", "completion": "module t; endmodule",
        "generator": "scripted", "report": ValidationReport(verdict=Verdict.PASS, task_id="t"),
        "ppa": PPAMeasure(power=0.5, delay=1.0, area=4.0, cells=7),
        "golden": {"power": 1.0, "delay": 1.0, "area": 2.0},
        "objectives": [2.0, 1.0, 0.5], "hvc": 0.125}
    fields.update(changes)
    return ExploreRecord.model_validate(fields)


def test_key_is_the_json_list_of_its_coordinates() -> None:
    assert ExploreRecord.make_key("m", "a/b", 2, 3, 1) == '["m", "a/b", 2, 3, 1]'


def test_json_dict_has_the_record_keys_in_order() -> None:
    data = passing().to_json_dict()
    assert list(data) == RECORD_KEYS
    assert set(CANDIDATE_FIELDS) <= set(data)
    assert data["verdict"] == "pass" and data["explore"] == 1
    assert data["ppa"] == {"power": 0.5, "delay": 1.0, "area": 4.0, "cells": 7, "error": None}
    assert json.loads(json.dumps(data, allow_nan=False)) == data  # plain JSON


def test_legacy_record_reads_and_writes_back_unchanged() -> None:
    record = ExploreRecord.model_validate(LEGACY_FAILED)
    assert record.verdict is Verdict.FAIL and not record.passed
    assert record.report == REPORT and record.feedback == [FAIL]
    assert record.group == ("m", "a/b", 2, 3)
    assert record.to_json_dict() == LEGACY_FAILED
    assert list(record.to_json_dict()) == list(LEGACY_FAILED)


def test_round_trip_through_json_and_an_archive_entry() -> None:
    record = passing(objectives=[math.inf, 1.0, 0.5], hvc=math.nan)
    entry = ArchiveEntry(task_id="t", candidate=Candidate.from_source("module t; endmodule"),
                         objectives=(math.inf, 1.0, 0.5), verdict="pass",
                         record=record.to_json_dict())
    back = ArchiveEntry.model_validate_json(entry.model_dump_json())
    again = ExploreRecord.model_validate(back.record)
    assert again.objectives == [math.inf, 1.0, 0.5] and again.hvc is not None
    assert math.isnan(again.hvc)
    assert again.model_copy(update={"hvc": None}) == record.model_copy(update={"hvc": None})
    assert ExploreRecord.model_validate(passing().to_json_dict()) == passing()


def test_unknown_keys_and_bad_values_are_rejected() -> None:
    with pytest.raises(ValidationError):
        ExploreRecord.model_validate({**LEGACY_FAILED, "extra": 1})
    with pytest.raises(ValidationError):
        ExploreRecord.model_validate({**LEGACY_FAILED, "verdict": "maybe"})
