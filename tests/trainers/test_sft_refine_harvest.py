"""Trajectory harvesting from ``rtlforge refine`` run directories (results.jsonl, written here
by hand in the format docs/refine.md documents)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rtlforge.trainers.errors import TrainerInfraError
from rtlforge.trainers.sft import TrajectoryData, harvest

ROOT = Path(__file__).resolve().parents[2]
TASKS = ROOT / "examples" / "tasks"
MUX_CODE = ("module mux4(input [1:0] sel, input [7:0] a, b, c, d, output reg [7:0] y);\n"
            "  always @* case (sel) 2'd0: y = a; 2'd1: y = b; 2'd2: y = c; default: y = d;"
            " endcase\nendmodule\n")


def _line(task_id: str, verdict: str, code: str | None) -> str:
    """One results.jsonl line as refine writes it (a SolveResult dump; only the fields the
    harvester reads matter, the rest is there to show it is ignored)."""
    rec: dict[str, object] = {"task_id": task_id, "verdict": verdict, "iterations": 2,
                              "llm_calls": 2, "tokens": 300, "agents": ["fast", "debug"],
                              "tiers": ["router", "router"], "records": []}
    if code is not None:
        rec["candidate"] = {"files": [{"name": "design.v", "content": code}], "top": None,
                            "task_id": task_id}
    return json.dumps(rec)


def _run_dir(root: Path, lines: list[str], torn: str = "") -> Path:
    root.mkdir(parents=True)
    (root / "results.jsonl").write_text("\n".join(lines) + "\n" + torn, encoding="utf-8")
    return root


def test_refine_runs_give_passing_designs_deduplicated(tmp_path: Path) -> None:
    first = _run_dir(tmp_path / "a", [
        _line("mux4", "pass", MUX_CODE),
        _line("add8_carry", "fail", "module add8_carry(); endmodule"),  # failing: not kept
        _line("nope", "pass", "module nope(); endmodule"),  # no such task
    ], torn='{"task_id": "mux4", "verd')  # a killed run's torn last line
    # the same design again with other whitespace, in a second run: one trajectory
    second = _run_dir(tmp_path / "b", [_line("mux4", "pass", MUX_CODE.replace("  ", "    "))])
    data = TrajectoryData(kind="trajectories", tasks=str(TASKS),
                          refine_runs=(str(first), str(second)), chat=False)
    rows, stats = harvest(data)
    assert (stats.seen, stats.passing, stats.unknown_task, stats.duplicates) == (4, 3, 1, 1)
    assert stats.kept == 1 == len(rows)
    assert "mux4" in rows[0]["prompt"]
    assert rows[0]["completion"] == f"```verilog\n{MUX_CODE.strip()}\n```"
    assert stats.per_source == {str(first / "results.jsonl"): 1}


def test_refine_run_without_results_is_an_infra_error(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    data = TrajectoryData(kind="trajectories", tasks=str(TASKS),
                          refine_runs=(str(tmp_path / "empty"),))
    with pytest.raises(TrainerInfraError, match=r"no results\.jsonl"):
        harvest(data)


def test_refine_run_with_no_pass_finds_nothing(tmp_path: Path) -> None:
    run = _run_dir(tmp_path / "r", [_line("mux4", "fail", MUX_CODE), _line("mux4", "error", None)])
    with pytest.raises(TrainerInfraError, match="no passing candidates"):
        harvest(TrajectoryData(kind="trajectories", tasks=str(TASKS), refine_runs=(str(run),)))
