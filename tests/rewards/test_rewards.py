"""Reward plugins: formulas against hand-computed cases with real validation, guards, adapters.

Validation is real (Icarus on the bundled tasks); PPA comes from a deterministic fake estimator
that reads the numbers from a ``localparam`` the test writes into each design, so every formula
can be checked by hand. One test uses the real estimator when
``rtlforge.plugins.estimators.ppa`` exists.
"""

from __future__ import annotations

import importlib.util
import inspect
import math
import multiprocessing
import pickle
import re
from pathlib import Path
from typing import Any, ClassVar

import pytest

from rtlforge.core.errors import DesignError, RtlforgeError, ToolMissingError
from rtlforge.core.interfaces import PPAEstimator, PPAResult, Reward, ValidationContext, Validator
from rtlforge.core.models import Candidate, SourceFile, StageResult, Task, Verdict
from rtlforge.core.plugins import PluginHost
from rtlforge.rewards import adapters, builtin, guards
from rtlforge.rewards.builtin import (
    PPAScalarReward,
    RepetitionPenaltyReward,
    SequentialHVCReward,
    TestbenchPPAReward,
    TestbenchReward,
)
from rtlforge.rewards.ppa import scalar_ppa
from rtlforge.tasks.loader import load_tasks
from rtlforge.tasks.rtllm import load_rtllm
from rtlforge.validate.pipeline import Pipeline

ROOT = Path(__file__).resolve().parents[2]
TASKS_DIR = ROOT / "examples" / "tasks"
RTLLM = ROOT.parent / "shared" / "benchmarks" / "rtllm"
GOLDEN_PPA = (2.0, 4.0, 100.0)  # power mW, delay ns, area um2 of every golden (fake estimator)


# ------------------------------------------------------------------------------ fixtures


class FakePPA(PPAEstimator):
    """PPA read from ``localparam PPA = "P D A"`` in the design; goldens get GOLDEN_PPA."""

    name: ClassVar[str] = "fake-ppa"

    def __init__(self) -> None:
        self.calls = 0

    def estimate(self, candidate: Candidate, top: str, runner: Any) -> PPAResult:
        self.calls += 1
        text = "\n".join(f.content for f in candidate.files)
        if "UNMEASURABLE" in text:
            raise DesignError("cannot measure this design")
        if "NO_TOOL" in text:
            raise ToolMissingError("sta", "install it")
        found = re.search(r'localparam PPA = "([\d.e+-]+) ([\d.e+-]+) ([\d.e+-]+)"', text)
        power, delay, area = map(float, found.groups()) if found else GOLDEN_PPA
        return PPAResult(power_mw=power, delay_ns=delay, area_um2=area, cells=1, liberty="fake")


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    return {t.id: t for t in load_tasks(TASKS_DIR)}


@pytest.fixture(scope="module")
def pipeline() -> Pipeline:
    return Pipeline.build(PluginHost(), timeout=30)


def mux4(tasks: dict[str, Task], ppa: tuple[float, float, float] | None = None, *,
         wrong: bool = False, marker: str = "") -> str:
    """The mux4 golden, optionally wrong, carrying a PPA (and a marker) for the fake estimator."""
    src = tasks["mux4"].golden[0].content
    if wrong:
        src = src.replace("sel[1] ? high : low", "sel[1] ? low : high")
    extra = f'    localparam PPA = "{ppa[0]} {ppa[1]} {ppa[2]}";\n' if ppa else ""
    extra += f"    localparam {marker} = 1;\n" if marker else ""
    return src.replace("endmodule", extra + "endmodule")


def ratio_product(ppa: tuple[float, float, float]) -> float:
    """(P_g/P)·(A_g/A)·(D_g/D): the ppa-scalar formula, by hand (no eps: docs/rewards.md)."""
    (p, d, a), (pg, dg, ag) = ppa, GOLDEN_PPA
    return (pg / p) * (ag / a) * (dg / d)


def golden_history() -> list[dict[str, float]]:
    return [dict(zip(("power", "delay", "area"), GOLDEN_PPA, strict=True))]


# ------------------------------------------------------------------------------ plugins


def test_all_rewards_are_registered_plugins() -> None:
    host = PluginHost()
    assert {"testbench", "sequential-hvc", "ppa-scalar", "testbench+ppa",
            "repetition-penalty"} <= set(host.names("reward"))
    assert "rewards" not in host.failures


# ------------------------------------------------------------------------------ testbench


@pytest.mark.tools
def test_testbench_reward_pass_fail_no_code_and_chat(tasks: dict[str, Task],
                                                     pipeline: Pipeline) -> None:
    reward = TestbenchReward(tasks, pipeline)
    good = mux4(tasks)
    completions = [f"Here:\n```verilog\n{good}```", mux4(tasks, wrong=True), "I cannot.",
                   [{"role": "user", "content": "q"}, {"role": "assistant", "content": good}]]
    details = reward.score_detailed([""] * 4, completions, task_id=["mux4"] * 4)
    assert [d.reward for d in details] == [1.0, 0.0, 0.0, 1.0]
    assert details[1].verdict is Verdict.FAIL
    assert details[2].verdict is None and "no_code" in details[2].flags
    assert reward.score([""], [good], task_id=["mux4"]) == [1.0]


@pytest.mark.tools
def test_unknown_task_and_missing_column_are_errors(tasks: dict[str, Task],
                                                    pipeline: Pipeline) -> None:
    reward = TestbenchReward(tasks, pipeline)
    with pytest.raises(RtlforgeError, match="nope"):
        reward.score([""], [mux4(tasks)], task_id=["nope"])
    with pytest.raises(ValueError, match="task_id"):
        reward.score([""], [mux4(tasks)])


class _MissingTool(Validator):
    name: ClassVar[str] = "missing-tool"
    stage: ClassVar[str] = "simulate"

    def validate(self, ctx: ValidationContext) -> StageResult:
        raise ToolMissingError("iverilog", "install it")


class _HangsOnMarker(Validator):
    """Times out any design containing HANG (fast stand-in for a simulation that never ends)."""

    name: ClassVar[str] = "hang-on-marker"
    stage: ClassVar[str] = "simulate"

    def validate(self, ctx: ValidationContext) -> StageResult:
        hangs = any("HANG" in f.content for f in ctx.candidate.files)
        return StageResult(name=self.name, verdict=Verdict.TIMEOUT if hangs else Verdict.PASS)


def test_infra_error_abstains_never_zero(tasks: dict[str, Task]) -> None:
    pipe = Pipeline([_MissingTool()])
    for reward in (TestbenchReward(tasks, pipe),
                   SequentialHVCReward(tasks, pipe, estimator=FakePPA())):
        details = reward.score_detailed([""] * 2, [mux4(tasks), "no code"], task_id=["mux4"] * 2)
        assert details[0].reward is None and "infra_error" in details[0].flags
        assert details[1].reward == 0.0  # no code at all is still the model's fault


def test_timeout_policy(tasks: dict[str, Task]) -> None:
    # core.models.Verdict: a timeout is never scored as a wrong design; every reward abstains
    # on it unless told to punish it
    pipe = Pipeline([_HangsOnMarker()])
    hang = mux4(tasks, marker="HANG")
    from rtlforge.rewards.builtin import REWARDS

    for cls in REWARDS:  # every built-in testbench/PPA reward (BEHAVE's: test_behave_rewards)
        reward = (cls(tasks, pipe, estimator=FakePPA()) if cls.needs_ppa
                  else cls(tasks, pipe))
        detail = reward.score_detailed([""], [hang], task_id=["mux4"])[0]
        assert detail.reward is None and "timeout" in detail.flags, cls.name
    assert TestbenchReward(tasks, pipe, timeout_reward=0.0).score(
        [""], [hang], task_id=["mux4"]) == [0.0]


@pytest.mark.tools
def test_task_whose_golden_fails_is_unusable(tasks: dict[str, Task],
                                             pipeline: Pipeline) -> None:
    broken = tasks["mux4"].model_copy(update={
        "id": "mux4_broken_golden",
        "golden": (SourceFile(name="golden.v", content=mux4(tasks, wrong=True)),)})
    reward = TestbenchReward({broken.id: broken}, pipeline)
    [detail] = reward.score_detailed([""], [mux4(tasks)], task_id=[broken.id])
    assert detail.reward is None and "task_unusable" in detail.flags
    assert "golden" in (detail.reason or "")


# ------------------------------------------------------------------------------ PPA formulas


@pytest.mark.tools
def test_ppa_scalar_and_testbench_plus_ppa(tasks: dict[str, Task], pipeline: Pipeline) -> None:
    ppa = (1.0, 2.0, 50.0)
    completions = [mux4(tasks, ppa), mux4(tasks, ppa, wrong=True),
                   mux4(tasks, marker="UNMEASURABLE")]
    ids = ["mux4"] * 3
    scalar = PPAScalarReward(tasks, pipeline, estimator=FakePPA()).score([""] * 3, completions,
                                                                         task_id=ids)
    assert scalar[0] == pytest.approx(ratio_product(ppa), rel=1e-12)
    assert scalar[0] == 8.0  # 2·2·2 exactly: no eps in the denominators
    assert scalar[1:] == [0.0, 0.0]  # failing; passing but unmeasurable
    combined = TestbenchPPAReward(tasks, pipeline, estimator=FakePPA()).score(
        [""] * 3, completions, task_id=ids)
    assert combined[0] == pytest.approx(1.0 + ratio_product(ppa), rel=1e-12)
    assert combined[1:] == [0.0, 1.0]


@pytest.mark.tools
def test_ppa_infra_failure_abstains(tasks: dict[str, Task], pipeline: Pipeline) -> None:
    reward = SequentialHVCReward(tasks, pipeline, estimator=FakePPA())
    [detail] = reward.score_detailed([""], [mux4(tasks, marker="NO_TOOL")], task_id=["mux4"])
    assert detail.reward is None and "ppa_infra_error" in detail.flags


@pytest.mark.tools
def test_golden_ppa_column_overrides_and_golden_measured_once(tasks: dict[str, Task],
                                                              pipeline: Pipeline) -> None:
    fake = FakePPA()
    reward = PPAScalarReward(tasks, pipeline, estimator=fake)
    ppa = (1.0, 2.0, 50.0)
    reward.score([""], [mux4(tasks, ppa)], task_id=["mux4"])
    reward.score([""], [mux4(tasks, ppa)], task_id=["mux4"])
    assert fake.calls == 2  # golden + candidate, each once: the second call is all cached
    [value] = reward.score([""], [mux4(tasks, ppa)], task_id=["mux4"],
                           golden_ppa=[{"power": 1.0, "delay": 2.0, "area": 50.0}])
    assert value == pytest.approx(1.0, rel=1e-6)


@pytest.mark.tools
def test_sequential_hvc_hand_computed(tasks: dict[str, Task], pipeline: Pipeline) -> None:
    """History = the golden, o_h = (1, 1, 1); candidates improve power only: o = (P_g/P, 1, 1)."""
    reward = SequentialHVCReward(tasks, pipeline, estimator=FakePPA())
    cases = {
        (1.0, 4.0, 100.0): 2.0,     # o = (2,1,1): HVC = 2 - 1 = 1 -> 1 + 1
        (0.5, 4.0, 100.0): 4.0,     # o = (4,1,1): HVC = 3 -> 1 + 3
        (0.25, 4.0, 100.0): 4.0,    # o = (8,1,1): HVC = 7, clipped to 3
        GOLDEN_PPA: 1.0,            # a duplicate of history: HVC exactly 0
        (4.0, 8.0, 200.0): 1.0,     # dominated by history: exactly 1.0
    }
    completions = [mux4(tasks, ppa) for ppa in cases] + [mux4(tasks, (0.1, 1, 1), wrong=True)]
    n = len(completions)
    details = reward.score_detailed([""] * n, completions, task_id=["mux4"] * n,
                                    history=[golden_history()] * n)
    for detail, expected in zip(details, [*cases.values(), 0.0], strict=True):
        assert detail.reward == pytest.approx(expected, rel=1e-6)
    assert details[3].reward == 1.0 and details[3].hvc == 0.0
    assert details[4].reward == 1.0 and details[4].hvc == 0.0
    assert details[2].hvc == pytest.approx(7.0, rel=1e-6)
    # empty history: HVC = product of the ratios
    [empty] = reward.score([""], [mux4(tasks, (1.0, 2.0, 100.0))], task_id=["mux4"], history=[[]])
    assert empty == pytest.approx(1.0 + 3.0, rel=1e-6)  # 2·2·1 = 4, clipped to 3


#: A golden of realistic size (mW, ns, um^2): with the old eps = 1e-8 added in mW its power
#: ratio was 0.00254 / (0.00254 + 1e-8) = 0.999996, so the golden did not score 2.0.
SMALL_GOLDEN = (0.00254, 0.41833, 60.8)


@pytest.mark.parametrize("bad", [0.0, -1.0, math.nan, math.inf])
@pytest.mark.parametrize("field", ["power", "delay", "area"])
def test_scalar_ppa_term_is_exact_and_zero_for_invalid_ppa(field: str, bad: float) -> None:
    """(P_g/P)(A_g/A)(D_g/D) with no eps: the golden is exactly 1; a zero or non-finite
    measurement (a zero delay included, which the old +eps turned into ~1e8) is invalid PPA: 0,
    so testbench+ppa gives such a passing design the pass reward 1 only."""
    gold = dict(zip(("power", "delay", "area"), SMALL_GOLDEN, strict=True))
    assert scalar_ppa(gold, gold) == 1.0
    assert scalar_ppa({"power": 1.0, "delay": 2.0, "area": 50.0},
                      {"power": 2.0, "delay": 4.0, "area": 100.0}) == 8.0
    assert scalar_ppa({**gold, field: bad}, gold) == 0.0
    assert scalar_ppa(gold, {**gold, field: bad}) == 0.0


@pytest.mark.tools
@pytest.mark.parametrize("reward_cls", [TestbenchPPAReward, SequentialHVCReward])
def test_the_golden_scores_exactly_one_per_objective_and_two_in_total(
        reward_cls: type, tasks: dict[str, Task], pipeline: Pipeline) -> None:
    """The golden against itself: o = (1, 1, 1) exactly, so 1 + 1·1·1 = 2.0 for testbench+ppa
    and, with an empty history, 1 + HV({(1, 1, 1)}) = 2.0 for sequential-hvc."""
    reward = reward_cls(tasks, pipeline, estimator=FakePPA())
    golden = tasks["mux4"].golden[0].content  # no PPA marker: the fake measures GOLDEN_PPA
    small = mux4(tasks, SMALL_GOLDEN)
    details = reward.score_detailed(
        [""] * 2, [golden, small], task_id=["mux4"] * 2, history=[[], []],
        golden_ppa=[None, dict(zip(("power", "delay", "area"), SMALL_GOLDEN, strict=True))])
    for detail in details:
        assert detail.verdict is Verdict.PASS
        assert detail.objectives == (1.0, 1.0, 1.0)
        assert detail.reward == 2.0


@pytest.mark.tools
def test_hvc_group_called_once_per_group_with_one_history(
        tasks: dict[str, Task], pipeline: Pipeline, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    real = builtin.hvc_group

    def counting(history: Any, candidates: Any) -> Any:
        calls.append(len(candidates))
        return real(history, candidates)

    monkeypatch.setattr(builtin, "hvc_group", counting)
    reward = SequentialHVCReward(tasks, pipeline, estimator=FakePPA())
    better = (1.0, 4.0, 100.0)
    hist_a = golden_history()
    hist_b = [{"power": 0.5, "delay": 4.0, "area": 100.0}]  # already better than `better`
    completions = [mux4(tasks, better), mux4(tasks, (2.0, 2.0, 100.0)),
                   mux4(tasks, better), mux4(tasks, (2.0, 2.0, 100.0))]
    details = reward.score_detailed([""] * 4, completions, task_id=["mux4"] * 4,
                                    history=[hist_a, hist_a, hist_b, hist_b])
    assert sorted(calls) == [2, 2]  # two groups, one call each
    assert details[0].reward == pytest.approx(2.0, rel=1e-6)  # improves on hist_a
    assert details[2].reward == 1.0  # same design, dominated in hist_b
    # o = (1, 2, 1) against o_h = (1, 1, 1): HVC = 2 - 1; against o_h = (4, 1, 1): 4 + 2 - 1 - 4
    assert details[1].reward == pytest.approx(2.0, rel=1e-6)
    assert details[3].reward == pytest.approx(2.0, rel=1e-6)
    # a code-only history entry adds no point; a malformed entry is a configuration error
    [code_only] = reward.score([""], [mux4(tasks, better)], task_id=["mux4"],
                               history=[[{"code": "module x; endmodule"}, *hist_a]])
    assert code_only == pytest.approx(2.0, rel=1e-6)
    with pytest.raises(ValueError, match="history entry"):
        reward.score([""], [mux4(tasks, better)], task_id=["mux4"], history=[[{"pwr": 1}]])
    # objective-vector history scores exactly like the raw-PPA history it encodes
    vec = reward.score([""], [mux4(tasks, better)], task_id=["mux4"], history=[[[1.0, 1.0, 1.0]]])
    assert vec[0] == pytest.approx(details[0].reward, rel=1e-6)


@pytest.mark.tools
def test_repetition_penalty(tasks: dict[str, Task], pipeline: Pipeline) -> None:
    ppa = (1.0, 2.0, 50.0)
    history = [{"power": 1.0, "delay": 2.0, "area": 50.0}]
    reward = RepetitionPenaltyReward(tasks, pipeline, estimator=FakePPA(), penalty=0.5)
    repeat, fresh = reward.score([""] * 2, [mux4(tasks, ppa), mux4(tasks, (1.0, 4.0, 100.0))],
                                 task_id=["mux4"] * 2, history=[history] * 2)
    assert repeat == pytest.approx(1.0 + ratio_product(ppa) - 0.5, rel=1e-9)
    assert fresh == pytest.approx(1.0 + ratio_product((1.0, 4.0, 100.0)), rel=1e-9)
    # same normalised code (comments and layout differ) is a repeat too
    code = mux4(tasks, (1.0, 4.0, 100.0))
    relaid = "// an earlier answer\n" + code.replace("\n", "\n\n")
    [by_code] = reward.score([""], [code], task_id=["mux4"], history=[[{"code": relaid,
                                                                       **history[0]}]])
    assert by_code == pytest.approx(1.0 + ratio_product((1.0, 4.0, 100.0)) - 0.5, rel=1e-9)


# ------------------------------------------------------------------------------ guards


def test_code_hash_ignores_comments_and_layout() -> None:
    a = "module m(input a, output y); // c\n  assign y = a;\nendmodule\n"
    b = "/* x */ module m ( input a , output y ) ;\nassign y=a;   endmodule"
    assert guards.code_hash(a) == guards.code_hash(b)
    assert guards.code_hash(a) != guards.code_hash(a.replace("y = a", "y = ~a"))


@pytest.mark.parametrize(("source", "constant"), [
    ("module m(input a, output y); assign y = 1'b0; endmodule", True),
    ("module m(input a, output [3:0] y); assign y = {4{1'b0}}; endmodule", True),
    ("module m(input c, output reg [3:0] q); always @(posedge c) q <= 4'd0; endmodule", True),
    ("module m(input a, output y); endmodule", True),
    ("module m(input a, output y, output z); assign y = 0; assign z = a; endmodule", False),
    ("module m(input c, output reg q); always @(posedge c) q <= ~q; endmodule", False),
    ("module m(input a, output y); s u(.o(y)); endmodule\n"
     "module s(output o); assign o = 0; endmodule", False),
    ("module m(input a, output y); assign y = ; endmodule", False),  # unparsable: no claim
    # control-dependent constants are logic (RTLLM edge_detect's golden looks like this)
    ("module m(input c, input a, output reg y); always @(posedge c) if (a) y <= 1; else y <= 0;"
     " endmodule", False),
    ("module m(input c, input a, output reg y); always @(posedge c) if (a) y <= 0; else y <= 0;"
     " endmodule", True),
    ("module m(input a, output [1:0] y); assign y[0] = 0; assign y[1] = 0; endmodule", False),
])
def test_constant_outputs(source: str, constant: bool) -> None:
    assert guards.constant_outputs(Candidate.from_source(source), "m") is constant


def test_probe_matches_golden_interface(tasks: dict[str, Task]) -> None:
    for task in tasks.values():
        probe = guards.probe_candidate(task)
        assert probe is not None, task.id
        iface = guards.task_interface(task)
        assert iface is not None
        assert {p.name for p in iface.ports} == {p.name for p in task.ports} or not task.ports
    text = guards.probe_candidate(tasks["add8_carry"]).files[0].content  # type: ignore[union-attr]
    assert "output wire [7:0] sum" in text and "assign cout = 0;" in text


WEAK_TB = """
module tb;
  reg a, b; wire y;
  and2 dut(.a(a), .b(b), .y(y));
  initial begin
    a = 0; b = 0; #1;
    if (y === 1'b0) $display("Mismatches: 0 in 1 samples");
    else $display("Mismatches: 1 in 1 samples");
    $finish;
  end
endmodule
"""
AND2 = "module and2(input a, input b, output y);\n  assign y = a & b;\nendmodule\n"
ZERO = "module and2(input a, input b, output y);\n  assign y = 1'b0;\nendmodule\n"


@pytest.fixture(scope="module")
def weak_task() -> Task:
    return Task(id="weak_and2", spec="2-input AND", top="and2",
                testbench=(SourceFile(name="tb.v", content=WEAK_TB),),
                golden=(SourceFile(name="golden.v", content=AND2),))


@pytest.mark.tools
def test_weak_testbench_probe_and_constant_output(weak_task: Task, tasks: dict[str, Task],
                                                  pipeline: Pipeline) -> None:
    all_tasks = {**tasks, weak_task.id: weak_task}
    reward = TestbenchReward(all_tasks, pipeline)
    assert reward.task_check(weak_task).weak_testbench is True
    assert reward.task_check(tasks["mux4"]).weak_testbench is False
    good, zero = reward.score_detailed([""] * 2, [AND2, ZERO], task_id=[weak_task.id] * 2)
    assert good.reward == 1.0 and good.flags == ("weak_testbench",)
    assert zero.reward == 1.0 and set(zero.flags) == {"weak_testbench", "constant_output"}
    strict = TestbenchReward(all_tasks, pipeline, on_constant_output="zero")
    assert strict.score([""] * 2, [AND2, ZERO], task_id=[weak_task.id] * 2) == [1.0, 0.0]
    skip = TestbenchReward(all_tasks, pipeline, on_weak_testbench="abstain")
    assert skip.score([""] * 2, [AND2, mux4(tasks)],
                      task_id=[weak_task.id, "mux4"]) == [None, 1.0]


@pytest.mark.tools
def test_bundled_testbenches_reject_the_all_zero_module(tasks: dict[str, Task],
                                                        pipeline: Pipeline) -> None:
    checks = TestbenchReward(tasks, pipeline).check_tasks(tasks.values())
    assert all(c.usable and c.golden_verdict is Verdict.PASS for c in checks.values())
    assert all(c.probe_verdict is Verdict.FAIL for c in checks.values())
    assert not [tid for tid, c in checks.items() if c.weak_testbench is not False]


@pytest.mark.tools
def test_duplicates_flagged_and_policy(tasks: dict[str, Task], pipeline: Pipeline) -> None:
    code = mux4(tasks)
    relaid = "// same circuit\n" + code.replace("    ", "\t")
    history = [[{"code": relaid, "power": 9.0, "delay": 9.0, "area": 900.0}]] * 3
    reward = TestbenchReward(tasks, pipeline)
    other = mux4(tasks, marker="OTHER")
    first, again, fresh = reward.score_detailed([""] * 3, [other, other, code],
                                                task_id=["mux4"] * 3, history=history)
    assert first.flags == () and again.flags == ("duplicate_in_group",)
    assert fresh.flags == ("duplicate_history",)
    zeroing = TestbenchReward(tasks, pipeline, on_duplicate="zero")
    assert zeroing.score([""] * 3, [other, other, code], task_id=["mux4"] * 3,
                         history=history) == [1.0, 0.0, 0.0]


# ------------------------------------------------------------------------------ adapters


def test_trl_adapter_pickles_and_names_itself() -> None:
    func = adapters.trl_reward("testbench", tasks=str(TASKS_DIR), pipeline={"timeout": 30})
    assert func.__name__ == "testbench"
    clone = pickle.loads(pickle.dumps(func))
    assert clone.spec == func.spec and clone._reward is None
    named = adapters.TRLReward(adapters.RewardSpec(reward="sequential-hvc", tasks="t", name="hvc"))
    assert named.__name__ == "hvc"


@pytest.mark.tools
def test_trl_adapter_chat_format_and_extra_kwargs(tasks: dict[str, Task]) -> None:
    func = adapters.trl_reward("testbench", tasks=str(TASKS_DIR), pipeline={"timeout": 30})
    chat = [[{"role": "assistant", "content": f"```verilog\n{mux4(tasks)}```"}],
            [{"role": "assistant", "content": mux4(tasks, wrong=True)}]]
    prompts = [[{"role": "user", "content": "build mux4"}]] * 2
    scores = func(prompts=prompts, completions=chat, task_id=["mux4"] * 2,
                  completion_ids=[[1], [2]], trainer_state=object())
    assert scores == [1.0, 0.0]
    assert pickle.loads(pickle.dumps(func))(prompts, chat, task_id=["mux4"] * 2) == [1.0, 0.0]


@pytest.mark.tools
def test_trl_adapter_across_processes(tasks: dict[str, Task]) -> None:
    func = adapters.trl_reward("testbench", tasks=str(TASKS_DIR), pipeline={"timeout": 30})
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        jobs = [pool.apply_async(func, ([""], [c]), {"task_id": ["mux4"]})
                for c in (mux4(tasks), mux4(tasks, wrong=True))]
        results = [job.get(timeout=120) for job in jobs]
    assert results == [[1.0], [0.0]]


def test_verl_signature_and_column_mapping() -> None:
    score = adapters.verl_compute_score("testbench", tasks=str(TASKS_DIR))
    params = list(inspect.signature(score).parameters)
    assert params[:4] == ["data_source", "solution_str", "ground_truth", "extra_info"]
    assert adapters.verl_columns("mux4", None) == {"task_id": "mux4"}
    hist = [{"power": 1.0, "delay": 2.0, "area": 3.0}]
    mapped = adapters.verl_columns({"task_id": "mux4", "history": []}, {"history": hist})
    assert mapped["history"] == hist  # extra_info wins (per rollout)
    assert adapters.verl_columns('{"task_id": "mux4"}', {"history": '[[1, 1, 1]]', "index": 3,
                                                         "reference": "module m; endmodule"}) == {
        "task_id": "mux4", "history": [[1, 1, 1]], "reference": "module m; endmodule"}
    # a reward that needs a task says so itself; one that does not works without
    with pytest.raises(ValueError, match="'task_id' column"):
        score(solution_str="module m; endmodule", ground_truth={"history": []})
    assert pickle.loads(pickle.dumps(score)).spec == score.spec


@pytest.mark.tools
def test_verl_single_and_batch(tasks: dict[str, Task]) -> None:
    score = adapters.verl_compute_score("testbench", tasks=str(TASKS_DIR),
                                        pipeline={"timeout": 30})
    assert score("rtlforge", mux4(tasks), "mux4") == 1.0
    assert score(data_source="x", solution_str=mux4(tasks, wrong=True),
                 ground_truth={"task_id": "mux4"}, extra_info={"index": 3}) == 0.0
    batch = score(data_sources=["x", "x"], solution_strs=[mux4(tasks), "no code"],
                  ground_truths=["mux4", "mux4"], extra_infos=[None, None])
    assert batch == [1.0, 0.0]


def test_verl_abstain_value(tasks: dict[str, Task]) -> None:
    score = adapters.VerlComputeScore(adapters.RewardSpec(reward="testbench", tasks="unused"),
                                      abstain=0.0)
    score._reward = TestbenchReward(tasks, Pipeline([_MissingTool()]))
    assert score("x", mux4(tasks), "mux4") == 0.0
    score.abstain = None
    assert score("x", mux4(tasks), "mux4") is None


class LengthReward(Reward):
    """A third-party reward that is no RTLReward: no tasks, no pipeline, an option of its own."""

    name: ClassVar[str] = "length"

    def __init__(self, scale: float = 1.0) -> None:
        self.scale = scale

    def score(self, prompts: Any, completions: Any, **columns: Any) -> list[float | None]:
        return [self.scale * len(c) for c in completions]


class TaskSpecReward(Reward):
    """Takes tasks (and nothing else of the context): 1 when the completion names the top."""

    name: ClassVar[str] = "names-top"

    def __init__(self, tasks: Any, *, bonus: float = 1.0) -> None:
        self.tasks = {t.id: t for t in load_tasks(tasks)} if isinstance(tasks, str) else tasks
        self.bonus = bonus

    def score(self, prompts: Any, completions: Any, **columns: Any) -> list[float | None]:
        return [self.bonus if self.tasks[t].top in c else 0.0
                for c, t in zip(completions, columns["task_id"], strict=True)]


def _third_party_host() -> PluginHost:
    from rtlforge import hookimpl

    class Plugin:
        @hookimpl
        def register_rewards(self, register: Any) -> None:
            register(LengthReward)
            register(TaskSpecReward)

    host = PluginHost()
    assert host.add_plugin(Plugin(), name="third-party-rewards")
    return host


def test_adapters_build_any_registered_reward_with_its_own_options() -> None:
    """trl_reward("length") used to pass tasks= and pipeline= to every reward (TypeError)."""
    host = _third_party_host()
    trl = adapters.trl_reward("length", host=host, scale=2.0)
    assert trl(["p", "p"], ["abc", "hello"], task_id=["a", "b"]) == [6.0, 10.0]
    assert trl.spec.kwargs == {"scale": 2.0} and trl.spec.tasks is None
    assert pickle.loads(pickle.dumps(trl)).spec == trl.spec  # options travel to workers
    verl = adapters.verl_compute_score("length", host=host, kwargs={"scale": 0.5})
    assert verl("x", "abcd", "some-task") == 2.0
    # a reward that takes tasks gets them, and no pipeline it did not ask for
    named = adapters.trl_reward("names-top", host=host, tasks=str(TASKS_DIR), bonus=3.0)
    assert named([""] * 2, ["module mux4(...)", "module other"], task_id=["mux4"] * 2) == [
        3.0, 0.0]


@pytest.mark.parametrize(("call", "text"), [
    (lambda h: adapters.trl_reward("length", host=h, scale="big"),
     "invalid options for reward 'length': option 'scale': Input should be a valid number"),
    (lambda h: adapters.trl_reward("length", host=h, sclae=2),
     "unknown option 'sclae' (options: scale)"),
    (lambda h: adapters.verl_compute_score("lenght", host=h), "did you mean 'length'?"),
    (lambda h: adapters.trl_reward("names-top", host=h), "give tasks=DIR"),
    (lambda h: adapters.trl_reward("testbench", host=h), "give tasks=DIR"),
])
def test_adapters_refuse_bad_rewards_when_made_not_in_a_worker(call: Any, text: str) -> None:
    from rtlforge.core.errors import ConfigError

    with pytest.raises(ConfigError, match=re.escape(text)):
        call(_third_party_host())


# ------------------------------------------------------------------------------ real PPA


@pytest.mark.tools
@pytest.mark.skipif(importlib.util.find_spec("rtlforge.plugins.estimators.ppa") is None,
                    reason="rtlforge.plugins.estimators.ppa (the PPA estimators) is not available")
def test_sequential_hvc_with_the_real_estimator(tasks: dict[str, Task],
                                                pipeline: Pipeline) -> None:
    estimator = PluginHost().create("ppa_estimator", "yosys-sta")
    reward = SequentialHVCReward(tasks, pipeline, estimator=estimator)
    golden = tasks["mux4"].golden[0].content
    [first] = reward.score_detailed([""], [golden], task_id=["mux4"], history=[[]])
    assert first.ppa is not None and first.objectives is not None
    # empty history: 1 + (1·1·1) exactly (an eps added in mW made it 1.999997)
    assert first.objectives == (1.0, 1.0, 1.0) and first.reward == 2.0
    [again] = reward.score_detailed([""], [golden], task_id=["mux4"], history=[[first.ppa]])
    assert again.reward == 1.0 and again.hvc == 0.0


# ------------------------------------------------------------------------------ RTLLM


#: RTLLM v2 tasks whose testbench passes a module with all outputs tied to 0 (measured with
#: Icarus 11): edge_detect checks ``rise != 0 && down != 0`` (an AND where an OR was meant), and
#: square_wave's testbench never compares anything.
RTLLM_WEAK = {"edge_detect", "square_wave"}
#: Goldens that do not pass under Icarus 11 (see docs/rtllm.md): unusable, rewards abstain.
RTLLM_UNUSABLE = {"asyn_fifo", "clkgenerator", "radix2_div", "ring_counter"}


@pytest.mark.tools
@pytest.mark.shared
@pytest.mark.slow
@pytest.mark.skipif(not RTLLM.is_dir(), reason=f"RTLLM data not found at {RTLLM} "
                    "(../shared is only present in the development workspace and CI)")
def test_rtllm_testbenches_that_accept_an_all_zero_module() -> None:
    rtllm = load_rtllm(RTLLM)
    reward = TestbenchReward(rtllm, Pipeline.build(PluginHost(), timeout=15))
    checks = reward.check_tasks(rtllm)
    assert {tid for tid, c in checks.items() if not c.usable} == RTLLM_UNUSABLE
    assert {tid for tid, c in checks.items() if c.weak_testbench} == RTLLM_WEAK
    # every usable task got a conclusive probe: the all-zero module compiled and was judged
    # (five testbenches wait forever for a handshake: a timeout, i.e. rejected)
    assert all(c.weak_testbench is not None for c in checks.values() if c.usable)
    assert sum(c.probe_verdict is Verdict.TIMEOUT for c in checks.values()) == 5
