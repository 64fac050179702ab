"""The kernel's PPA, objective-vector and history models: one way in, one way out each, and the
joints where two packages hand one of them to each other without converting it."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from pydantic import ValidationError

from rtlforge.core.models import (
    PPA_KEYS,
    HistoryEntry,
    Objectives,
    PPAMeasure,
    PPAResult,
    Verdict,
)

FLAT = {"power": 2.0, "delay": 4.0, "area": 8.0}
UNITS = {"power_mw": 2.0, "delay_ns": 4.0, "area_um2": 8.0}
GOLD = PPAResult(power_mw=4.0, delay_ns=4.0, area_um2=4.0)


# ------------------------------------------------------------------------------ PPAResult


@pytest.mark.parametrize("value", [FLAT, UNITS, json.dumps(FLAT), {**FLAT, "code": "x"},
                                   {"power": 2.0, "delay_ns": 4.0, "area": 8.0}])
def test_ppa_in_from_every_flat_spelling_and_out_as_the_triple(value: object) -> None:
    ppa = PPAResult.from_flat(value)
    assert ppa is not None and ppa.triple() == FLAT
    assert list(ppa.triple()) == list(PPA_KEYS)


def test_ppa_absent_partial_and_malformed() -> None:
    assert PPAResult.from_flat(None) is None and PPAResult.from_flat("  ") is None
    assert PPAResult.from_flat({"code": "x", "power": None}) is None  # no number: no PPA
    with pytest.raises(ValueError, match=r"golden .*area: Field required"):
        PPAResult.from_flat({"power": 1.0, "delay": 1.0}, what="golden")
    assert PPAResult.from_flat({"power": 1.0}, partial_is_absent=True) is None
    with pytest.raises(ValueError, match="not a PPA mapping"):
        PPAResult.from_flat([1.0, 2.0, 3.0])
    assert PPAResult.from_flat({**FLAT, "cells": 7}).cells == 7  # type: ignore[union-attr]


@pytest.mark.parametrize("bad", [0.0, -1.0, math.nan, math.inf])
def test_an_invalid_ppa_is_read_but_not_valid(bad: float) -> None:
    ppa = PPAResult.from_flat({**FLAT, "delay": bad})
    assert ppa is not None and not ppa.valid
    assert PPAResult.from_flat(FLAT).valid  # type: ignore[union-attr]


# ------------------------------------------------------------------------------ PPAMeasure


def test_measure_round_trips_its_flat_form() -> None:
    flat = {"power": 2.0, "delay": 4.0, "area": 8.0, "cells": 3, "error": None}
    measure = PPAMeasure.model_validate(flat)
    assert measure.ppa == PPAResult(power_mw=2.0, delay_ns=4.0, area_um2=8.0, cells=3)
    assert measure.model_dump() == flat
    assert PPAMeasure.model_validate_json(measure.model_dump_json()) == measure


def test_measure_absent_and_infra_states() -> None:
    absent = {"power": None, "delay": None, "area": None, "cells": None, "error": "no path"}
    assert PPAMeasure.model_validate(absent).model_dump() == absent
    infra = PPAMeasure(error="ToolMissingError: sta", infra=True)
    assert infra.model_dump()["infra"] is True and not infra.ok and infra.triple() is None
    with pytest.raises(ValidationError, match="either numbers or an error"):
        PPAMeasure.model_validate({**FLAT, "error": "x"})
    with pytest.raises(ValidationError, match="unknown PPA keys"):
        PPAMeasure.model_validate({**FLAT, "pwr": 1.0})


# ------------------------------------------------------------------------------ Objectives


@pytest.mark.parametrize("value", [[2.0, 1.0, 0.5], (2, 1, 0.5), np.array([2.0, 1.0, 0.5]),
                                   {"objectives": [2.0, 1.0, 0.5]}, {"ratio": [2.0, 1.0, 0.5]}])
def test_objectives_in_from_both_spellings_and_out_as_a_list(value: object) -> None:
    vec = Objectives.parse(value)
    assert vec == (2.0, 1.0, 0.5) and vec == [2.0, 1.0, 0.5]
    assert HistoryEntry(source="c", objectives=vec).model_dump()["ratio"] == [2.0, 1.0, 0.5]


def test_objectives_absent_and_malformed() -> None:
    assert Objectives.parse(None) is None and Objectives.parse({"ratio": None}) is None
    for bad in ([1.0, 2.0], "abc", [True, 1.0, 1.0]):
        with pytest.raises(ValueError, match="not 3 numbers"):
            Objectives.parse(bad)


def test_objectives_of_a_ppa_over_its_golden() -> None:
    gen = PPAResult.from_flat(FLAT)
    assert Objectives.of(gen, GOLD) == (2.0, 1.0, 0.5)
    assert Objectives.of(GOLD, GOLD) == (1.0, 1.0, 1.0)  # exact: no eps
    assert Objectives.of(None, GOLD) is None
    assert Objectives.of(PPAResult.from_flat({**FLAT, "power": 0.0}), GOLD) is None


# ------------------------------------------------------------------------------ HistoryEntry


def test_history_entry_in_from_the_dataset_row_and_out_to_it() -> None:
    row = {"code": "module m; endmodule", **FLAT, "ratio": [2.0, 1.0, 0.5]}
    entry = HistoryEntry.model_validate(row)
    assert entry.source == entry.code == "module m; endmodule"
    assert entry.ppa == PPAResult.from_flat(FLAT) and entry.objectives == (2.0, 1.0, 0.5)
    assert entry.model_dump() == row
    assert json.dumps(entry.model_dump()) == json.dumps(row)  # byte-compatible, key order too


def test_history_entry_spellings() -> None:
    units = HistoryEntry.model_validate({"code": "c", **UNITS, "objectives": [1, 1, 1]})
    assert units.ppa == PPAResult.from_flat(FLAT) and units.objectives == (1.0, 1.0, 1.0)
    assert HistoryEntry.model_validate(PPAResult.from_flat(FLAT)).ppa is not None
    assert HistoryEntry.model_validate([1.0, 2.0, 0.5]).objectives == (1.0, 2.0, 0.5)
    keyword = HistoryEntry(source="s", iteration=2, power=2.0, delay=4.0, area=8.0, cells=3)
    assert keyword.ppa is not None and keyword.ppa.cells == 3 and keyword.has_ppa


def test_history_entry_absent_ppa_and_verdict() -> None:
    failed = HistoryEntry.model_validate({"code": "c", "power": None, "delay": None,
                                          "area": None, "ratio": None})
    assert failed.ppa is None and failed.objectives is None and not failed.has_ppa
    partial = HistoryEntry(source="s", iteration=1, power=1.0, verdict="fail", message="x")
    assert partial.ppa is None and partial.verdict is Verdict.FAIL
    assert partial.model_dump() == {"code": "s", "power": None, "delay": None, "area": None,
                                    "ratio": None, "iteration": 1, "verdict": "fail",
                                    "message": "x"}
    assert HistoryEntry.model_validate(partial.model_dump()) == partial


@pytest.mark.parametrize("entry", [{"pwr": 1}, "text", {"objectives": [1, 2]}, 7,
                                   {"power": 1.0, "delay": 1.0}])
def test_a_malformed_history_entry_is_named(entry: object) -> None:
    with pytest.raises(ValidationError, match="history entry"):
        HistoryEntry.model_validate(entry)


# ------------------------------------------------------------------------------ joints


def test_evaluation_measure_feeds_the_hvc_reward_history_as_is() -> None:
    """evaluation -> rewards: a measured PPA is a history entry and a golden, unconverted."""
    from rtlforge.rewards.columns import history_objectives

    cand = PPAMeasure.model_validate({**FLAT, "cells": 1, "error": None})
    gold = PPAMeasure(ppa=GOLD)
    got = history_objectives([cand.ppa], gold.ppa)
    assert got.tolist() == [[2.0, 1.0, 0.5]]


def test_reward_detail_becomes_a_rollout_and_the_next_dataset_history() -> None:
    """rewards -> trainers -> rewards: the detail's PPA and objectives go into a rollout, the
    rollout's history entry into a dataset row, which the reward reads back as it was."""
    from rtlforge.rewards.base import RewardDetail
    from rtlforge.rewards.columns import parse_history
    from rtlforge.trainers.datasets import Rollout

    ppa = PPAResult.from_flat(FLAT)
    detail = RewardDetail(task_id="t", reward=1.0, verdict=Verdict.PASS, ppa=ppa,
                          objectives=Objectives.of(ppa, GOLD))
    rollout = Rollout(task_id="t", history="[]", code="c", reward=1.0, passed=True,
                      ppa=detail.ppa, objectives=detail.objectives)
    assert Rollout.model_validate(rollout.model_dump()) == rollout  # the checkpoint round trip
    column = json.dumps([rollout.entry().model_dump()])
    [entry] = parse_history(column)
    assert entry == rollout.entry() and entry.ppa == ppa and entry.objectives == (2.0, 1.0, 0.5)


def test_explore_record_objectives_and_golden_serialise_flat() -> None:
    """explore -> metrics: a record carries the kernel models and writes the old flat keys."""
    from rtlforge.core.models import ValidationReport
    from rtlforge.explore.models import ExploreRecord

    ppa = PPAResult.from_flat({**FLAT, "cells": 5})
    record = ExploreRecord(
        key=ExploreRecord.make_key("m", "t", 1, 1, 0), method="m", task="t", trial=1,
        iteration=1, sample=0, verdict=Verdict.PASS,
        report=ValidationReport(verdict=Verdict.PASS), ppa=PPAMeasure(ppa=ppa),
        golden=GOLD, objectives=Objectives.of(ppa, GOLD))
    data = record.to_json_dict()
    assert data["golden"] == GOLD.triple() and data["objectives"] == [2.0, 1.0, 0.5]
    assert data["ppa"] == {**FLAT, "cells": 5, "error": None}
    assert ExploreRecord.model_validate(data) == record
