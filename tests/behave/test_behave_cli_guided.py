"""`rtlforge behave check/check-model --guided` (the default): the JSON keys it adds, the
baseline verdict kept apart, and `--no-guided` giving the old report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from rtlforge.behave.cli import behave

pytest.importorskip("z3")

LOCK = Path(__file__).resolve().parents[2] / "examples" / "behave" / "magic_lock"
SMALL = ["--sequences", "5", "--transactions", "40", "--solve-budget", "10"]


def _run(*args: str | Path) -> tuple[int, dict]:
    result = CliRunner().invoke(behave, [str(a) for a in args])
    return result.exit_code, json.loads(result.output)


def test_check_model_guided_json_keeps_the_old_keys() -> None:
    task = LOCK
    code, data = _run("check-model", task / "golden.py", "--task", task, "--json", *SMALL)
    assert code == 0 and data["verdict"] == "pass" and data["baseline"]["verdict"] == "pass"
    goals = data["goals"]
    assert {"total", "hit", "unresolved", "bounded_unreachable", "steps", "solver"} <= set(goals)
    assert goals["total"] == 4 and len(goals["hit"]) == 4 and goals["unresolved"] == []
    assert goals["by_kind"]["golden.branch"]["sequences_added"] == 2
    assert data["guided"]["sequences_added"] == 2 and data["guided"]["solver"] == "z3"
    assert all(q["status"] == "hit" for q in data["guided"]["queries"])


def test_no_guided_is_the_baseline_report() -> None:
    task = LOCK
    code, data = _run("check-model", task / "golden.py", "--task", task, "--json",
                      "--no-guided", *SMALL)
    assert code == 0 and "guided" not in data and "baseline" not in data
    assert len(data["goals"]["unresolved"]) == 2  # the magic-value branches: reachable


@pytest.mark.tools
@pytest.mark.requires_tools("iverilog", "vvp")
def test_check_guided_fails_the_mutant_and_reports_the_baseline() -> None:
    task = LOCK
    code, data = _run("check", task / "wrong_stuck.v", "--task", task, "--json", *SMALL)
    assert code == 1 and data["verdict"] == "fail"
    assert data["baseline"]["verdict"] == "pass"
    assert data["first_failure"]["inputs"] == {"code": 0xBEEF}


def test_the_paper_preset_sets_the_papers_scoring_budget() -> None:
    """``--preset paper`` searches up to 600 s (BEHAVE Appendix D.2) instead of our 1 s; an
    explicit --solve-budget still wins. The CLI's preset values are PAPER_SCORING's."""
    from rtlforge.behave.cli import _PRESETS
    from rtlforge.behave.sim.guided import PAPER_SCORING

    assert _PRESETS["paper"] == (PAPER_SCORING.budget_s, PAPER_SCORING.artifact_budget_s,
                                 PAPER_SCORING.artifact_budget_s)
    assert _PRESETS["fast"] == (1.0, None, 120.0)
    small = ["--sequences", "5", "--transactions", "40"]
    model = ("check-model", LOCK / "golden.py", "--task", LOCK, "--json", *small)
    assert _run(*model)[1]["guided"]["budget_s"] == 1.0
    code, data = _run(*model, "--preset", "paper")
    assert code == 0 and data["guided"]["budget_s"] == 600.0
    assert data["guided"]["sequences_added"] == 2  # done in milliseconds, not 600 s
    assert _run(*model, "--preset", "paper", "--solve-budget", "3")[1]["guided"]["budget_s"] == 3
