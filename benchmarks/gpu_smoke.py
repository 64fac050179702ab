"""GPU smoke test: the CUDA paths the CPU test suite cannot reach, a few steps each.

    python benchmarks/gpu_smoke.py [--steps 3] [--out DIR] [--skip-vllm]
    (or scripts/gpu-smoke.sh, which picks the interpreter and keeps the JSON on stdout)

Checks, in order, each timed and reported even when a later one fails:

1. ``cuda``: CUDA is visible (else exit 2 at once with a message saying so; no silent skip);
2. ``grpo_bf16``: GRPO on the constrained choice task (docs/training.md, GRPO) with the tiny model
   on ``cuda`` in bfloat16 (``bf16: true``), sampling with ``model.generate``;
3. ``grpo_vllm``: the same with ``use_vllm: true, vllm_mode: colocate`` when vllm imports;
4. ``ppo_bf16``: PPO steps on ``cuda`` in bfloat16 (LoRA policy, value head, reference);
5. ``generator``: one ``TransformersGenerator`` call on ``cuda``.

The reward is the real sequential-HVC reward when iverilog, yosys and sta are on PATH; without
them a stand-in scores the chosen label (the summary says which), since the point here is the
device path, not the EDA tools. Prints one JSON object (device name, per-check step times and
``reward_mean`` per step, errors) and exits 1 when any check failed.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import logging
import shutil
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run from a checkout without installing

CHOICE = {"task_id": "seq_det_1011",
          "recorded": str(ROOT / "examples" / "explore" / "recorded.jsonl"),
          "variants": {"A": "seq_gray", "B": "seq_onehot", "C": "seq_err", "D": "seq_shift"}}
#: stand-in reward per label, shaped like the real HVC rewards (docs/training.md)
STAND_IN = {"A": 2.0, "B": 2.23, "C": 0.0, "D": 1.73}


class SmokeFailure(RuntimeError):
    """A check ran but its result is wrong (as opposed to raising on its own)."""


def eda_tools() -> bool:
    return all(shutil.which(t) for t in ("iverilog", "yosys", "sta"))


def check_cuda() -> dict[str, Any]:
    import torch

    if not torch.cuda.is_available():
        raise SmokeFailure(
            f"no CUDA device is visible (torch {torch.__version__}, built for CUDA "
            f"{torch.version.cuda}); this smoke test needs a GPU and does not skip without one")
    props = torch.cuda.get_device_properties(0)
    return {"device": torch.cuda.get_device_name(0), "devices": torch.cuda.device_count(),
            "memory_gib": round(props.total_memory / 2**30, 1), "torch": torch.__version__,
            "cuda": torch.version.cuda, "bf16_supported": torch.cuda.is_bf16_supported()}


class StepTimer:
    """Duck-typed ``TrainerCallback``: wall time of each optimizer step (CUDA synchronised)."""

    def __init__(self) -> None:
        self.times: list[float] = []
        self._t0 = 0.0

    def __getattr__(self, name: str) -> Any:
        if name.startswith("on_"):
            return lambda *a, **k: None
        raise AttributeError(name)

    def on_step_begin(self, *a: Any, **k: Any) -> None:
        import torch

        torch.cuda.synchronize()
        self._t0 = time.perf_counter()

    def on_step_end(self, *a: Any, **k: Any) -> None:
        import torch

        torch.cuda.synchronize()
        self.times.append(round(time.perf_counter() - self._t0, 4))


def _by_label(texts: dict[str, str]) -> Any:
    """A stand-in for the reward library's reward: a fixed score per chosen variant."""
    from rtlforge.core.interfaces import Reward

    of_text = {texts[k]: v for k, v in STAND_IN.items()}

    class ByLabel(Reward):
        name: ClassVar[str] = "gpu-smoke-by-label"

        def score(self, prompts: Any, completions: Sequence[str],
                  **columns: Any) -> list[float | None]:
            return [of_text.get(c, 0.0) for c in completions]

    return ByLabel()


def run_grpo(out: Path, steps: int, *, vllm: bool) -> dict[str, Any]:
    import torch

    from rtlforge.trainers.grpo import GRPOConfig, GRPOTrainer
    from rtlforge.trainers.metrics import read_metrics

    cfg = GRPOConfig.model_validate({
        "trainer": "grpo", "seed": 0, "out_dir": str(out), "steps": steps,
        "model": {"build_tiny": {}, "device": "cuda", "dtype": "bfloat16", "threads": None},
        "tasks": str(ROOT / "examples" / "tasks"), "choice": CHOICE,
        "num_generations": 8, "prompts_per_step": 2, "repeat": 2, "max_completion_length": 1,
        "learning_rate": 3e-3, "beta": 0.04, "bf16": True,
        # sequential as the preset wants: one step per generation, so the history prompts and
        # the reconstruction between generations run on the GPU too (one step: no history)
        **({"generations": min(steps, 5)} if steps >= 2 else {"sequential": False}),
        "use_vllm": vllm, "vllm_mode": "colocate", "vllm_gpu_memory_utilization": 0.2,
    })
    trainer = GRPOTrainer(cfg)
    trainer._setup()
    fn = trainer.reward_function()
    if not eda_tools():
        fn._reward = _by_label(fn._choice_texts or {})
    timer = StepTimer()
    trainer._trl.add_callback(timer)
    trainer.train()
    param = next(p for p in trainer._trl.model.parameters() if p.requires_grad)
    if param.device.type != "cuda" or param.dtype != torch.bfloat16:
        raise SmokeFailure(f"GRPO trained on {param.device}/{param.dtype}, not cuda/bfloat16")
    records = read_metrics(out / "metrics.jsonl")
    rewards = [r.get("reward_mean") for r in records]
    if len(records) != steps or any(r is None for r in rewards):
        raise SmokeFailure(f"expected {steps} metrics lines with a reward_mean, got {rewards}")
    return {"step_seconds": timer.times, "reward_mean": rewards,
            "loss": [r.get("loss") for r in records],
            "prompts_with_history": [r.get("prompts_with_history") for r in records],
            "max_memory_gib": round(torch.cuda.max_memory_allocated() / 2**30, 2)}


def run_ppo(out: Path, tiny: Path, steps: int) -> dict[str, Any]:
    import torch

    from rtlforge.core.hookspecs import Register, hookimpl
    from rtlforge.core.interfaces import Reward
    from rtlforge.core.plugins import PluginHost
    from rtlforge.trainers.ppo import PPOConfig, PPOTrainer

    class SpaceShare(Reward):
        """Share of spaces in the completion: defined for any text, so no EDA tool is needed."""

        name: ClassVar[str] = "gpu-smoke-spaces"

        def score(self, prompts: Any, completions: Sequence[str],
                  **columns: Any) -> list[float | None]:
            return [sum(ch == " " for ch in c) / max(len(c), 1) for c in completions]

    class Plugin:
        @hookimpl
        def register_rewards(self, register: Register) -> None:
            register(SpaceShare)

    times: list[float] = []
    last = [time.perf_counter()]

    def progress(record: Any) -> None:
        torch.cuda.synchronize()
        now = time.perf_counter()
        times.append(round(now - last[0], 4))
        last[0] = now

    cfg = PPOConfig.model_validate({
        "out_dir": str(out), "steps": steps, "seed": 0,
        "model": {"path": str(tiny), "device": "cuda", "dtype": "bfloat16", "threads": None},
        "reward": {"name": "gpu-smoke-spaces"}, "prompts": [{"prompt": "Write a 2-input gate."}],
        "batch_size": 8, "minibatch_size": 4, "max_new_tokens": 16, "ppo_epochs": 2,
    })
    host = PluginHost(load_entrypoints=False, plugins=[("gpu-smoke", Plugin())])
    trainer = PPOTrainer(cfg, host=host, progress=progress)
    last[0] = time.perf_counter()
    trainer.train()
    base = next(p for p in trainer.model.parameters() if not p.requires_grad)
    if base.device.type != "cuda" or base.dtype != torch.bfloat16:
        raise SmokeFailure(f"PPO's base model is on {base.device}/{base.dtype}, "
                           "not cuda/bfloat16")
    lines = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    return {"step_seconds": times, "reward_mean": [r.get("reward_mean") for r in lines],
            "max_memory_gib": round(torch.cuda.max_memory_allocated() / 2**30, 2)}


def run_generator(tiny: Path) -> dict[str, Any]:
    from rtlforge.core.interfaces import GenerationRequest, SamplingParams
    from rtlforge.plugins.generators.transformers import TransformersGenerator

    gen = TransformersGenerator(tiny, device="cuda", dtype="bfloat16")
    try:
        start = time.perf_counter()
        out = gen.generate([GenerationRequest(prompt="Write a 2-to-1 multiplexer.")],
                           SamplingParams(n=4, max_tokens=32, seed=0))
        seconds = time.perf_counter() - start
        device = str(next(gen._model.parameters()).device)
    finally:
        gen.close()
    if len(out) != 1 or len(out[0]) != 4:
        raise SmokeFailure(f"expected 1 x 4 generations, got {[len(g) for g in out]}")
    if not device.startswith("cuda"):
        raise SmokeFailure(f"the generator ran on {device}, not cuda")
    return {"seconds": round(seconds, 4), "device": device,
            "completion_chars": [len(g.text) for g in out[0]]}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None, help="work directory (default: temp)")
    parser.add_argument("--skip-vllm", action="store_true", help="skip the vLLM check")
    args = parser.parse_args(argv)
    import structlog  # rtlforge's events: info and up, on stderr, so stdout is only the JSON

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.INFO),
                        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr))
    out = args.out or Path(tempfile.mkdtemp(prefix="rtlforge-gpu-smoke-"))
    out.mkdir(parents=True, exist_ok=True)
    summary: dict[str, Any] = {"ok": False, "out": str(out), "checks": {}, "errors": {},
                               "reward": "sequential-hvc" if eda_tools() else
                               "stand-in by label (iverilog/yosys/sta not on PATH)"}

    def attempt(name: str, fn: Callable[[], dict[str, Any]]) -> bool:
        start = time.perf_counter()
        try:
            result = fn()
        except Exception as exc:  # noqa: BLE001 - every failure is reported, then exit 1
            summary["errors"][name] = f"{type(exc).__name__}: {exc}"
            detail = str(exc) if isinstance(exc, SmokeFailure) else traceback.format_exc()
            print(f"[gpu-smoke] {name} FAILED: {detail}", file=sys.stderr)
            return False
        result["seconds_total"] = round(time.perf_counter() - start, 3)
        summary["checks"][name] = result
        print(f"[gpu-smoke] {name} ok ({result['seconds_total']} s)", file=sys.stderr)
        return True

    if not attempt("cuda", check_cuda):
        print(json.dumps(summary, indent=2))
        return 2
    summary["device"] = summary["checks"]["cuda"]["device"]

    from rtlforge.testing.tiny_model import build_tiny_model

    tiny = build_tiny_model(out / "tiny")
    attempt("grpo_bf16", lambda: run_grpo(out / "grpo", args.steps, vllm=False))
    if args.skip_vllm:
        summary["checks"]["grpo_vllm"] = {"skipped": "--skip-vllm"}
    elif importlib.util.find_spec("vllm") is None:
        summary["checks"]["grpo_vllm"] = {"skipped": "vllm is not importable"}
    else:
        attempt("grpo_vllm", lambda: run_grpo(out / "grpo-vllm", args.steps, vllm=True))
    attempt("ppo_bf16", lambda: run_ppo(out / "ppo", tiny, args.steps))
    attempt("generator", lambda: run_generator(tiny))
    summary["ok"] = not summary["errors"]
    print(json.dumps(summary, indent=2))
    return 0 if summary["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
