"""The ``grpo`` trainer plugin (:class:`GRPOTrainer`): TRL's GRPO run inside the generation loop
of §4.2, with our checkpoints, resume and metrics (see :mod:`rtlforge.trainers.grpo`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from rtlforge.core.interfaces import Trainer
from rtlforge.core.log import get_logger
from rtlforge.rewards.adapters import RewardSpec
from rtlforge.trainers.checkpoints import (
    RNG_FILE,
    checkpoint_path,
    latest_checkpoint,
    load_checkpoint,
    prune_checkpoints,
    save_checkpoint,
)
from rtlforge.trainers.config import resolve_out_dir
from rtlforge.trainers.datasets import Rollout, history_length_mix, initial_rows, reconstruct
from rtlforge.trainers.errors import CheckpointError, TrainerConfigError
from rtlforge.trainers.grpo.config import GRPOConfig
from rtlforge.trainers.grpo.hooks import _MetricsCallback, _trl_trainer_class
from rtlforge.trainers.grpo.reward import RolloutReward
from rtlforge.trainers.metrics import MetricsWriter, ProgressCallback
from rtlforge.trainers.models import build_model_and_tokenizer
from rtlforge.trainers.rng import restore_rng_state, seed_everything

log = get_logger("rtlforge.trainers.grpo")

__all__ = ["GRPOTrainer"]

#: TRL log key -> metrics.jsonl key
_LOG_KEYS = {
    "reward": "reward_mean", "reward_std": "reward_std", "kl": "kl",
    "clip_ratio/region_mean": "clip_fraction", "entropy": "entropy", "loss": "loss",
    "frac_reward_zero_std": "frac_reward_zero_std", "learning_rate": "learning_rate",
    "grad_norm": "grad_norm", "completions/mean_length": "completion_length",
    "rtlforge/pass_rate": "pass_rate", "rtlforge/hvc_mean": "hvc_mean",
    "rtlforge/unique_circuits": "unique_circuits",
    "rtlforge/zero_signal_groups": "zero_signal_groups", "rtlforge/groups": "groups",
    "rtlforge/abstained": "abstained",
    "rtlforge/choice_optimal_rate": "choice_optimal_rate",
    "rtlforge/choice_regret": "choice_regret",
}


#: the buffered generation batch TRL reuses for μ > 1 (``num_iterations``), saved mid-reuse
_BUFFER_FILE = "grpo_buffer.pt"
#: ``transformers.Trainer``'s step/epoch state, which ``resume_from_checkpoint`` reads
_HF_STATE_FILE = "trainer_state.json"


def _rollout_from_json(data: Mapping[str, Any]) -> Rollout:
    return Rollout.model_validate(data)


class GRPOTrainer(Trainer):
    """The ``grpo`` trainer plugin: ``GRPOTrainer(config).train()`` -> summary dict.

    ``train()`` resumes by itself when ``checkpoint.resume_from`` is set (a path or ``latest``),
    writes ``checkpoint.every`` checkpoints to ``OUT/checkpoints`` and the last one to
    ``OUT/final``. ``progress`` is called with each metrics record after it is written.
    """

    name: ClassVar[str] = "grpo"
    config_class: ClassVar[type[GRPOConfig]] = GRPOConfig
    reports_progress: ClassVar[bool] = True

    def __init__(self, config: GRPOConfig, *, host: Any = None, out_dir: str | Path | None = None,
                 progress: ProgressCallback | None = None) -> None:
        """Args:
            config: the validated training config (the YAML file's ``GRPOConfig``).
            host: where the reward, validators and estimators the config names come from
                (default: ``PluginHost.default()``).
            out_dir: the run folder; wins over the config's ``out_dir`` (the CLI's ``--out``).
            progress: called with each metrics record once it is written (the CLI draws
                its progress bar with it).
        """
        if not isinstance(config, GRPOConfig):
            config = GRPOConfig.model_validate(config.model_dump())
        self.config = config
        self.host = host
        self.out = resolve_out_dir(config, out_dir)
        self.progress = progress
        self.step = 0
        self.generation = 0
        self.rows: list[dict[str, Any]] | None = None
        self.original: list[dict[str, Any]] | None = None
        self._trl: Any = None
        self._model: Any = None
        self._tokenizer: Any = None
        self._reward: RolloutReward | None = None
        self._resume_from: Path | None = None
        self._pending_optim: Any = None
        self._offset = 0
        self.timings: dict[str, float] = {}
        #: per generation: its dataset's history-length mix (:meth:`_start_generation`)
        self.history_mix: list[dict[str, Any]] = []

    @property
    def checkpoint_root(self) -> Path:
        return self.out / "checkpoints"

    # ------------------------------------------------------------------ pieces

    def reward_function(self) -> RolloutReward:
        """The TRL reward function for this config (the reward library's TRL adapter)."""
        if self._reward is None:
            cfg = self.config
            spec = RewardSpec(
                reward=cfg.reward_name, tasks=cfg.tasks,
                kwargs={**cfg.preset.reward_kwargs, **cfg.reward_kwargs},
                pipeline=cfg.pipeline, cache=cfg.reward_cache, estimator=cfg.estimator,
                estimator_kwargs=cfg.estimator_kwargs)
            self._reward = RolloutReward(spec, group_size=cfg.num_generations, choice=cfg.choice,
                                         host=self.host)
        return self._reward

    def tasks(self) -> dict[str, Any]:
        from rtlforge.rewards.columns import resolve_tasks

        cfg = self.config
        lookup = resolve_tasks(cfg.tasks)
        ids = cfg.task_ids or ([cfg.choice.task_id] if cfg.choice else None)
        if ids is None:
            from rtlforge.tasks.loader import load_tasks

            return {t.id: t for t in load_tasks(cfg.tasks)}
        out = {}
        for tid in ids:
            task = lookup(tid)
            if task is None:
                raise TrainerConfigError(f"task {tid!r} is not in {cfg.tasks}")
            out[tid] = task
        return out

    def trl_args(self, max_steps: int, tokenizer: Any = None) -> Any:
        """TRL ``GRPOConfig`` for this run; the paper quantity each option sets is commented."""
        from trl import GRPOConfig as TRLConfig

        cfg = self.config
        gen_kwargs: dict[str, Any] = {}
        if cfg.choice is not None and cfg.choice.constrain and tokenizer is not None:
            allowed = {tokenizer.encode(label, add_special_tokens=False)[0]
                       for label in cfg.choice.variants}
            eos = tokenizer.eos_token_id
            allowed |= set(eos if isinstance(eos, list) else [eos])
            if cfg.use_vllm:  # vLLM's SamplingParams has no suppress_tokens, only an allow-list
                gen_kwargs["allowed_token_ids"] = sorted(allowed)
            else:
                gen_kwargs["suppress_tokens"] = [i for i in range(len(tokenizer))
                                                 if i not in allowed]
        extra = dict(cfg.trl)
        if "generation_kwargs" in extra:
            gen_kwargs.update(extra.pop("generation_kwargs"))
        return TRLConfig(
            output_dir=str(self.out / "trl"),
            seed=cfg.seed,
            use_cpu=cfg.model.device == "cpu",
            bf16=cfg.bf16,
            max_steps=max_steps,
            num_generations=cfg.num_generations,  # G: samples per prompt (one group)
            per_device_train_batch_size=cfg.num_generations * cfg.prompts_per_step,
            gradient_accumulation_steps=1,
            steps_per_generation=1,  # sample a fresh batch for every optimizer step ...
            num_iterations=cfg.num_iterations,  # ... and reuse it μ times (ratio ≠ 1 when μ > 1)
            scale_rewards=cfg.scale_rewards,  # "group": A = (R - mean_G) / std_G
            loss_type=cfg.loss_type,  # "grpo": 1/G Σ_i 1/|o_i| Σ_t (per-token average)
            epsilon=cfg.epsilon,  # clip(ratio, 1 - ε, 1 + ε)
            beta=cfg.beta,  # β · KL(π_θ || π_ref), k3 estimator per token
            learning_rate=cfg.learning_rate,
            lr_scheduler_type="constant",
            temperature=cfg.temperature,
            top_p=cfg.top_p,
            max_completion_length=cfg.max_completion_length,
            generation_kwargs=gen_kwargs or None,
            use_vllm=cfg.use_vllm,
            vllm_mode=cfg.vllm_mode,
            vllm_gpu_memory_utilization=cfg.vllm_gpu_memory_utilization,
            logging_steps=1,
            save_strategy="no",  # checkpoints are ours (atomic), written from _MetricsCallback
            report_to=[],
            disable_tqdm=True,  # progress goes to metrics.jsonl / the CLI's bar, not stdout
            remove_unused_columns=False,
            disable_dropout=True,
            dataloader_num_workers=0,
            **extra,
        )

    def _rows(self) -> list[dict[str, Any]]:
        if self.rows is None:
            cfg = self.config
            self.original = initial_rows(self.tasks().values(), cfg.template_name,
                                         repeat=cfg.repeat)
            self.rows = [dict(r) for r in self.original]
        return self.rows

    def _setup(self) -> None:
        if self._trl is not None:
            return
        import torch
        from datasets import Dataset
        from transformers import PrinterCallback

        cfg = self.config
        seed_everything(cfg.seed)
        if cfg.model.threads is not None:
            torch.set_num_threads(cfg.model.threads)
        base = cfg.model.model_copy(update={"lora": None})
        model, tokenizer = build_model_and_tokenizer(base, self.out, seed=cfg.seed)
        peft_config = None
        if cfg.model.lora is not None:
            from peft import LoraConfig

            lora = cfg.model.lora
            peft_config = LoraConfig(r=lora.r, lora_alpha=lora.alpha, lora_dropout=lora.dropout,
                                     target_modules=lora.target_modules, task_type="CAUSAL_LM")
        self._tokenizer = tokenizer
        self._trl = _trl_trainer_class()(
            model=model, reward_funcs=[self.reward_function()],
            args=self.trl_args(self._steps_for(0), tokenizer),
            train_dataset=Dataset.from_list(self._rows()), processing_class=tokenizer,
            peft_config=peft_config, callbacks=[_MetricsCallback(self)])
        self._trl.remove_callback(PrinterCallback)
        self._model = self._trl.model

    def _steps_for(self, generation: int) -> int:
        cfg = self.config
        per = cfg.steps // cfg.generations
        return per + (cfg.steps - per * cfg.generations if generation == cfg.generations - 1 else 0)

    def _micro_steps_per_sample(self) -> int:
        """TRL micro-steps between two sampling rounds (1 unless μ > 1 reuses a batch)."""
        args = self._trl.args
        return int(args.steps_per_generation) * int(self._trl.num_iterations)

    # ------------------------------------------------------------------ Trainer API

    def train(self) -> dict[str, Any]:
        """Run the remaining generations; returns a summary (steps, last metrics, dataset size)."""
        import torch
        from datasets import Dataset

        cfg = self.config
        self.out.mkdir(parents=True, exist_ok=True)
        self._setup()
        spec = cfg.checkpoint.resume_from
        if self._resume_from is None and spec is not None:
            found = latest_checkpoint(self.checkpoint_root) if spec == "latest" else Path(spec)
            if found is not None:  # "latest" with no checkpoint yet: a fresh start
                self.resume(found)
        resume, self._resume_from = self._resume_from, None
        if resume is not None:
            # the state the saved step ended in; a mid-generation resume gets it again from HF
            restore_rng_state(torch.load(resume / RNG_FILE, weights_only=True))
        self._writer = MetricsWriter(self.out / cfg.logging.metrics_file,
                                     truncate_after=self.step, callback=self.progress)
        self.last: dict[str, Any] = {}
        trl = self._trl
        reward = self.reward_function()
        try:
            while self.generation < cfg.generations:
                self._start_generation()
                start = sum(self._steps_for(g) for g in range(self.generation))
                total = self._steps_for(self.generation)
                done = self.step - start
                if done < total:
                    self._offset = start
                    trl.args.max_steps = total
                    trl.train_dataset = Dataset.from_list(self._rows())
                    trl._step = done * trl.args.gradient_accumulation_steps
                    hf_resume = None
                    if done == 0:  # a fresh generation: no samples of the previous dataset
                        reward.rollouts.clear()
                        trl._buffered_inputs = None
                    elif resume is not None:
                        hf_resume = self._hf_resume(resume, done)
                    trl.train(resume_from_checkpoint=hf_resume)
                resume = None
                if cfg.generations > 1 and self.generation < cfg.generations - 1:
                    self.rows = reconstruct(
                        self.original or [], self._rows(), list(reward.rollouts), self.tasks(),
                        cfg.template_name, generation=self.generation,
                        max_history=cfg.max_history, per_length_cap=cfg.per_length_cap)
                self.generation += 1
        finally:
            self._writer.close()
        self.save(self.out / "final")
        summary = {"steps": self.step, "generations": self.generation, "rows": len(self._rows()),
                   "history_mix": self.history_mix, "metrics": self.last,
                   "out_dir": str(self.out)}
        # the run's record of what it trained on (the history mix), next to metrics.jsonl
        (self.out / "train_summary.json").write_text(json.dumps(summary, indent=2) + "\n",
                                                     encoding="utf-8")
        return summary

    def _start_generation(self) -> None:
        """Record and log the history-length mix of the dataset this generation trains on.

        It is what shows a sequential run is sequential: the number of prompts with 0, 1, ...
        circuits of history. It goes to the INFO log, to every metrics line of the generation
        (``history_lengths``, ``prompts_with_history``) and to the summary (``history_mix``).
        Recomputed on resume from the restored pool, so it is the same as uninterrupted.
        """
        counts = history_length_mix(self._rows(), self.config.max_history)
        mix = {"generation": self.generation, "rows": sum(counts), "history_lengths": counts,
               "prompts_with_history": sum(counts[1:])}
        self.history_mix = [m for m in self.history_mix if m["generation"] < self.generation]
        self.history_mix.append(mix)
        log.info("generation_start", generation=self.generation, rows=mix["rows"],
                 history_lengths=counts, prompts_with_history=mix["prompts_with_history"])

    def _hf_resume(self, path: Path, done: int) -> str | None:
        """Ready a mid-generation resume: TRL's reused sample batch; the path HF resumes from."""
        import torch

        trl = self._trl
        if trl._step % self._micro_steps_per_sample():  # μ > 1, between two sampling rounds
            buffer = path / _BUFFER_FILE
            if not buffer.is_file():
                raise CheckpointError(f"{path} was saved while TRL reused a sample batch but has "
                                      f"no {_BUFFER_FILE}")
            trl._buffered_inputs = torch.load(buffer, map_location=trl.accelerator.device,
                                              weights_only=True)
        if not (path / _HF_STATE_FILE).is_file():
            log.warning("resume_inexact", checkpoint=str(path), step=done,
                        reason=f"no {_HF_STATE_FILE}: the data position restarts")
            return None
        return str(path)

    def evaluate(self) -> dict[str, Any]:
        """Sample one group per dataset row with the current policy and score it (no update)."""
        self._setup()
        trainer = self._trl
        rows = self._rows()
        reward = self.reward_function()
        before = len(reward.rollouts)
        from datasets import Dataset

        trainer.eval_dataset = Dataset.from_list(rows)
        trainer.args.per_device_eval_batch_size = self.config.num_generations
        out = trainer.evaluate()
        new = reward.rollouts[before:]
        scored = [r.reward for r in new if r.reward is not None]
        return {"reward_mean": float(np.mean(scored)) if scored else None,
                "pass_rate": float(np.mean([r.passed for r in new])) if new else None,
                "samples": len(new), **{k: v for k, v in out.items() if isinstance(v, float)}}

    def save(self, path: Path) -> None:
        """Everything a resume needs to continue as if uninterrupted (see the package docstring).

        Beyond the shared layout: TRL's ``trainer_state.json`` (step within the generation, for
        HF's data skipping), the buffered sample batch while μ > 1 reuses it, and the loop state.
        """
        import torch

        self._setup()
        trainer = self._trl

        def save_model(d: Path) -> None:
            trainer.model.save_pretrained(d)
            self._tokenizer.save_pretrained(d)
            trainer.state.save_to_json(str(d / _HF_STATE_FILE))
            if trainer._buffered_inputs is not None and self._micro_steps_per_sample() > 1:
                torch.save(trainer._buffered_inputs, d / _BUFFER_FILE)

        rollouts = [r.model_dump() for r in self.reward_function().rollouts]
        save_checkpoint(path, step=self.step, optimizer=trainer.optimizer,
                        scheduler=trainer.lr_scheduler, save_model=save_model,
                        state={"generation": self.generation, "rows": self._rows(),
                               "original": self.original, "rollouts": rollouts,
                               "history_mix": self.history_mix, "trainer": "grpo"})

    def resume(self, path: Path) -> None:
        """Restore a :meth:`save` checkpoint; the next :meth:`train` continues from its step.

        Weights and the loop state are restored now. RNG, optimizer and scheduler are restored
        when :meth:`train` starts: inside a generation by HF's ``resume_from_checkpoint``; at a
        boundary the RNG directly and the optimizer once TRL has created it
        (``_MetricsCallback.on_train_begin``).
        """
        import torch
        from safetensors.torch import load_file

        self._setup()
        path = Path(path)
        state = load_checkpoint(path, restore_rng=False)
        if state.state.get("trainer") not in (None, self.name):
            raise TrainerConfigError(f"{path} is a {state.state.get('trainer')!r} checkpoint, "
                                     "not a GRPO one")
        self.step = state.step
        self.generation = int(state.state.get("generation", 0))
        self.rows = state.state.get("rows")
        self.original = state.state.get("original")
        self.history_mix = list(state.state.get("history_mix") or [])
        self.reward_function().rollouts[:] = [
            _rollout_from_json(r) for r in state.state.get("rollouts") or []]
        model = self._trl.model
        if hasattr(model, "load_adapter") and (path / "adapter_model.safetensors").exists():
            from peft import set_peft_model_state_dict

            set_peft_model_state_dict(model, load_file(path / "adapter_model.safetensors"))
        else:
            model.load_state_dict(load_file(path / "model.safetensors"), strict=False)
        self._pending_optim = (torch.load(path / "optimizer.pt", weights_only=True)
                               if (path / "optimizer.pt").exists() else None)
        self._resume_from = path

    # ------------------------------------------------------------------ logging

    def _record(self, global_step: int, logs: Mapping[str, Any]) -> None:
        self.step = self._offset + global_step
        record: dict[str, Any] = {"step": self.step, "generation": self.generation}
        if self.history_mix:
            mix = self.history_mix[-1]
            record["history_lengths"] = list(mix["history_lengths"])
            record["prompts_with_history"] = mix["prompts_with_history"]
        for key, name in _LOG_KEYS.items():
            value = logs.get(key)
            record[name] = value if value is None or not isinstance(value, float) or math.isfinite(
                value) else None
        record.setdefault("reward_mean", None)
        self.last = record
        self._writer.write(record)
        every = self.config.checkpoint.every
        if every and self.step % every == 0 and self.step < self.config.steps:
            # after the metrics line, so a resumed run never lacks the checkpoint's own step
            self.save(checkpoint_path(self.checkpoint_root, self.step))
            prune_checkpoints(self.checkpoint_root, self.config.checkpoint.keep)
