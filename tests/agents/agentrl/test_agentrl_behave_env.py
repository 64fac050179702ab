"""One behave-agent update through the real BEHAVE environment: the tools run in the sandbox,
the hidden check judges the submission against B*, the reward and the update follow. The
policy (the tiny random model) writes nothing useful, so the environment's side of each
rollout plays a script (a right design for rollout 0, a wrong one for rollout 1) while the
policy's own sampled tokens are what the update trains: the wiring is real, the actions are
not the policy's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch", reason="the behave-agent trainer needs the [train] extra")
pytest.importorskip("transformers", reason="the behave-agent trainer needs the [train] extra")

import torch

from rtlforge.agents.agentrl.envs import BehaveEnvFactory, EpisodeEnv
from rtlforge.agents.agentrl.rollout import Rollout
from rtlforge.agents.agentrl.trainer import BehaveAgentTrainer
from rtlforge.behave.env.messages import AgentReply, Message, ToolCall
from rtlforge.core.plugins import PluginHost
from rtlforge.trainers.config import parse_config

pytestmark = [pytest.mark.tools, pytest.mark.requires_tools("iverilog", "vvp")]

ADD8 = Path(__file__).resolve().parents[3] / "examples" / "behave" / "add8"
REPO_CONFIG = ADD8.parents[1] / "train" / "behave-agent-qwen7b.yaml"


class _Scripted:
    """The environment with the policy's reply replaced by a scripted one."""

    def __init__(self, env: EpisodeEnv, design: str) -> None:
        self.env = env
        self.script = [
            [("write_file", {"path": "add8.v", "content": design})],
            [("compile", {"linter": "icarus"}), ("list_files", {})],
            [("submit", {})],
        ]

    @property
    def done(self) -> bool:
        return self.env.done

    def reset(self) -> list[Message]:
        return self.env.reset()

    def step(self, reply: AgentReply) -> list[Message]:
        calls = self.script.pop(0)
        return self.env.step(AgentReply(tool_calls=tuple(
            ToolCall(id=f"s{len(self.script)}_{k}", name=name, arguments=json.dumps(args))
            for k, (name, args) in enumerate(calls))))

    def finish(self) -> Any:
        return self.env.finish()

    def close(self) -> None:
        self.env.close()


class _ScriptedFactory(BehaveEnvFactory):
    def make(self, task_id: str, index: int) -> EpisodeEnv:
        name = "golden.v" if index == 0 else "wrong_nocarry.v"
        return _Scripted(super().make(task_id, index), (ADD8 / name).read_text())


def test_one_update_through_the_sandboxed_environment(tmp_path: Path) -> None:
    host = PluginHost()
    out = tmp_path / "run"
    config = parse_config({
        "trainer": "behave-agent", "seed": 0, "steps": 1, "out_dir": str(out),
        "model": {"build_tiny": {"hidden": 32, "layers": 1, "heads": 2}, "threads": 1},
        "env": {"kind": "behave", "max_turns": 5, "hidden_sequences": 2,
                "hidden_transactions": 5},
        "tasks": [str(ADD8)], "num_generations": 2, "max_new_tokens": 4,
        "context_window": 8192, "learning_rate": 1e-3, "executor": "thread", "workers": 2},
        host=host)
    factory = _ScriptedFactory(config.env, tasks=config.tasks, pool=out / "pool", host=host)
    trainer = BehaveAgentTrainer(config, host=host, factory=factory)
    trainer.train()

    rollouts = [Rollout.model_validate_json(line)
                for line in (out / "rollouts.jsonl").read_text().splitlines()]
    assert [(r.rtl, r.reward) for r in rollouts] == [("pass", 1.0), ("fail", 0.0)]
    assert [r.end_reason for r in rollouts] == ["submitted", "submitted"]
    assert [r.advantage for r in rollouts] == pytest.approx([1 / 1.0002, -1 / 1.0002])
    metrics = json.loads((out / "metrics.jsonl").read_text().splitlines()[0])
    assert metrics["rtl_pass_rate"] == 0.5 and metrics["kept_rollouts"] == 2
    assert metrics["turns_mean"] == 3.0 and metrics["grad_norm"] > 0
    assert metrics["tool_calls"] == {"compile": 2, "list_files": 2, "submit": 2,
                                     "write_file": 2}
    # the policy saw the tool declarations and the real tools' results (tokens, decoded)
    tok = trainer._tokenizer
    first = rollouts[0]
    instructions = tok.decode([i for s in first.segments if s.kind == "instructions"
                               for i in s.ids])
    assert "<tools>" in instructions and '"behave_self_check"' in instructions
    feedback = [tok.decode(s.ids) for s in first.segments if s.kind == "tool"]
    assert len(feedback) == 4 and "<tool_response>" in feedback[0]
    assert '"verdict": "pass"' in feedback[1]  # the sandboxed Icarus lint of the design


ROOT = Path(__file__).resolve().parents[3]


def _ray_config(out: Path, host: PluginHost) -> Any:
    return parse_config({
        "trainer": "behave-agent", "seed": 0, "steps": 1, "out_dir": str(out),
        "model": {"build_tiny": {"hidden": 32, "layers": 1, "heads": 2}, "threads": 1},
        "env": {"kind": "behave", "max_turns": 5, "hidden_sequences": 2,
                "hidden_transactions": 5},
        "tasks": [str(ADD8)], "num_generations": 2, "max_new_tokens": 4,
        "context_window": 8192, "learning_rate": 1e-3, "executor": "ray", "workers": 2,
        "executor_options": {"workers": 1, "num_cpus": 2, "runtime_env": {
            "env_vars": {"PYTHONPATH": str(ROOT)}}}},
        host=host)


def test_with_executor_ray_the_environments_hand_their_tools_to_it(tmp_path: Path) -> None:
    pytest.importorskip("ray", reason="the ray extra is not installed")
    from rtlforge.plugins.executors.ray_cluster import RayExecutor

    host = PluginHost()
    trainer = BehaveAgentTrainer(_ray_config(tmp_path / "run", host), host=host)
    try:
        trainer._build()  # builds the factory; Ray itself starts only with the first job
        assert isinstance(trainer.executor, RayExecutor)
        assert trainer._factory.executor is trainer.executor
    finally:
        trainer.close()


class _RemoteScriptedFactory(_ScriptedFactory):
    """Records, per rollout, whether its environment ran any tool in this process."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.envs: list[Any] = []

    def make(self, task_id: str, index: int) -> EpisodeEnv:
        env = super().make(task_id, index)
        self.envs.append(env.env)
        return env


@pytest.mark.xdist_group("ray-local-cluster")  # one local cluster at a time on two cores
def test_one_update_with_the_tools_on_a_ray_cluster(tmp_path: Path) -> None:
    """The update of the first test, with every tool job and hidden check on Ray's workers:
    the same rewards and advantages, nothing run by the environments themselves."""
    pytest.importorskip("ray", reason="the ray extra is not installed")
    host = PluginHost()
    out = tmp_path / "run"
    config = _ray_config(out, host)
    ray_pool = host.create("executor", "ray", **config.executor_options)
    try:
        factory = _RemoteScriptedFactory(config.env, tasks=config.tasks, pool=out / "pool",
                                          host=host, executor=ray_pool)
        BehaveAgentTrainer(config, host=host, factory=factory).train()
        assert [env._tools_here for env in factory.envs] == [None, None]
    finally:
        ray_pool.close()
    rollouts = [Rollout.model_validate_json(line)
                for line in (out / "rollouts.jsonl").read_text().splitlines()]
    assert [(r.rtl, r.reward) for r in rollouts] == [("pass", 1.0), ("fail", 0.0)]
    assert [r.advantage for r in rollouts] == pytest.approx([1 / 1.0002, -1 / 1.0002])


def test_the_gpu_configs_settings_run_an_update_on_a_stand_in_model(tmp_path: Path) -> None:
    """Everything of examples/train/behave-agent-qwen7b.yaml but the 7B weights and the GPU:
    LoRA on all linear layers, bf16, gradient checkpointing, the Qwen tool format, its schedule
    and loss, through the real BEHAVE environment (scripted as above, so the group is mixed and
    the update runs), with a tiny random model on the CPU and small budgets. No GPU is lent
    here: this is how far the GPU config is checked (docs/behave-agent-rl.md)."""
    import yaml

    from rtlforge.trainers.config import load_config

    host = PluginHost()
    gpu = REPO_CONFIG.read_text(encoding="utf-8")
    raw = yaml.safe_load(gpu)
    model = {k: v for k, v in raw["model"].items() if k != "path"}
    raw.update(model={**model, "build_tiny": {"hidden": 32, "layers": 2, "heads": 2},
                      "device": "cpu", "threads": 1},
               steps=1, num_generations=2, max_new_tokens=4, context_window=8192,
               tasks=[str(ADD8)], workers=2, out_dir=str(tmp_path / "run"),
               env={**raw["env"], "max_turns": 5, "hidden_sequences": 2,
                    "hidden_transactions": 5})
    config = parse_config(raw, host=host)
    real = load_config(REPO_CONFIG, host=host)
    # only the model's source and device, the budgets and the paths differ from the config
    assert config.model.lora == real.model.lora and config.model.dtype == "bfloat16"
    assert (config.gradient_checkpointing, config.loss_norm, config.beta, config.env.tool_format,
            config.schedule, config.log_tokens) == (
        real.gradient_checkpointing, real.loss_norm, real.beta, real.env.tool_format,
        real.schedule, real.log_tokens)
    factory = _ScriptedFactory(config.env, tasks=config.tasks, pool=tmp_path / "run" / "pool",
                               host=host)
    trainer = BehaveAgentTrainer(config, host=host, factory=factory)
    trainer.train()
    trainable = [(n, p) for n, p in trainer._model.named_parameters() if p.requires_grad]
    assert trainable and all("lora_" in n for n, _ in trainable)
    # the frozen base in bf16; PEFT keeps the adapter's weights in fp32
    assert {p.dtype for _, p in trainer._model.named_parameters() if not p.requires_grad} == {
        torch.bfloat16}
    (metrics,) = [json.loads(line) for line in
                  (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert metrics["kept_rollouts"] == 2 and metrics["rtl_pass_rate"] == 0.5
    assert metrics["loss"] is not None and metrics["grad_norm"] > 0
    lines = (tmp_path / "run" / "rollouts.jsonl").read_text().splitlines()
    assert all(set(s) == {"kind", "turn", "n"} for line in lines
               for s in json.loads(line)["segments"])  # log_tokens: false keeps lengths only
