"""Items a remote executor gave up on (their worker kept dying) abstain; they never score 0.

A stand-in executor plays the cluster: it returns ``work.lost(item, reason)`` for the kinds of
work it is told to lose and runs the rest locally, which is exactly what the Ray executor does
once an item's retries are spent.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import ClassVar, TypeVar

import pytest

from rtlforge.behave.rewards import BehaveCheckWork, BehaveRTLReward
from rtlforge.core.executor import Executor, Work
from rtlforge.core.options import PluginSpec
from rtlforge.core.plugins import PluginHost
from rtlforge.evaluation.golden import PPAWork
from rtlforge.rewards.builtin import PPAScalarReward, TestbenchReward
from rtlforge.tasks.loader import load_task
from rtlforge.validate.pipeline import Pipeline, ValidateWork

T = TypeVar("T")
R = TypeVar("R")
ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.tools


class Losing(Executor):
    """Loses every item of the given work spec types, as a cluster whose workers keep dying."""

    name: ClassVar[str] = "losing"

    def __init__(self, *lose: type) -> None:
        self.lose = lose

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> Iterator[R]:
        return map(fn, items)

    def run(self, work: Work[T, R], items: Sequence[T]) -> list[R]:
        if isinstance(work.spec, self.lose):
            assert work.lost is not None
            return [work.lost(item, "the worker died on this item 3 times") for item in items]
        return super().run(work, items)


def answer(text: str) -> str:
    return f"```verilog\n{text}```"


def test_lost_validation_abstains() -> None:
    mux = load_task(ROOT / "examples" / "tasks" / "mux4")
    plugins = PluginHost(allow=["iverilog"])
    reward = TestbenchReward([mux], Pipeline.build(plugins, timeout=20), host=plugins,
                             executor=Losing(ValidateWork))
    [detail] = reward.score_detailed([""], [answer(mux.golden[0].content)], task_id=["mux4"])
    assert detail.reward is None and detail.verdict is not None
    assert detail.verdict.value == "infra_error" and "infra_error" in detail.flags


def test_lost_ppa_abstains_after_a_pass() -> None:
    mux = load_task(ROOT / "examples" / "tasks" / "mux4")
    plugins = PluginHost(allow=["iverilog", "ppa"])
    reward = PPAScalarReward([mux], Pipeline.build(plugins, timeout=20), host=plugins,
                             estimator=PluginSpec(name="yosys-sta"), executor=Losing(PPAWork))
    [detail] = reward.score_detailed([""], [answer(mux.golden[0].content)], task_id=["mux4"])
    assert detail.verdict is not None and detail.verdict.value == "pass"
    assert detail.reward is None and "ppa_infra_error" in detail.flags
    assert "WorkerLostError" in (detail.reason or "")


def test_lost_behave_check_abstains() -> None:
    udiv = ROOT / "examples" / "behave" / "udiv"
    reward = BehaveRTLReward(tasks=str(ROOT / "examples" / "behave"), sequences=2,
                             transactions=5, executor=Losing(BehaveCheckWork))
    [detail] = reward.score_detailed([""], [answer((udiv / "golden.v").read_text())],
                                     task_id=["udiv"])
    assert detail.reward is None and detail.verdict == "infra_error"
    assert "died on this item" in (detail.reason or "")

