"""``trainer: self-improve`` with the tiny random model and scripted acquisition roles: the
schedule across an acquisition, admission resuming training, the GRPO step, a kill."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch", reason="the self-improve trainer needs the [train] extra")
pytest.importorskip("transformers", reason="the self-improve trainer needs the [train] extra")

import rtlforge.agents.acquire.plugin as acquire_plugin
from rtlforge.agents.acquire.selfimprove import SelfImproveTrainer
from rtlforge.core.plugins import PluginHost
from rtlforge.trainers.config import create_trainer, load_config, parse_config
from rtlforge.trainers.errors import TrainerConfigError

REPO = Path(__file__).resolve().parents[3]
EXAMPLES = REPO / "examples" / "behave"

pytestmark = pytest.mark.slow


def _host() -> PluginHost:
    host = PluginHost()
    if "self-improve" in host.names("trainer"):
        return host
    return PluginHost(plugins=[("acquire_roles", acquire_plugin)])


def _config(out: Path, host: PluginHost, **overrides: Any) -> Any:
    data = {
        "trainer": "self-improve", "seed": 0, "steps": 4, "out_dir": str(out),
        "model": {"build_tiny": {"hidden": 32, "layers": 1, "heads": 2}, "threads": 1},
        "tasks": [str(EXAMPLES / "add8"), str(EXAMPLES / "crc")],
        "sources": str(EXAMPLES / "sources"), "generator": "scripted",
        "generator_options": {"path": str(EXAMPLES / "acquire" / "script.toml")},
        "updates_per_round": 2, "admit_min": 1, "num_generations": 2, "max_new_tokens": 8,
        "reward_sequences": 2, "reward_transactions": 5,
        "checkpoint": {"resume_from": "latest", "keep": 2},
        **overrides}
    return parse_config(data, host=host)


def _metrics(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]


def test_train_acquire_admit_continue(tmp_path: Path) -> None:
    host = _host()
    out = tmp_path / "run"
    summary = create_trainer(_config(out, host), host=host).train()
    events = [(m["event"], m["drawn_tasks"] if m["event"] == "update" else m["admitted"])
              for m in _metrics(out)]
    # Hand-computed from the schedule's rules: the random policy scores 0 everywhere, so
    # each drawn group is all-0 and sits out 2 updates (eligible again 3 updates later).
    assert events == [
        ("update", ["add8", "crc"]),  # update 0: both unseen
        ("update", []),  # update 1: both cooling
        ("acquire", ["acq001_01_popcount"]),  # after k = 2 updates; N = 1 admitted: resume
        ("update", ["acq001_01_popcount"]),  # update 2: the admitted task is unseen
        ("update", ["add8", "crc"]),  # update 3: back from the cool-down
    ]
    assert summary["acquisitions"] == 1 and summary["pool_tasks"] == 3
    first = _metrics(out)[0]  # every model is invalid: 0.0, resolved, both means 0
    assert first["reward_mean"] == first["reward_mean_unresolved_zero"] == 0.0
    assert (out / "pool" / "tasks" / "acq001_01_popcount" / "golden.py").is_file()
    rollouts = [json.loads(line) for line in (out / "rollouts.jsonl").read_text().splitlines()]
    assert [r["task_id"] for r in rollouts] == ["add8"] * 2 + ["crc"] * 2 + [
        "acq001_01_popcount"] * 2 + ["add8"] * 2 + ["crc"] * 2
    assert (out / "final").is_dir()


def test_a_killed_run_resumes_to_the_same_result(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    host = _host()
    whole = tmp_path / "whole"
    create_trainer(_config(whole, host), host=host).train()

    killed = tmp_path / "killed"
    original = SelfImproveTrainer.train_update

    def dies_at_update_3(self: SelfImproveTrainer, schedule: Any) -> dict[str, Any]:
        if self.step == 3:
            raise KeyboardInterrupt  # a kill after the acquisition and update 2
        return original(self, schedule)

    monkeypatch.setattr(SelfImproveTrainer, "train_update", dies_at_update_3)
    with pytest.raises(KeyboardInterrupt):
        create_trainer(_config(killed, host), host=host).train()
    monkeypatch.setattr(SelfImproveTrainer, "train_update", original)
    create_trainer(_config(killed, host), host=host).train()

    assert (killed / "rollouts.jsonl").read_text() == (whole / "rollouts.jsonl").read_text()
    assert _metrics(killed) == _metrics(whole)
    assert (killed / "pool" / "schedule.json").read_text() == (
        whole / "pool" / "schedule.json").read_text()
    assert sorted(p.name for p in (killed / "pool" / "tasks").iterdir()) == sorted(
        p.name for p in (whole / "pool" / "tasks").iterdir())


def test_the_update_raises_the_likelihood_of_the_better_completion(tmp_path: Path) -> None:
    """GRPO at one policy iteration: the positive-advantage sample's log-likelihood rises
    relative to the negative one's."""
    import torch

    host = _host()
    trainer = create_trainer(_config(tmp_path / "run", host, learning_rate=0.05),
                             host=host)
    assert isinstance(trainer, SelfImproveTrainer)
    trainer._build()
    sequences, prompt_len, _ = trainer._sample("Write a model.")

    def gap() -> float:
        with torch.no_grad():
            logits = trainer._model(input_ids=sequences).logits[:, prompt_len - 1:-1]
            targets = sequences[:, prompt_len:]
            lp = torch.log_softmax(logits, dim=-1).gather(-1, targets.unsqueeze(-1))
            per_seq = lp.squeeze(-1).mean(dim=1)
        return float(per_seq[0] - per_seq[1])

    before = gap()
    loss = trainer._update([(sequences, prompt_len, [1.0, 0.0])])
    assert loss is not None
    assert gap() > before
    assert trainer._update([]) is None  # no kept group: no step


def test_a_schedule_made_with_other_settings_is_refused(tmp_path: Path) -> None:
    host = _host()
    out = tmp_path / "run"
    create_trainer(_config(out, host, steps=1), host=host).train()
    changed = _config(out, host, steps=2, schedule={"cooldown_all_fail": 5},
                      checkpoint={"resume_from": None})
    with pytest.raises(TrainerConfigError, match="other settings"):
        create_trainer(changed, host=host).train()


def test_the_papers_schedule_and_scoring_reach_the_trainer(tmp_path: Path) -> None:
    """The schedule is the paper's by default (12 drawn, 8 kept, cool-downs 10 and 2);
    ``reward_options`` reach the behave-model reward, so ``preset: paper`` scores with the
    paper's budget and counts unresolved checks as 0."""
    from rtlforge.behave.acquire.schedule import ScheduleConfig

    host = _host()
    config = _config(tmp_path / "run", host, reward_options={"preset": "paper"})
    assert config.schedule == ScheduleConfig()
    assert (config.schedule.oversample, config.schedule.groups_kept) == (12, 8)
    trainer = create_trainer(config, host=host)
    trainer._build()
    scoring = trainer._reward.scoring
    assert (scoring.unresolved, scoring.search_budget_s, scoring.artifact_budget_s) == (
        "zero", 600.0, 1200.0)


def test_the_example_config_validates() -> None:
    config = load_config(REPO / "examples" / "train" / "self-improve-tiny.yaml",
                         host=_host())
    assert config.trainer == "self-improve"
    assert (config.updates_per_round, config.admit_min) == (2, 1)
