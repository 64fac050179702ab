"""BEHAVE rewards: verdict to reward, unresolved to None, per-task caching, the plugin path."""

from __future__ import annotations

import pickle
import shutil
from pathlib import Path

import pytest

from rtlforge.behave import plugin
from rtlforge.behave.rewards import (
    SCORING_PRESETS,
    BehaveCoverageReward,
    BehaveModelReward,
    BehaveRewardDetail,
    BehaveRTLReward,
    _goal_prefix,
    extract_model_source,
    reward_means,
)
from rtlforge.behave.sim.golden import golden_model
from rtlforge.behave.sim.stimulus import Stimulus, Transaction
from rtlforge.behave.sim.task import load_behave_task
from rtlforge.core.errors import ExtractionError, SandboxError, TaskFormatError
from rtlforge.core.plugins import PluginHost
from rtlforge.testing.fake_runner import FakeRunner, ScriptedRun

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "behave"
TASK = EXAMPLES / "rv_accum"
SMALL = {"sequences": 3, "transactions": 20}
GOLDEN_MODEL = (TASK / "golden.py").read_text()
#: Off by one in every sum: first wrong at transaction 3 (the fourth input, the first sum).
WRONG_MODEL = GOLDEN_MODEL.replace("out = self.total + in_data", "out = self.total + in_data + 1")
BROKEN_MODEL = GOLDEN_MODEL.replace("def reset(self):", "def reset(self):\n        import os")


def fence(text: str, lang: str) -> str:
    return f"Here is my answer.\n```{lang}\n{text}\n```\nDone."


def verilog(name: str) -> str:
    return fence((TASK / name).read_text(), "verilog")


def host() -> PluginHost:
    return PluginHost(load_entrypoints=False, plugins=[("behave", plugin)])


# ------------------------------------------------------------------------------ extraction


def test_model_extraction_reads_fences_answers_and_plain_text() -> None:
    assert "class RvAccum(Model):" in extract_model_source(fence(GOLDEN_MODEL, "python"))
    tagged = f"<think>```python\nclass Draft(Model):\n    pass\n```</think>" \
             f"<answer>{fence(GOLDEN_MODEL, 'py')}</answer>"
    assert "Draft" not in extract_model_source(tagged)
    assert extract_model_source(GOLDEN_MODEL) == GOLDEN_MODEL
    with pytest.raises(ExtractionError):
        extract_model_source("A model would accumulate four inputs.")
    with pytest.raises(ExtractionError):  # a Verilog fence is no model
        extract_model_source(verilog("golden.v"))


# ------------------------------------------------------------------------------ behave_rtl


@pytest.mark.tools
@pytest.mark.requires_tools("iverilog", "vvp")
def test_rtl_reward_grpo_call() -> None:
    """A TRL-style call: prompts, completions, and the task as a per-sample column."""
    reward = BehaveRTLReward(**SMALL)
    completions = [
        verilog("golden.v"),
        verilog("wrong_sum.v"),
        fence("module rv_accum(input clk);\n  assign = 1;\nendmodule", "verilog"),
        "I would write an accumulator.",
        [{"role": "user", "content": "write it"},
         {"role": "assistant", "content": verilog("pipe3.v")}],
        verilog("golden.v"),  # a repeat: checked once
    ]
    details = reward.score_detailed([""] * 6, completions, behave_task=[str(TASK)] * 6)
    assert [d.reward for d in details] == [1.0, 0.0, 0.0, 0.0, 1.0, 1.0]
    assert [d.verdict for d in details] == ["pass", "fail", "error", None, "pass", "pass"]
    assert details[1].mismatches > 0 and "different value" in details[1].reason
    assert "does not compile" in details[2].reason
    assert details[3].flags == ("no_code",)
    # the task, golden and stimulus were prepared once for the whole batch, and stay cached
    prepared = next(iter(reward._prepared.values()))
    assert len(reward._prepared) == 1
    assert reward.score([""], [verilog("slow.v")], behave_task=[str(TASK)]) == [1.0]
    assert next(iter(reward._prepared.values())) is prepared
    reward.close()


def test_infrastructure_failure_and_timeout_abstain() -> None:
    """A runner that fails, or a simulation past its time limit, is None, never 0."""
    broken = FakeRunner({"iverilog": ScriptedRun(raises=SandboxError("the jail is down"))})
    reward = BehaveRTLReward(runner=broken, **SMALL)
    [detail] = reward.score_detailed([""], [verilog("golden.v")], behave_task=[str(TASK)])
    assert detail.reward is None and detail.verdict == "infra_error"
    assert detail.flags == ("infra_error",) and "jail is down" in detail.reason
    slow = FakeRunner({"iverilog": ScriptedRun(), "vvp": ScriptedRun(timed_out=True)})
    reward = BehaveRTLReward(runner=slow, **SMALL)
    [detail] = reward.score_detailed([""], [verilog("golden.v")], behave_task=[str(TASK)])
    assert detail.reward is None and detail.verdict == "timeout" and detail.flags == ("timeout",)
    # the reward ran what it had to through the runner it was given
    assert slow.tools == ["iverilog", "vvp"]


def test_unresolved_scores_zero_under_the_paper_setting_and_abstains_under_ours() -> None:
    """BEHAVE Appendix D.2 counts unresolved evaluations as zero. A hand-made unresolved check
    (the simulation ran past its time limit) is 0.0 with ``unresolved="zero"`` and with the
    ``paper`` preset, None with ``abstain`` (ours, the default); an infrastructure failure is
    None under every setting."""
    def slow() -> FakeRunner:
        return FakeRunner({"iverilog": ScriptedRun(), "vvp": ScriptedRun(timed_out=True)})

    def broken() -> FakeRunner:
        return FakeRunner({"iverilog": ScriptedRun(raises=SandboxError("the jail is down"))})

    answer, task = [verilog("golden.v")], [str(TASK)]
    for options in ({"unresolved": "zero"}, {"preset": "paper"}):
        [detail] = BehaveRTLReward(runner=slow(), **options, **SMALL).score_detailed(
            [""], answer, behave_task=task)
        assert (detail.reward, detail.verdict, detail.flags) == (0.0, "timeout", ("timeout",))
        assert detail.reason.startswith("unresolved, counted as 0")
        [detail] = BehaveRTLReward(runner=broken(), **options, **SMALL).score_detailed(
            [""], answer, behave_task=task)
        assert (detail.reward, detail.flags) == (None, ("infra_error",))
    for options in ({}, {"unresolved": "abstain"}, {"preset": "paper", "unresolved": "abstain"}):
        [detail] = BehaveRTLReward(runner=slow(), **options, **SMALL).score_detailed(
            [""], answer, behave_task=task)
        assert (detail.reward, detail.flags) == (None, ("timeout",))
    coverage = BehaveCoverageReward(runner=slow(), unresolved="zero", **SMALL)
    assert coverage.score([""], answer, behave_task=task) == [0.0]
    with pytest.raises(ValueError, match="unresolved"):
        BehaveRTLReward(unresolved="skip")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="preset"):
        BehaveRTLReward(preset="slow")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="search_budget_s"):
        BehaveRTLReward(search_budget_s=-1.0)


def test_scoring_presets_are_ours_and_the_papers() -> None:
    """``fast`` (ours): 120 s per tool run, no goal-guided search, no artifact cap, unresolved
    abstains. ``paper`` (BEHAVE Appendix D.2): 1,200 s per artifact with up to 600 s of
    goal-guided search, unresolved counts as zero. Options override one value each and travel
    to remote workers."""
    fast, paper = SCORING_PRESETS["fast"], SCORING_PRESETS["paper"]
    assert (fast.timeout_s, fast.search_budget_s, fast.artifact_budget_s, fast.unresolved) == (
        120.0, 0.0, None, "abstain")
    assert (paper.search_budget_s, paper.artifact_budget_s, paper.unresolved) == (
        600.0, 1200.0, "zero")
    assert paper.timeout_s == 1200.0  # one run may use the whole artifact budget
    reward = BehaveModelReward(preset="paper", search_budget_s=5.0)
    assert reward.scoring == paper.model_copy(update={"search_budget_s": 5.0})
    assert reward._guided() is not None and reward._guided().budget_s == 5.0
    assert BehaveModelReward()._guided() is None  # ours: a plain check
    rebuilt = BehaveModelReward(**reward.options)
    assert rebuilt.scoring == reward.scoring


@pytest.mark.tools
@pytest.mark.requires_tools("iverilog", "vvp")
def test_the_paper_preset_scores_with_goal_guided_search() -> None:
    """magic_lock's wrong_stuck.v never opens; random stimulus never arms the lock, so our fast
    check passes it (1.0), and the paper preset's goal-guided search reaches 0x1234, 0xBEEF and
    fails it (0.0). The correct design passes both."""
    pytest.importorskip("z3")
    lock = EXAMPLES / "magic_lock"
    answers = [fence((lock / "wrong_stuck.v").read_text(), "verilog"),
               fence((lock / "golden.v").read_text(), "verilog")]
    columns = {"behave_task": [str(lock)] * 2}
    fast = BehaveRTLReward(sequences=5, transactions=40)
    paper = BehaveRTLReward(sequences=5, transactions=40, preset="paper")
    try:
        assert fast.score([""] * 2, answers, **columns) == [1.0, 1.0]
        wrong, right = paper.score_detailed([""] * 2, answers, **columns)
        assert (wrong.reward, right.reward) == (0.0, 1.0)
        assert wrong.verdict == "fail" and wrong.mismatches == 1
    finally:
        fast.close()
        paper.close()


def test_reward_means_report_both_averages() -> None:
    """By hand: rewards 1, 0, a timeout and an infrastructure failure: leaving the timeout
    out, (1 + 0) / 2 = 0.5; counting it as 0, (1 + 0 + 0) / 3 = 1/3; the infrastructure
    failure is in neither."""
    details = [BehaveRewardDetail(task_id="t", reward=1.0),
               BehaveRewardDetail(task_id="t", reward=0.0),
               BehaveRewardDetail(task_id="t", reward=None, flags=("timeout",)),
               BehaveRewardDetail(task_id="t", reward=None, flags=("infra_error",))]
    means = reward_means(details)
    assert means["mean_abstain"] == 0.5 and means["mean_zero"] == pytest.approx(1 / 3)
    assert (means["timeouts"], means["abstained"]) == (1, 1)
    # the same batch scored with unresolved="zero": the timeout came back 0.0, same means
    zeroed = [*details[:2], BehaveRewardDetail(task_id="t", reward=0.0, flags=("timeout",)),
              details[3]]
    assert reward_means(zeroed) == means


# ------------------------------------------------------------------------------ behave_model


def test_model_reward() -> None:
    reward = BehaveModelReward(tasks=EXAMPLES, **SMALL)
    completions = [fence(GOLDEN_MODEL, "python"), fence(WRONG_MODEL, "python"),
                   fence(BROKEN_MODEL, "python"), "no model here"]
    details = reward.score_detailed([""] * 4, completions, task_id=["rv_accum"] * 4)
    assert [d.reward for d in details] == [1.0, 0.0, 0.0, 0.0]
    assert details[1].verdict == "fail" and details[1].reason.startswith("value on out")
    assert details[2].verdict == "error" and details[2].flags == ("model_invalid",)
    assert "line 16" in details[2].reason and "import" in details[2].reason
    assert details[3].flags == ("no_code",)


def test_golden_that_does_not_load_abstains(tmp_path: Path) -> None:
    task = tmp_path / "rv_accum"
    shutil.copytree(TASK, task)
    (task / "golden.py").write_text(BROKEN_MODEL)
    for reward in (BehaveModelReward(**SMALL), BehaveRTLReward(runner=FakeRunner(), **SMALL)):
        [detail] = reward.score_detailed([""], [fence(GOLDEN_MODEL, "python")],
                                         behave_task=[str(task)])
        assert detail.reward is None and detail.flags == ("task_unusable",)
        assert "golden model does not load" in detail.reason


def test_task_columns() -> None:
    reward = BehaveModelReward(tasks=TASK, **SMALL)  # one task directory as the root
    assert reward.score([""], [GOLDEN_MODEL], task_id=["rv_accum"]) == [1.0]
    loaded = load_behave_task(TASK)  # a loaded task in the column
    assert BehaveModelReward(**SMALL).score([""], [GOLDEN_MODEL], behave_task=[loaded]) == [1.0]
    with pytest.raises(ValueError, match="behave_task column"):
        BehaveModelReward(**SMALL).score([""], [GOLDEN_MODEL])
    with pytest.raises(TaskFormatError, match="plain directory name"):
        BehaveModelReward(tasks=EXAMPLES).score([""], [GOLDEN_MODEL], task_id=["../rv_accum"])
    with pytest.raises(TaskFormatError):
        BehaveModelReward(tasks=EXAMPLES).score([""], [GOLDEN_MODEL], task_id=["no_such"])
    with pytest.raises(ValueError, match="2 values for 1"):
        reward.score([""], [GOLDEN_MODEL], task_id=["rv_accum", "rv_accum"])


# ------------------------------------------------------------------------------ coverage


def test_goal_prefix_by_hand() -> None:
    """rv_accum's golden has one branch (``seen == 3``): transaction 0 takes it False, the
    fourth input after a reset takes it True."""
    task = load_behave_task(TASK)
    txns = [Transaction(inputs={"in_data": v}, reset=n == 0) for n, v in enumerate([1, 2, 3, 4,
                                                                                   5])]
    before, total = _goal_prefix(task, golden_model(task), Stimulus(transactions=tuple(txns)))
    assert total == 2 and before == (0, 1, 1, 1, 2, 2)


def test_coverage_reward_by_hand() -> None:
    """(pass + share of goals reached before the first failing transaction) / 2.

    WRONG_MODEL first fails at transaction 3 (the first sum; the stimulus resets only at 0 in
    its first 4 transactions): transactions 0..2 reached only the False outcome, so 1 of 2
    goals, (0 + 1/2) / 2 = 0.25. The golden passes with both goals: 1.0. A model that does not
    check reaches nothing: 0.0."""
    reward = BehaveCoverageReward(tasks=EXAMPLES, artifact="model", **SMALL)
    details = reward.score_detailed(
        [""] * 3, [GOLDEN_MODEL, WRONG_MODEL, BROKEN_MODEL], task_id=["rv_accum"] * 3)
    assert [d.reward for d in details] == [1.0, 0.25, 0.0]
    assert [(d.goals_verified, d.goals_total) for d in details] == [(2, 2), (1, 2), (0, 2)]


# ------------------------------------------------------------------------------ plugin path


def test_registered_through_the_behave_plugin_and_the_trl_adapter() -> None:
    from rtlforge.rewards.adapters import trl_reward, verl_compute_score

    h = host()
    assert {"behave-rtl", "behave-model", "behave-coverage"} <= set(h.names("reward"))
    # the names before they were hyphenated still resolve (configs and scripts use them)
    assert h.get("reward", "behave_rtl") is h.get("reward", "behave-rtl")
    assert {o.name for o in h.options("reward", "behave_coverage")} >= {"tasks", "artifact",
                                                                          "workers"}
    fn = trl_reward("behave_model", tasks=str(EXAMPLES), host=h, **SMALL)
    assert fn([""] * 2, [GOLDEN_MODEL, WRONG_MODEL], task_id=["rv_accum"] * 2) == [1.0, 0.0]
    clone = pickle.loads(pickle.dumps(fn))  # a worker process rebuilds it from the spec
    assert clone.spec == fn.spec and clone._reward is None
    score = verl_compute_score("behave_coverage", tasks=str(EXAMPLES), host=h,
                               artifact="model", **SMALL)
    assert score("behave", WRONG_MODEL, "rv_accum") == 0.25


def test_grpo_trainer_resolves_the_reward_by_name(tmp_path: Path) -> None:
    from rtlforge.trainers.grpo import GRPOConfig, GRPOTrainer

    config = GRPOConfig.model_validate({
        "trainer": "grpo", "out_dir": str(tmp_path), "steps": 1, "model": {"build_tiny": {}},
        "baseline": "single-objective-ppa", "reward": "behave_model", "tasks": str(EXAMPLES),
        "reward_kwargs": SMALL, "num_generations": 2})
    fn = GRPOTrainer(config, host=host()).reward_function()
    rewards = fn(["p", "p"], [fence(GOLDEN_MODEL, "python"), fence(BROKEN_MODEL, "python")],
                 task_id=["rv_accum", "rv_accum"])
    assert rewards == [1.0, 0.0]
    assert isinstance(fn.reward, BehaveModelReward)


def test_a_tasks_own_stimulus_settings_apply_unless_the_reward_sets_them(tmp_path: Path) -> None:
    """[stimulus] in behave.toml (long time constants) reaches the reward; explicit wins."""
    task_dir = tmp_path / "rv_accum"
    shutil.copytree(TASK, task_dir)
    toml = task_dir / "behave.toml"
    toml.write_text(toml.read_text() + "\n[stimulus]\nsequences = 2\ntransactions = 7\n")
    edge_sweep = len(BehaveRTLReward(sequences=0).prepare(task_dir).stimulus.transactions)
    from_task = BehaveRTLReward().prepare(task_dir).stimulus
    assert len(from_task.transactions) == edge_sweep + 2 * 7
    explicit = BehaveRTLReward(sequences=1, transactions=5).prepare(task_dir).stimulus
    assert len(explicit.transactions) == edge_sweep + 5
