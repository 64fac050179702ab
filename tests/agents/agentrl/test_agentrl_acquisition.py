"""Self-improvement on top of the agent trainer: acquisition rounds (scripted roles) grow the
pool the behave-agent trainer draws from, with the paper's schedule; a kill after the round
resumes to the same rollouts, metrics and schedule."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch", reason="the behave-agent trainer needs the [train] extra")
pytest.importorskip("transformers", reason="the behave-agent trainer needs the [train] extra")

from rtlforge.agents.agentrl.trainer import BehaveAgentTrainer
from rtlforge.core.plugins import PluginHost
from rtlforge.trainers.config import create_trainer, parse_config

REPO = Path(__file__).resolve().parents[3]
EXAMPLES = REPO / "examples" / "behave"

pytestmark = [pytest.mark.slow, pytest.mark.tools, pytest.mark.requires_tools("iverilog", "vvp")]


def _config(out: Path, host: PluginHost) -> Any:
    return parse_config({
        "trainer": "behave-agent", "seed": 0, "steps": 4, "out_dir": str(out),
        "model": {"build_tiny": {"hidden": 32, "layers": 1, "heads": 2}, "threads": 1},
        "env": {"kind": "behave", "max_turns": 2, "hidden_sequences": 2,
                "hidden_transactions": 5},
        "tasks": [str(EXAMPLES / "add8"), str(EXAMPLES / "crc")],
        # the tiny tokenizer spends ~6k tokens on the rules and the tool declarations
        "num_generations": 2, "max_new_tokens": 8, "context_window": 8192,
        "executor": "serial",
        "acquisition": {"sources": str(EXAMPLES / "sources"), "generator": "scripted",
                        "generator_options": {"path": str(EXAMPLES / "acquire" / "script.toml")},
                        "updates_per_round": 2, "admit_min": 1},
        "checkpoint": {"resume_from": "latest", "keep": 2}}, host=host)


def _metrics(out: Path) -> list[dict[str, Any]]:
    return [{k: v for k, v in json.loads(line).items() if k != "seconds"}
            for line in (out / "metrics.jsonl").read_text().splitlines()]


def test_acquisition_feeds_the_pool_and_a_kill_resumes(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    host = PluginHost()
    whole = tmp_path / "whole"
    summary = create_trainer(_config(whole, host), host=host).train()
    events = [(m["event"], m["drawn_tasks"] if m["event"] == "update" else m["admitted"])
              for m in _metrics(whole)]
    # By the schedule's rules: the random policy makes no tool call, so nothing is submitted
    # and every group is all-0 and sits out 2 updates (eligible 3 updates later); the
    # scripted round admits popcount, which joins unseen and is drawn first.
    assert events == [
        ("update", ["add8", "crc"]),
        ("update", []),
        ("acquire", ["acq001_01_popcount"]),
        ("update", ["acq001_01_popcount"]),
        ("update", ["add8", "crc"]),
    ]
    assert summary["acquisitions"] == 1 and summary["pool_tasks"] == 3
    rollouts = [json.loads(line) for line in (whole / "rollouts.jsonl").read_text().splitlines()]
    assert [r["task_id"] for r in rollouts] == ["add8"] * 2 + ["crc"] * 2 + [
        "acq001_01_popcount"] * 2 + ["add8"] * 2 + ["crc"] * 2
    assert {r["reward"] for r in rollouts} == {0.0}
    assert {r["feedback"] for r in rollouts} == {"agent_stopped; rtl: missing"}

    killed = tmp_path / "killed"
    original = BehaveAgentTrainer.train_update

    def dies_at_update_3(self: BehaveAgentTrainer, schedule: Any) -> dict[str, Any]:
        if self.step == 3:
            raise KeyboardInterrupt  # after the acquisition and update 2
        return original(self, schedule)

    monkeypatch.setattr(BehaveAgentTrainer, "train_update", dies_at_update_3)
    with pytest.raises(KeyboardInterrupt):
        create_trainer(_config(killed, host), host=host).train()
    monkeypatch.setattr(BehaveAgentTrainer, "train_update", original)
    create_trainer(_config(killed, host), host=host).train()
    assert (killed / "rollouts.jsonl").read_text() == (whole / "rollouts.jsonl").read_text()
    assert _metrics(killed) == _metrics(whole)
    assert (killed / "pool" / "schedule.json").read_text() == (
        whole / "pool" / "schedule.json").read_text()
