"""The one validated parse of PPA-bearing reward columns (docs/rewards.md: history, golden_ppa)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rtlforge.core.models import HistoryEntry, PPAResult
from rtlforge.rewards.columns import history_objectives, parse_history, parse_ppa

RAW = {"power": 2.0, "delay": 4.0, "area": 8.0}


@pytest.mark.parametrize("value", [
    RAW, {"power_mw": 2.0, "delay_ns": 4.0, "area_um2": 8.0}, json.dumps(RAW),
    PPAResult(power_mw=2.0, delay_ns=4.0, area_um2=8.0), {**RAW, "code": "x", "ratio": None},
])
def test_every_documented_spelling_reads_the_same(value: object) -> None:
    ppa = parse_ppa(value)
    assert ppa is not None and ppa.triple() == RAW


def test_absent_is_none_and_malformed_says_why() -> None:
    assert parse_ppa(None) is None and parse_ppa("  ") is None
    with pytest.raises(ValueError, match=r"golden_ppa .*area: Field required"):
        parse_ppa({"power": 1.0, "delay": 1.0}, what="golden_ppa")
    with pytest.raises(ValueError, match="not a PPA mapping"):
        parse_ppa([1.0, 2.0, 3.0])


def test_history_entries_of_each_shape() -> None:
    history = json.dumps([RAW, [1.0, 2.0, 0.5], {"code": "module m; endmodule"},
                          {"code": "c", "objectives": [1, 1, 1]}])
    items = parse_history(history)
    assert items[0] == HistoryEntry(ppa=PPAResult.model_validate(RAW))
    assert items[1].objectives == (1.0, 2.0, 0.5) and items[1].ppa is None
    assert items[2].code == "module m; endmodule" and items[2].ppa is None
    assert items[3].code == "c" and items[3].objectives == (1.0, 1.0, 1.0)


@pytest.mark.parametrize("entry", [{"pwr": 1}, "text", {"objectives": [1, 2]}, 7])
def test_a_malformed_history_entry_is_named(entry: object) -> None:
    with pytest.raises(ValueError, match="history entry"):
        parse_history([entry])


def test_history_objectives_normalise_raw_ppa_by_the_golden() -> None:
    golden = {"power": 4.0, "delay": 4.0, "area": 4.0}
    got = history_objectives([RAW, [0.5, 0.5, 0.5], [-1.0, 1.0, 1.0]], golden)
    # raw (2, 4, 8) against golden 4 gives (4/2, 4/4, 4/8); the negative vector is dropped
    assert got.shape == (2, 3)
    assert np.allclose(got[1], [0.5, 0.5, 0.5])
    assert np.allclose(got[0], [2.0, 1.0, 0.5], rtol=1e-6)
