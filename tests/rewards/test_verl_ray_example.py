"""examples/train/verl_ray_reward.py, called the way verl's batch reward manager calls it.

verl itself is not installed here (verl 0.9.1 requires ray[default], transformers>=5.5.3,
tensordict, hydra-core, wandb...: too heavy for CI). :class:`StandInBatchManager` reproduces what
verl's ``BatchRewardManager.verify`` does with a batch (read ``data_source``,
``reward_model.ground_truth`` and ``extra_info`` per sample, add ``rollout_reward_scores`` to each
extra_info, call ``compute_score`` with the four plural keywords): a stand-in with the same
fields, not verl. Decoding is skipped (responses are already text).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from rtlforge.core.plugins import PluginHost
from rtlforge.tasks.loader import load_task

ROOT = Path(__file__).resolve().parents[2]
ray = pytest.importorskip("ray", reason="the ray extra is not installed: pip install "
                                        "'rtlforge[ray]'")

from rtlforge.plugins.executors import ray_cluster  # noqa: E402

pytestmark = pytest.mark.tools


@dataclass
class StandInBatchManager:
    """The fields verl's batch reward manager reads, and the call it makes."""

    compute_score: Any
    data_source: list[str] = field(default_factory=list)
    reward_model: list[dict[str, Any]] = field(default_factory=list)
    extra_info: list[dict[str, Any]] = field(default_factory=list)
    responses: list[str] = field(default_factory=list)

    def verify(self) -> list[float]:
        extras = [dict(e, rollout_reward_scores={}) for e in self.extra_info]
        return list(self.compute_score(
            data_sources=self.data_source, solution_strs=self.responses,
            ground_truths=[rm.get("ground_truth") for rm in self.reward_model],
            extra_infos=extras))


@pytest.fixture(scope="module")
def example() -> Iterator[ModuleType]:
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    # an installed rtlforge lists the ray executor as an entry point; a checkout on PYTHONPATH
    # may not, so the default host gets it the way a plugin added in-process is given
    patch = pytest.MonkeyPatch()
    patch.setattr(PluginHost, "default",
                  classmethod(lambda cls: cls(plugins=[("ray", ray_cluster)])))
    spec = importlib.util.spec_from_file_location(
        "verl_ray_reward", ROOT / "examples" / "train" / "verl_ray_reward.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    yield module
    patch.undo()
    ray.shutdown()


def test_the_batch_manager_gets_one_score_per_rollout_from_the_cluster(
        example: ModuleType) -> None:
    adder = load_task(ROOT / "examples" / "tasks" / "add8_carry")
    golden = adder.golden[0].content
    wrong = golden.replace("assign cout = carry[8];", "assign cout = 1'b0;")
    manager = StandInBatchManager(
        compute_score=example.make_compute_score(
            "testbench", str(ROOT / "examples" / "tasks"), workers=2,
            runtime_env={"env_vars": {"PYTHONPATH": str(ROOT)}}),
        data_source=["rtlforge"] * 3,
        reward_model=[{"ground_truth": "add8_carry"}] * 3,
        extra_info=[{"index": 0}, {"index": 1}, {"task_id": "add8_carry"}],
        responses=[f"```verilog\n{golden}```", f"```verilog\n{wrong}```", "no code here"])
    # the golden passes; a carry-out stuck at 0 fails the testbench; no code scores 0
    assert manager.verify() == [1.0, 0.0, 0.0]
    reward = manager.compute_score.reward
    assert isinstance(reward.executor, ray_cluster.RayExecutor)
    reward.executor.close()


def test_the_module_level_compute_score_is_a_picklable_spec(example: ModuleType) -> None:
    import pickle

    clone = pickle.loads(pickle.dumps(example.compute_score))
    assert clone.spec == example.compute_score.spec
    assert clone.spec.executor is not None and clone.spec.executor.name == "ray"
    assert clone.abstain == 0.0
