"""GRPO trainer: presets, dataset reconstruction, the r<0 filter, None exclusion, learning.

Tests of the generation loop run a sequential preset with two or more generations; tests of
something else (None exclusion, logging, learning, μ-reuse resume) train history-free prompts in
one generation (``sequential: false``), so nothing but the point under test varies.

The model-driven tests use the tiny offline model on the constrained "choice" task: the
completion is one label (A-D) that :class:`RolloutReward` maps to one of four recorded
``seq_det_1011`` circuits (examples/explore/recorded.jsonl), which the real sequential-HVC
reward then validates (iverilog) and measures (yosys + OpenSTA, bundled generic liberty).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any, ClassVar

import pytest

from rtlforge.core.interfaces import Reward
from rtlforge.tasks.loader import load_tasks
from rtlforge.testing import requires_tools
from rtlforge.trainers.config import parse_config
from rtlforge.trainers.datasets import (
    Rollout,
    area_delay_correlation,
    best_per_group,
    history_key,
    history_length_mix,
    initial_rows,
    make_row,
    negative_tradeoff_tasks,
    reconstruct,
)
from rtlforge.trainers.errors import TrainerConfigError
from rtlforge.trainers.grpo import PRESETS, GRPOConfig, group_stats

ROOT = Path(__file__).resolve().parents[2]
TASKS = ROOT / "examples" / "tasks"
RECORDED = ROOT / "examples" / "explore" / "recorded.jsonl"
CHOICE = {"task_id": "seq_det_1011", "recorded": str(RECORDED),
          "variants": {"A": "seq_gray", "B": "seq_onehot", "C": "seq_err", "D": "seq_shift"}}


def _config(tmp: Path, **over: Any) -> GRPOConfig:
    data: dict[str, Any] = {
        "trainer": "grpo", "seed": 0, "out_dir": str(tmp), "steps": 5,
        "model": {"build_tiny": {}}, "tasks": str(TASKS), "choice": CHOICE,
        "num_generations": 8, "max_completion_length": 1, "learning_rate": 3e-3, "beta": 0.0,
    }
    data.update(over)
    return GRPOConfig.model_validate(data)


@pytest.fixture(scope="module")
def tasks() -> dict[str, Any]:
    return {t.id: t for t in load_tasks(TASKS)}


# ------------------------------------------------------------------------------ presets


SEQUENTIAL = ["seq-tb", "seq-tb-ppa", "seq-hvc", "repetition-penalty", "paper"]


# generations: the paper's method needs histories of up to 4 circuits, i.e. 5 generations
@pytest.mark.parametrize(("baseline", "reward", "template", "sequential", "generations"), [
    ("single-objective-ppa", "testbench+ppa", "spec", False, 1),
    ("seq-tb", "testbench", "pareto", True, 5),
    ("seq-tb-ppa", "testbench+ppa", "pareto", True, 5),
    ("seq-hvc", "sequential-hvc", "pareto", True, 5),
    ("repetition-penalty", "repetition-penalty", "pareto", True, 5),
    ("paper", "sequential-hvc", "paper", True, 5),
])
def test_presets(tmp_path: Path, baseline: str, reward: str, template: str, sequential: bool,
                 generations: int) -> None:
    cfg = _config(tmp_path, baseline=baseline, choice=None)
    assert cfg.reward_name == reward
    assert cfg.preset.sequential is sequential and cfg.is_sequential is sequential
    assert cfg.template_name == template
    assert cfg.generations == generations  # not set in the config: the preset's default
    assert PRESETS[baseline].doc


def test_default_baseline_is_sequential_with_five_generations(tmp_path: Path) -> None:
    data = {"trainer": "grpo", "steps": 5, "model": {"build_tiny": {}}, "tasks": str(TASKS)}
    cfg = GRPOConfig.model_validate(data)
    assert (cfg.baseline, cfg.generations, cfg.max_history) == ("seq-hvc", 5, 5)
    # an explicit null is "unset", an explicit number wins
    assert GRPOConfig.model_validate({**data, "generations": None}).generations == 5
    assert GRPOConfig.model_validate({**data, "generations": 3}).generations == 3


def test_preset_overrides_and_checks(tmp_path: Path) -> None:
    cfg = _config(tmp_path, baseline="seq-tb", reward="sequential-hvc", template="spec")
    assert (cfg.reward_name, cfg.template_name) == ("sequential-hvc", "spec")
    with pytest.raises(ValueError, match="generations must be 1"):
        _config(tmp_path, baseline="single-objective-ppa", generations=2, steps=4)
    with pytest.raises(ValueError):
        _config(tmp_path, bogus=1)


@pytest.mark.parametrize("baseline", SEQUENTIAL)
def test_sequential_preset_refuses_one_generation(tmp_path: Path, baseline: str) -> None:
    with pytest.raises(ValueError, match=rf"baseline '{baseline}' is sequential: generations "
                                         r"must be at least 2, got 1\..*sequential: false"):
        _config(tmp_path, baseline=baseline, generations=1)
    # the explicit override: history-free prompts, one generation, the preset's reward
    flat = _config(tmp_path, baseline=baseline, sequential=False)
    assert (flat.generations, flat.is_sequential) == (1, False)
    assert flat.reward_name == PRESETS[baseline].reward
    with pytest.raises(ValueError, match=r"\(sequential: false\) has no circuit history: "
                                         "generations must be 1, got 2"):
        _config(tmp_path, baseline=baseline, sequential=False, generations=2)


def test_sequential_override_on_a_history_free_preset(tmp_path: Path) -> None:
    cfg = _config(tmp_path, baseline="single-objective-ppa", sequential=True)
    assert (cfg.generations, cfg.is_sequential) == (5, True)
    with pytest.raises(ValueError, match="is sequential: generations must be at least 2"):
        _config(tmp_path, baseline="single-objective-ppa", sequential=True, generations=1)
    with pytest.raises(ValueError, match="Input should be a valid boolean"):
        _config(tmp_path, sequential="false")  # a string is not silently truthy


def test_few_steps_without_generations_names_the_preset_default() -> None:
    data = {"trainer": "grpo", "steps": 2, "model": {"build_tiny": {}}, "tasks": str(TASKS)}
    with pytest.raises(TrainerConfigError) as err:
        parse_config(data, origin="cfg.yaml")  # what `rtlforge train` reports (exit code 2)
    msg = str(err.value)
    assert "steps (2) must be at least generations (5, the 'seq-hvc' preset's default)" in msg
    assert "Raise steps, or set generations" in msg
    explicit = {**data, "generations": 3}
    with pytest.raises(TrainerConfigError, match=r"steps \(2\) must be at least generations "
                                                 r"\(3\): every generation"):
        parse_config(explicit)
    assert parse_config({**data, "generations": 2}).generations == 2  # type: ignore[attr-defined]


def test_paper_preset_fixes_the_papers_choices(tmp_path: Path) -> None:
    cfg = _config(tmp_path, baseline="paper", choice=None)
    preset = cfg.preset
    assert (cfg.reward_name, cfg.template_name, cfg.generations) == ("sequential-hvc", "paper", 5)
    assert preset.reward_kwargs == {"hvc_cap": 3.0}  # 1[pass] + clip(HVC, 0, 3)
    assert (cfg.max_history, cfg.per_length_cap) == (5, 1000)  # histories up to 4; cap 1,000
    assert (cfg.loss_type, cfg.scale_rewards) == ("grpo", "group")
    # an explicit setting still wins (and is then no longer the paper's)
    assert _config(tmp_path, baseline="paper", choice=None, max_history=4).max_history == 4


def test_trl_args_map_paper_quantities(tmp_path: Path) -> None:
    from rtlforge.trainers.grpo import GRPOTrainer

    cfg = _config(tmp_path, choice=None, beta=0.04, epsilon=0.2, num_iterations=2,
                  prompts_per_step=3)
    args = GRPOTrainer(cfg).trl_args(5)
    assert args.num_generations == 8 and args.per_device_train_batch_size == 24
    assert (args.beta, args.epsilon, args.num_iterations) == (0.04, 0.2, 2)
    assert (args.loss_type, args.scale_rewards) == ("grpo", "group")
    assert args.max_steps == 5 and args.steps_per_generation == 1


def test_plugin_import_does_not_import_torch() -> None:
    code = ("import sys, rtlforge.trainers.grpo, rtlforge.trainers.datasets; "
            "print('torch' in sys.modules, 'trl' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=ROOT)
    assert out.stdout.split() == ["False", "False"]


# ------------------------------------------------------------------------------ group stats


def test_group_stats_zero_signal_and_none() -> None:
    rewards = [1.0, 1.0, 1.0, 1.0,  # all equal: no signal
               None, 2.0, 1.0, None,  # signal among the scored ones
               None, None, None, 3.0]  # one scored member: no signal
    codes = ["a", "a", "b", None, "x", "y", "y", "z", None, None, None, "q"]
    s = group_stats(rewards, codes, 4)
    assert s["groups"] == 3 and s["zero_signal_groups"] == 2 and s["abstained"] == 5
    assert s["unique_circuits"] == pytest.approx((2 + 3 + 1) / 3)


# ------------------------------------------------------------------------------ reconstruction


def _r(task: str, history: Any, code: str, obj: tuple[float, float, float] | None,
       reward: float | None = 1.0, passed: bool = True) -> Rollout:
    ppa = {"power": 1.0 / obj[0], "delay": 1.0 / obj[1], "area": 1.0 / obj[2]} if obj else None
    return Rollout(task_id=task, history=history_key(history), code=code, reward=reward,
                   passed=passed, ppa=ppa, objectives=obj)


def _code(i: int) -> str:
    return f"module m{i}(input a, output y); assign y = a; endmodule"


class _TableReward:
    """A reward given as a table: (history, label text) -> reward."""

    def __init__(self, table: dict[tuple[str, str], float | None]) -> None:
        self.table = table

    def score(self, prompts: list[str], completions: list[str], **columns: Any) -> list:
        return [self.table[(h, c)] for h, c in zip(columns["history"], completions, strict=True)]


def test_choice_oracle_scores_every_label_against_each_history() -> None:
    from rtlforge.trainers.grpo import RolloutReward

    # Hand-computed: with an empty history B (2.23) beats A (2.0); once B is in the history,
    # repeating it adds no hypervolume (1.0) and A is best (1.5).
    table = {("[]", "A-code"): 2.0, ("[]", "B-code"): 2.23,
             ('["B"]', "A-code"): 1.5, ('["B"]', "B-code"): 1.0}
    oracle = object.__new__(RolloutReward)
    oracle._choice_texts = {"A": "A-code", "B": "B-code"}
    oracle._reward = _TableReward(table)  # type: ignore[assignment]  # the built reward
    histories = ["[]", "[]", '["B"]', '["B"]', '["B"]']
    rewards = [2.0, 2.23, 1.0, 1.5, None]  # the last one abstained: not counted
    stats = oracle._choice_oracle([""] * 5, {"history": histories}, ["t"] * 5, histories,
                                  rewards)
    assert stats["choice_optimal_rate"] == pytest.approx(2 / 4)
    assert stats["choice_regret"] == pytest.approx((0.23 + 0.0 + 0.5 + 0.0) / 4)


def test_best_per_group_keeps_highest_hvc() -> None:
    hist = [{"code": _code(0), "power": 1, "delay": 1, "area": 1, "ratio": [1.0, 1.0, 1.0]}]
    rolls = [
        _r("t", hist, _code(1), (0.9, 0.9, 0.9)),  # dominated: HVC 0
        _r("t", hist, _code(2), (1.0, 1.5, 1.0)),  # HVC 0.5
        _r("t", hist, _code(3), (2.0, 1.0, 1.0)),  # HVC 1.0 -> best
        _r("t", hist, _code(4), (5.0, 5.0, 5.0), passed=False),  # failed: never kept
        _r("t", hist, _code(5), (9.0, 9.0, 9.0), reward=None),  # abstained: never kept
        _r("t", [], _code(6), None),  # another group, no PPA (testbench reward)
    ]
    best = best_per_group(rolls)
    assert best[("t", history_key(hist))].code == _code(3)
    assert best[("t", history_key([]))].code == _code(6)


def test_history_length_mix_counts_rows_by_history_length() -> None:
    rows = [{"history_len": n} for n in (0, 0, 2, 1, 4, 2, 0)]
    assert history_length_mix(rows) == [3, 1, 2, 0, 1]
    assert history_length_mix([]) == [0, 0, 0, 0, 0]
    assert history_length_mix(rows, max_history=3) == [3, 1, 2, 0, 1]  # grows, never drops


def test_reconstruct_rules(tasks: dict[str, Any]) -> None:
    task = tasks["mux4"]
    original = initial_rows([task], "pareto")
    assert original[0]["history_len"] == 0 and "No previous circuit." in json.dumps(original)

    def entry(i: int) -> dict[str, Any]:
        return {"code": _code(i), "power": 1.0, "delay": 1.0, "area": 1.0,
                "ratio": [1.0 + i, 1.0, 1.0]}

    h4 = [entry(i) for i in range(4)]
    current = [*original, make_row(task, h4, "pareto", born=1)]
    rolls = [_r("mux4", [], _code(10), (1.0, 2.0, 1.0)), _r("mux4", [], _code(11), (1.0, 1.0, 1.0)),
             _r("mux4", h4, _code(12), (1.0, 3.0, 1.0))]
    new = reconstruct(original, current, rolls, tasks, "pareto", generation=1)
    lengths = sorted(r["history_len"] for r in new)
    # the length-4 row's extension reached 5 and was dropped (the row itself stays in the pool);
    # the original is back; the empty-history group grew a length-1 row
    assert lengths == [0, 1, 4]
    grown = next(r for r in new if r["history_len"] == 1)
    hist = json.loads(grown["history"])
    assert hist[0]["code"] == _code(10) and hist[0]["ratio"] == [1.0, 2.0, 1.0]
    assert grown["born"] == 2 and "## Circuit history" in grown["prompt"][-1]["content"]
    assert "delay = 0.5 ns" in grown["prompt"][-1]["content"]


def test_reconstruct_caps_per_length_dropping_oldest(tasks: dict[str, Any]) -> None:
    task = tasks["mux4"]
    original = initial_rows([task], "pareto")
    old = [make_row(task, [{"code": _code(i), "power": 1, "delay": 1, "area": 1,
                            "ratio": [1, 1, 1]}], "pareto", born=b)
           for i, b in ((1, 1), (2, 2), (3, 3))]
    rolls = [_r("mux4", [], _code(20), (2.0, 1.0, 1.0))]
    new = reconstruct(original, [*original, *old], rolls, tasks, "pareto", generation=3,
                      per_length_cap=2)
    ones = [r for r in new if r["history_len"] == 1]
    assert len(ones) == 2
    kept = {json.loads(r["history"])[0]["code"] for r in ones}
    assert kept == {_code(3), _code(20)}  # born 1 and 2 dropped, newest kept
    assert new[0] == original[0]


def test_reconstruct_default_cap_is_1000(tasks: dict[str, Any]) -> None:
    task = tasks["mux4"]
    original = initial_rows([task], "pareto")
    row = make_row(task, [{"code": _code(1), "power": 1, "delay": 1, "area": 1}], "pareto")
    current = [dict(row, born=i) for i in range(1005)]
    new = reconstruct(original, current, [], tasks, "pareto", generation=5)
    ones = [r for r in new if r["history_len"] == 1]
    assert len(ones) == 1000 and min(r["born"] for r in ones) == 5


# ------------------------------------------------------------------------------ r < 0 filter


def test_area_delay_correlation_filter() -> None:
    trade = [{"area": a, "delay": d, "power": 1.0} for a, d in ((1, 4), (2, 3), (3, 2), (4, 1))]
    same = [{"area": a, "delay": a, "power": 1.0} for a in (1, 2, 3, 4)]
    flat = [{"area": 1, "delay": 2, "power": 1.0}] * 5
    assert area_delay_correlation(trade) == pytest.approx(-1.0)
    assert area_delay_correlation(same) == pytest.approx(1.0)
    assert area_delay_correlation(flat) is None  # one distinct point
    assert area_delay_correlation([*trade[:2], {"area": 0, "delay": 1, "power": 1}]) is None
    chosen = negative_tradeoff_tasks({"trade": trade, "same": same, "flat": flat})
    assert chosen == ["trade"]


# ------------------------------------------------------------------------------ with the model


class _ByLabel(Reward):
    """A fake reward: a fixed score per chosen label from a table (None: abstain)."""

    name: ClassVar[str] = "by-label"

    def __init__(self, texts: dict[str, str], table: dict[str, float | None]) -> None:
        self.of_text = {v: table[k] for k, v in texts.items()}
        self.default = table.get("", 0.0)  # an unknown label (e.g. end-of-sequence sampled)

    def score(self, prompts: Any, completions: Any, **columns: Any) -> list[float | None]:
        return [self.of_text.get(c, self.default) for c in completions]


def _trainer(tmp: Path, table: dict[str, float | None] | None = None, **over: Any) -> Any:
    import torch

    from rtlforge.trainers.grpo import GRPOTrainer

    torch.set_num_threads(1)
    trainer = GRPOTrainer(_config(tmp, **over))
    if table is not None:
        fn = trainer.reward_function()
        fn._reward = _ByLabel(fn._choice_texts or {}, table)
    return trainer


@pytest.mark.slow
def test_none_rewards_excluded_from_advantages(tmp_path: Path) -> None:
    trainer = _trainer(tmp_path, {"A": None, "B": None, "C": 0.0, "D": 2.0}, steps=1,
                       sequential=False)
    trainer.train()
    trl = trainer._trl
    rewards = list(trl._logs["rewards"]["sequential-hvc"])
    adv = list(trl._logs["advantages"])
    assert len(rewards) == 8
    scored = [r for r in rewards if r == r]  # NaN != NaN: None arrived as NaN
    assert len(scored) < 8, "the seed should sample at least one abstaining label"
    import numpy as np

    mean, std = float(np.mean(scored)), float(np.std(scored, ddof=1))
    for r, a in zip(rewards, adv, strict=True):
        expected = 0.0 if r != r else (r - mean) / (std + 1e-4)
        assert a == pytest.approx(expected, abs=1e-4)
    line = json.loads((tmp_path / "metrics.jsonl").read_text().splitlines()[0])
    assert line["reward_mean"] == pytest.approx(mean, abs=1e-5)
    assert line["abstained"] == 8 - len(scored)


@pytest.mark.slow
def test_zero_signal_groups_logged(tmp_path: Path) -> None:
    trainer = _trainer(tmp_path, {"A": 1.0, "B": 1.0, "C": 1.0, "D": 1.0, "": 1.0},
                       steps=2, sequential=False, prompts_per_step=2, repeat=2)
    trainer.train()
    lines = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [x["step"] for x in lines] == [1, 2]
    assert all(x["zero_signal_groups"] == 2 and x["groups"] == 2 for x in lines)
    assert all(x["reward_std"] == 0 for x in lines)


@pytest.mark.slow
@requires_tools("iverilog", "yosys", "sta")
def test_learns_to_pick_better_circuits(tmp_path: Path) -> None:
    """Real HVC reward: Gray FSM 2.0, one-hot FSM 2.23, syntax error 0, shift register 1.73.

    History-free prompts (``sequential: false``), so these rewards stay fixed while it learns.
    """
    trainer = _trainer(tmp_path, steps=12, prompts_per_step=2, repeat=2, sequential=False)
    summary = trainer.train()
    lines = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [x["step"] for x in lines] == list(range(1, 13)) and summary["steps"] == 12
    start = sum(x["reward_mean"] for x in lines[:3]) / 3
    end = sum(x["reward_mean"] for x in lines[-3:]) / 3
    print(f"mean reward: first 3 steps {start:.3f}, last 3 steps {end:.3f}")
    assert end > start + 0.3
    assert lines[-1]["pass_rate"] >= lines[0]["pass_rate"]
    assert all(x["hvc_mean"] is not None for x in lines)


@pytest.mark.slow
def test_generations_rebuild_dataset_and_resume(tmp_path: Path) -> None:
    trainer = _trainer(tmp_path, steps=2, generations=2)
    trainer.train()
    lengths = sorted(r["history_len"] for r in trainer.rows)
    assert lengths == [0, 1]  # the original prompt plus its best circuit appended
    trainer.save(tmp_path / "ckpt")
    again = _trainer(tmp_path / "second", steps=2, generations=2)
    again.resume(tmp_path / "ckpt")
    assert again.step == 2 and again.generation == 2 and again.rows == trainer.rows
    import torch

    for (n, a), (_, b) in zip(trainer._trl.model.named_parameters(),
                              again._trl.model.named_parameters(), strict=True):
        assert torch.equal(a, b), n


@pytest.mark.slow
@requires_tools("iverilog", "yosys", "sta")
def test_history_mix_recorded_per_generation(tmp_path: Path,
                                             caplog: pytest.LogCaptureFixture) -> None:
    """Three generations of one step with the real HVC reward: the mix each generation logs
    and records is the count, by history length, of the rows TRL actually trained on."""
    import logging
    from collections import Counter

    from rtlforge.trainers.metrics import read_metrics

    trainer = _trainer(tmp_path, steps=3, generations=3)
    trainer._setup()
    trl = trainer._trl
    seen: list[list[int]] = []  # each generation's dataset, as TRL gets it
    inner = trl.train

    def train(*args: Any, **kwargs: Any) -> Any:
        seen.append(list(trl.train_dataset["history_len"]))
        return inner(*args, **kwargs)

    trl.train = train
    with caplog.at_level(logging.INFO, logger="rtlforge.trainers.grpo"):
        summary = trainer.train()
    assert len(seen) == 3
    expected = []
    for lengths in seen:  # the oracle: count the dataset's rows by hand
        counts = Counter(lengths)
        expected.append([counts.get(k, 0) for k in range(5)])
    # generation 0 is the history-free original; each later one gained the best circuit of a
    # group, so the run is sequential: some prompts of generations 1 and 2 carry a history
    assert expected[0] == [1, 0, 0, 0, 0]
    assert all(sum(e[1:]) >= 1 for e in expected[1:])
    assert sum(expected[2]) > sum(expected[1]) > sum(expected[0])
    lines = read_metrics(tmp_path / "metrics.jsonl")
    assert [x["generation"] for x in lines] == [0, 1, 2]
    assert [x["history_lengths"] for x in lines] == expected
    assert [x["prompts_with_history"] for x in lines] == [sum(e[1:]) for e in expected]
    assert [m["history_lengths"] for m in summary["history_mix"]] == expected
    assert [m["generation"] for m in summary["history_mix"]] == [0, 1, 2]
    saved = json.loads((tmp_path / "train_summary.json").read_text(encoding="utf-8"))
    assert saved["history_mix"] == summary["history_mix"]
    logged = [r.getMessage() for r in caplog.records if "generation_start" in r.getMessage()]
    assert len(logged) == 3
    for g, (msg, e) in enumerate(zip(logged, expected, strict=True)):
        assert f"generation={g}" in msg and f'history_lengths="{e}"' in msg, msg


class _Killed(Exception):
    """Stands for the process dying right after a step's metrics line was written."""


@pytest.mark.slow
@requires_tools("iverilog", "yosys", "sta")
def test_kill_and_resume_matches_an_uninterrupted_run(tmp_path: Path) -> None:
    """Killed after steps 3, 5, 6 and 7, resumed each time from the latest checkpoint.

    Two generations of four steps with the real HVC reward and a checkpoint every step, so the
    resumes land mid-generation 0 (step 2: its rollouts so far must survive for reconstruction),
    on the generation boundary (step 4: reconstruct, then a fresh generation with the restored
    RNG and optimizer), and in generation 1's two-row dataset one batch into an epoch (step 5:
    HF skips a batch) and at the start of its second epoch (step 6: the prompt order must be
    that epoch's, not the first one's).
    """
    import torch

    from rtlforge.trainers.metrics import read_metrics

    over: dict[str, Any] = {"steps": 8, "generations": 2, "checkpoint": {"every": 1, "keep": 2}}
    full = _trainer(tmp_path / "full", **over)
    full.train()

    out = tmp_path / "killed"
    first_steps: list[int] = []
    for kill in (3, 5, 6, 7, None):
        trainer = _trainer(out, **{**over, "checkpoint": {"every": 1, "keep": 2,
                                                          "resume_from": "latest"}})
        seen: list[int] = []

        def progress(record: Any, kill: int | None = kill, seen: list[int] = seen) -> None:
            seen.append(record["step"])
            if record["step"] == kill:
                raise _Killed

        trainer.progress = progress
        try:
            trainer.train()
        except _Killed:
            assert kill is not None
        first_steps.append(seen[0])
    assert first_steps == [1, 3, 5, 6, 7]  # i.e. resumed from checkpoints 2, 4, 5 and 6

    a, b = read_metrics(tmp_path / "full" / "metrics.jsonl"), read_metrics(out / "metrics.jsonl")
    assert [r["step"] for r in b] == list(range(1, 9))
    assert [r["generation"] for r in b] == [0] * 4 + [1] * 4
    assert [r["history_lengths"] for r in b] == [r["history_lengths"] for r in a]
    assert trainer.history_mix == full.history_mix and len(full.history_mix) == 2
    diffs: dict[str, float] = {}
    for ra, rb in zip(a, b, strict=True):
        for key in ("reward_mean", "loss", "grad_norm", "entropy", "hvc_mean", "pass_rate"):
            assert rb[key] == pytest.approx(ra[key], abs=1e-4), (ra["step"], key)
            diffs[key] = max(diffs.get(key, 0.0), abs(rb[key] - ra[key]))
    worst = 0.0
    with torch.no_grad():
        for (name, pa), (_, pb) in zip(full._trl.model.named_parameters(),
                                       trainer._trl.model.named_parameters(), strict=True):
            torch.testing.assert_close(pa, pb, rtol=0, atol=1e-5, msg=name)
            worst = max(worst, float((pa - pb).abs().max()))
    assert trainer.rows == full.rows and trainer.generation == full.generation == 2
    print(f"max abs diffs: {diffs}, parameters {worst:.3g}")
    assert sorted(p.name for p in (out / "checkpoints").iterdir()) == ["checkpoint-6",
                                                                       "checkpoint-7"]
    assert (out / "final" / "rtlforge_checkpoint.json").is_file()


@pytest.mark.slow
def test_resume_between_reuses_of_a_sample_batch(tmp_path: Path) -> None:
    """μ = 2 with LoRA and β > 0: checkpoint-1 falls between the two updates on one sample
    batch, so TRL's buffered batch must come back with it (else it would sample afresh)."""
    import torch

    from rtlforge.trainers.metrics import read_metrics

    table: dict[str, float | None] = {"A": 0.0, "B": 1.0, "C": 2.0, "D": 0.5, "": 0.0}
    over: dict[str, Any] = {"steps": 4, "num_iterations": 2, "beta": 0.04, "sequential": False,
                            "model": {"build_tiny": {}, "lora": {"r": 4}},
                            "checkpoint": {"every": 1, "keep": 1}}
    full = _trainer(tmp_path / "full", table, **over)
    full.train()
    out = tmp_path / "killed"
    for kill in (2, None):
        trainer = _trainer(out, table, **{**over, "checkpoint": {"every": 1, "keep": 1,
                                                                 "resume_from": "latest"}})

        def progress(record: Any, kill: int | None = kill) -> None:
            if record["step"] == kill:
                raise _Killed

        trainer.progress = progress
        try:
            trainer.train()
        except _Killed:
            assert (out / "checkpoints" / "checkpoint-1" / "grpo_buffer.pt").is_file()
    a, b = read_metrics(tmp_path / "full" / "metrics.jsonl"), read_metrics(out / "metrics.jsonl")
    assert [r["step"] for r in b] == [1, 2, 3, 4]
    assert all(r["history_lengths"] == [1, 0, 0, 0, 0] for r in b)
    for ra, rb in zip(a, b, strict=True):
        for key in ("reward_mean", "loss", "grad_norm", "kl", "clip_fraction"):
            if ra[key] is None:
                assert rb[key] is None, (ra["step"], key)
            else:
                assert rb[key] == pytest.approx(ra[key], abs=1e-4), (ra["step"], key)
    with torch.no_grad():
        for (name, pa), (_, pb) in zip(full._trl.model.named_parameters(),
                                       trainer._trl.model.named_parameters(), strict=True):
            torch.testing.assert_close(pa, pb, rtol=0, atol=1e-5, msg=name)


@pytest.mark.tools
def test_rollouts_log_the_code_the_reward_judged_without_extracting_again(
        tasks: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    # issue 23: the GRPO path extracted Verilog twice (the reward, then the rollout log); the
    # reward's detail now carries what it extracted and judged.
    import rtlforge.core.extract as extract
    from rtlforge.rewards.adapters import RewardSpec
    from rtlforge.trainers.grpo import RolloutReward

    def no_second_extraction(text: str) -> str:
        raise AssertionError("the rollout log extracted the completion again")

    fn = RolloutReward(RewardSpec(reward="testbench", tasks=str(TASKS),
                                  pipeline={"timeout": 30}))
    golden = "\n".join(f.content for f in tasks["mux4"].golden)
    fenced = f"Here:\n```verilog\n{golden}```\n"
    judged = extract.extract_verilog(fenced)  # what the reward's own extraction yields
    monkeypatch.setattr(extract, "extract_verilog", no_second_extraction)
    scores = fn(["p", "p"], [fenced, "no code"], task_id=["mux4", "mux4"])
    assert scores == [1.0, 0.0]
    assert [r.code for r in fn.rollouts] == [judged, None]


def test_the_headline_metric_is_the_one_the_run_learns_in(tmp_path: Path) -> None:
    """The sequential reward falls as histories fill with the best circuits, so a choice run's
    learning curve is choice_optimal_rate (examples/train/grpo-tiny.yaml); a config may name
    its own headline."""
    import yaml

    example = parse_config(yaml.safe_load((ROOT / "examples" / "train" / "grpo-tiny.yaml")
                                          .read_text()))
    assert example.headline_metric() == "choice_optimal_rate"
    assert _config(tmp_path, choice=None).headline_metric() == "reward_mean"
    assert _config(tmp_path, headline="pass_rate").headline_metric() == "pass_rate"


def test_headline_curve_reads_first_and_last_values_from_the_metrics(tmp_path: Path) -> None:
    from rtlforge.trainers.plugin import headline_curve

    metrics = tmp_path / "metrics.jsonl"
    rows = [{"step": 1, "m": 0.25}, {"step": 2, "m": 0.5}, {"step": 3}, {"event": "x", "m": 9},
            {"step": 4, "m": 0.75}, {"step": 5, "m": 1.0}]
    metrics.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert headline_curve(metrics, "m") == {  # by hand: steps 1, 2, 4, 5 logged m
        "metric": "m", "steps": 4, "first": 0.25, "last": 1.0,
        "first_3_mean": (0.25 + 0.5 + 0.75) / 3, "last_3_mean": (0.5 + 0.75 + 1.0) / 3}
    assert headline_curve(tmp_path / "none.jsonl", "m") == {"metric": "m", "steps": 0}
