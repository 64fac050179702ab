"""PPO for Verilog generation after VeriSeek: LoRA policy, value head, any reward plugin.

TRL dropped its PPOTrainer and never accepted a Python reward function in it, so this is a small
PPO of our own on transformers + peft. The design choices, and why:

- **One model.** The policy is a LoRA adapter on the base model; the reference policy for the KL
  penalty is the same model with the adapter switched off (``model.disable_adapter()``), so no
  second copy of the weights sits in memory and the reference can never drift.
- **Value head** on the policy's last hidden state (a single linear layer sharing the trunk), as
  in the usual RLHF PPO; its loss back-propagates into the LoRA weights, weighted by ``vf_coef``
  (``value_trunk_grad: false`` trains the head alone).
- **Reward shaping.** Per token ``r_t = -beta * (log pi(a_t) - log pi_ref(a_t))``, plus the
  sequence reward (from any registered reward plugin) on the last completion token; advantages by
  GAE(gamma, lambda), whitened over the batch (only centred when every score is equal).
- **Abstentions.** A reward of ``None`` is an infrastructure failure, not a verdict: the sample is
  dropped from the update and the statistics, and counted in ``abstained``.
- **Determinism.** Everything random (prompt order, sampling, minibatch shuffles) draws from RNGs
  saved in checkpoints, so a resumed run repeats an uninterrupted one.

The model runs in ``eval()`` mode throughout (dropout off), so the first PPO epoch sees a ratio of
exactly 1 and the old/new log-probabilities differ only through the updates.

Heavy imports (torch, transformers, peft) happen inside functions: the plugin host imports this
module at start-up.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from rtlforge.core.interfaces import Trainer
from rtlforge.core.untrusted import load_json
from rtlforge.trainers.checkpoints import latest_checkpoint, load_checkpoint, save_checkpoint
from rtlforge.trainers.config import LoraSpec, TrainerConfig, resolve_out_dir
from rtlforge.trainers.errors import TrainerConfigError
from rtlforge.trainers.loop import run_steps
from rtlforge.trainers.metrics import ProgressCallback
from rtlforge.trainers.models import build_model_and_tokenizer
from rtlforge.trainers.rng import capture_rng_state, restore_rng_state, seed_everything
from rtlforge.trainers.scoring import score_completions

if TYPE_CHECKING:
    import torch

    from rtlforge.core.plugins import PluginHost


# --------------------------------------------------------------------------------------------
# PPO arithmetic (pure tensor functions, unit-tested by hand)
# --------------------------------------------------------------------------------------------


def masked_mean(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean over the positions where ``mask`` is 1 (padding must not dilute token averages)."""
    return (x * mask).sum() / mask.sum().clamp(min=1)


def masked_whiten(x: torch.Tensor, mask: torch.Tensor, *, scale: bool = True,
                  eps: float = 1e-8) -> torch.Tensor:
    """Zero mean (and unit variance when ``scale``) over the masked positions; padding stays 0."""
    centred = x - masked_mean(x, mask)
    if scale:
        centred = centred * (masked_mean(centred**2, mask) + eps).rsqrt()
    return centred * mask


def shape_rewards(logprobs: torch.Tensor, ref_logprobs: torch.Tensor, mask: torch.Tensor,
                  scores: torch.Tensor, beta: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-token rewards ``-beta * KL_t`` with each sequence's score added on its last token.

    ``KL_t = log pi(a_t) - log pi_ref(a_t)`` (the sampled-token estimator). Returns the rewards
    and the per-token KL, both zero on padding. Completions are right-padded (mask 1...1 0...0).
    """
    import torch

    kl = (logprobs - ref_logprobs) * mask
    rewards = -beta * kl
    last = (mask.sum(dim=1).long() - 1).clamp(min=0)
    rows = torch.arange(rewards.shape[0], device=rewards.device)
    rewards[rows, last] += scores.to(rewards.dtype)
    return rewards, kl


def gae(rewards: torch.Tensor, values: torch.Tensor, mask: torch.Tensor, gamma: float,
        lam: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Generalised advantage estimation on right-padded sequences; returns (advantages, returns).

    ``delta_t = r_t + gamma * V_{t+1} - V_t`` and ``A_t = delta_t + gamma * lam * A_{t+1}``,
    where anything past the last real token (padding, or the end of the sequence) counts as 0:
    the episode ends there.
    """
    import torch

    steps = rewards.shape[1]
    advantages = torch.zeros_like(rewards)
    next_value = torch.zeros_like(rewards[:, 0])
    next_adv = torch.zeros_like(rewards[:, 0])
    for t in reversed(range(steps)):
        m = mask[:, t]
        delta = rewards[:, t] + gamma * next_value - values[:, t]
        adv = (delta + gamma * lam * next_adv) * m
        advantages[:, t] = adv
        next_value = values[:, t] * m
        next_adv = adv
    returns = (advantages + values) * mask
    return advantages, returns


def clipped_policy_loss(logprobs: torch.Tensor, old_logprobs: torch.Tensor,
                        advantages: torch.Tensor, mask: torch.Tensor, clip: float,
                        ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """PPO's clipped surrogate; returns (loss, clip fraction, approx KL old->new).

    ``loss = mean(max(-A * ratio, -A * clip(ratio, 1 - eps, 1 + eps)))``; the approximate KL is
    the non-negative ``k3`` estimator ``(ratio - 1) - log ratio``.
    """
    import torch

    log_ratio = (logprobs - old_logprobs) * mask
    ratio = torch.exp(log_ratio)
    unclipped = -advantages * ratio
    clipped = -advantages * torch.clamp(ratio, 1.0 - clip, 1.0 + clip)
    loss = masked_mean(torch.maximum(unclipped, clipped), mask)
    clipfrac = masked_mean((clipped > unclipped).to(logprobs.dtype), mask)
    approx_kl = masked_mean((ratio - 1.0) - log_ratio, mask)
    return loss, clipfrac, approx_kl


def clipped_value_loss(values: torch.Tensor, old_values: torch.Tensor, returns: torch.Tensor,
                       mask: torch.Tensor, clip: float) -> tuple[torch.Tensor, torch.Tensor]:
    """``0.5 * mean(max((V - R)^2, (V_old + clip(V - V_old, +-eps) - R)^2))``; and clip fraction.

    Clipping the value update keeps one noisy batch from throwing the critic far off.
    """
    import torch

    clipped_values = old_values + torch.clamp(values - old_values, -clip, clip)
    loss1 = (values - returns) ** 2
    loss2 = (clipped_values - returns) ** 2
    loss = 0.5 * masked_mean(torch.maximum(loss1, loss2), mask)
    clipfrac = masked_mean((loss2 > loss1).to(values.dtype), mask)
    return loss, clipfrac


def entropy_from_logits(logits: torch.Tensor) -> torch.Tensor:
    """Per-position entropy of the softmax distribution (logged to watch for collapse)."""
    import torch

    logp = torch.log_softmax(logits.float(), dim=-1)
    return -(logp.exp() * logp).sum(dim=-1)




# --------------------------------------------------------------------------------------------
# Configuration
# --------------------------------------------------------------------------------------------


class RewardSpec(BaseModel):
    """Which reward plugin scores the rollouts, its constructor options, and its time budget."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = "ast-similarity"
    options: dict[str, Any] = Field(default_factory=dict)
    timeout_s: float = Field(600.0, gt=0)  # per batch; unfinished samples abstain
    chunk_size: int | None = Field(None, ge=1)  # samples per parallel reward call; None: batch


class PPOConfig(TrainerConfig):
    """PPO settings on top of the shared trainer config.

    Prompts come inline (``prompts``: rows with a ``prompt`` key) and/or from a JSONL file
    (``dataset``); every other key of a row is a per-sample column handed to the reward (e.g.
    ``reference`` for ``ast-similarity``). All rows must have the same keys.
    """

    trainer: Literal["ppo"] = "ppo"
    reward: RewardSpec = RewardSpec()
    prompts: list[dict[str, Any]] = Field(default_factory=list)
    dataset: str | None = None
    chat_template: bool = True  # render a prompt as a user turn with the tokenizer's template
    system: str | None = None

    # Rollouts: plain sampling at ``temperature`` (no top-k/top-p), so the log-probabilities the
    # update uses are exactly those of the distribution that sampled.
    batch_size: int = Field(8, ge=1)  # completions per step
    max_new_tokens: int = Field(32, ge=1)
    temperature: float = Field(1.0, gt=0.0)

    # Optimisation
    learning_rate: float = Field(1e-3, gt=0.0)
    ppo_epochs: int = Field(4, ge=1)
    minibatch_size: int = Field(4, ge=1)
    max_grad_norm: float | None = Field(1.0, gt=0.0)

    # PPO
    kl_coef: float = Field(0.05, ge=0.0)  # beta of the per-token KL penalty
    gamma: float = Field(1.0, ge=0.0, le=1.0)
    lam: float = Field(0.95, ge=0.0, le=1.0)
    cliprange: float = Field(0.2, gt=0.0)
    cliprange_value: float = Field(0.2, gt=0.0)
    vf_coef: float = Field(0.1, ge=0.0)
    # False: the value loss trains only the head, never the adapter the policy samples from
    value_trunk_grad: bool = True
    value_learning_rate: float | None = Field(None, gt=0.0)  # None: ``learning_rate``
    entropy_coef: float = Field(0.0, ge=0.0)
    reward_scale: float = 1.0  # sequence rewards are multiplied by this before shaping
    whiten_advantages: bool = True

    @model_validator(mode="after")
    def _check(self) -> PPOConfig:
        if not self.prompts and not self.dataset:
            raise ValueError("PPO needs prompts: give 'prompts' rows or a 'dataset' JSONL path")
        if any("prompt" not in row for row in self.prompts):
            raise ValueError("every row of 'prompts' needs a 'prompt' key")
        if self.model.lora is not None and self.model.lora.qlora and self.model.device == "cpu":
            raise ValueError("QLoRA needs a CUDA device")
        return self


# --------------------------------------------------------------------------------------------
# Trainer
# --------------------------------------------------------------------------------------------

_VALUE_HEAD, _TRAINER_RNG, _ADAPTER = "value_head.pt", "ppo_generator.pt", "adapter"


@dataclass
class Rollout:
    """One scored batch of completions, with everything the update needs (no gradients)."""

    input_ids: torch.Tensor  # prompt (left-padded) + completion (right-padded)
    attention_mask: torch.Tensor
    prompt_len: int
    mask: torch.Tensor  # completion tokens up to and including the first end-of-sequence
    logprobs: torch.Tensor
    ref_logprobs: torch.Tensor
    values: torch.Tensor
    scores: torch.Tensor  # sequence rewards times ``reward_scale``
    completions: list[str]
    rewards: list[float]  # the reward plugin's scores, unscaled


def load_rows(config: PPOConfig) -> list[dict[str, Any]]:
    """The prompt rows (inline first, then the dataset file); all must share their keys."""
    rows = [dict(r) for r in config.prompts]
    if config.dataset:
        try:
            with open(config.dataset, encoding="utf-8") as fh:
                rows += [load_json(line) for line in fh if line.strip()]
        except (OSError, ValueError) as exc:
            raise TrainerConfigError(f"cannot read dataset {config.dataset}: {exc}") from exc
    if not rows:
        raise TrainerConfigError("PPO needs at least one prompt row")
    if any(not isinstance(r, dict) or "prompt" not in r for r in rows):
        raise TrainerConfigError("every prompt row must be an object with a 'prompt' key")
    if len({frozenset(r) for r in rows}) > 1:
        raise TrainerConfigError("all prompt rows must have the same keys (they become the "
                                 "reward's columns)")
    return rows


class PPOTrainer(Trainer):
    """PPO on a LoRA policy with a value head; the reference is the adapter-disabled model.

    ``train()`` runs until ``config.steps`` (rollout, score, shape, GAE, ``ppo_epochs`` epochs of
    minibatch updates), writing one metrics line per step to ``OUT/metrics.jsonl`` and calling
    ``progress`` with it (the CLI draws its progress bar there).
    """

    name: ClassVar[str] = "ppo"
    config_class: ClassVar[type[PPOConfig]] = PPOConfig
    reports_progress: ClassVar[bool] = True

    def __init__(self, config: PPOConfig, *, host: PluginHost | None = None,
                 out_dir: str | Path | None = None,
                 progress: ProgressCallback | None = None) -> None:
        """Args:
            config: the validated training config (the YAML file's ``PPOConfig``).
            host: where the reward, validators and estimators the config names come from
                (default: ``PluginHost.default()``).
            out_dir: the run folder; wins over the config's ``out_dir`` (the CLI's ``--out``).
            progress: called with each metrics record once it is written (the CLI draws
                its progress bar with it).
        """
        import torch

        self.config = config
        self.progress = progress
        self.out_dir = resolve_out_dir(config, out_dir)  # ``out_dir`` (the CLI's --out) wins
        self.step = 0
        self.rows = load_rows(config)
        seed_everything(config.seed)
        # Own generator for prompt order and minibatch shuffles; sampling uses torch's global
        # RNG (generate takes no generator). Both are saved in checkpoints.
        self._gen = torch.Generator().manual_seed(config.seed)

        if host is None:
            from rtlforge.core.plugins import PluginHost

            host = PluginHost.default()
        self.reward = host.create("reward", config.reward.name, **config.reward.options)

        # PPO needs an adapter: disabling it is how the reference policy is obtained.
        model_cfg = config.model
        if model_cfg.lora is None:
            model_cfg = model_cfg.model_copy(update={"lora": LoraSpec()})
        self.model, self.tokenizer = build_model_and_tokenizer(model_cfg, self.out_dir,
                                                               seed=config.seed)
        self.model.eval()  # dropout off: the first epoch's ratio is exactly 1
        self.device = next(self.model.parameters()).device
        hidden = self.model.get_base_model().config.get_text_config().hidden_size
        # Zero init: the critic starts at V = 0 rather than at noise the trunk has to undo.
        self.value_head = torch.nn.Linear(hidden, 1).to(self.device)
        torch.nn.init.zeros_(self.value_head.weight)
        torch.nn.init.zeros_(self.value_head.bias)
        policy_params = [p for p in self.model.parameters() if p.requires_grad]
        head_params = list(self.value_head.parameters())
        self.params = policy_params + head_params
        self.optimizer = torch.optim.AdamW([
            {"params": policy_params},
            {"params": head_params, "lr": config.value_learning_rate or config.learning_rate},
        ], lr=config.learning_rate)
        gen_eos = self.model.generation_config.eos_token_id
        eos = gen_eos if isinstance(gen_eos, list) else [gen_eos]
        self.eos_ids = sorted({i for i in [*eos, self.tokenizer.eos_token_id] if i is not None})

        resume_from = config.checkpoint.resume_from
        if resume_from == "latest":
            found = latest_checkpoint(self.out_dir / "checkpoints")
            if found is not None:
                self.resume(found)
        elif resume_from:
            self.resume(Path(resume_from))

    # ------------------------------------------------------------------ helpers

    def _render(self, row: Mapping[str, Any]) -> str:
        if not self.config.chat_template or not self.tokenizer.chat_template:
            return str(row["prompt"])
        messages = [{"role": "user", "content": str(row["prompt"])}]
        if self.config.system:
            messages.insert(0, {"role": "system", "content": self.config.system})
        return str(self.tokenizer.apply_chat_template(messages, add_generation_prompt=True,
                                                      tokenize=False))

    def _next_rows(self) -> list[dict[str, Any]]:
        """``batch_size`` rows; every prompt is used once before any is used twice."""
        import torch

        picks: list[int] = []
        while len(picks) < self.config.batch_size:
            picks += torch.randperm(len(self.rows), generator=self._gen).tolist()
        return [self.rows[i] for i in picks[: self.config.batch_size]]

    def _forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, prompt_len: int,
                 ) -> tuple[torch.Tensor, torch.Tensor]:
        """Temperature-scaled logits and values at each completion position."""
        # Explicit positions so left padding does not shift them (generate does the same).
        positions = (attention_mask.cumsum(-1) - 1).clamp(min=0)
        out = self.model(input_ids=input_ids, attention_mask=attention_mask,
                         position_ids=positions, output_hidden_states=True)
        logits = out.logits[:, prompt_len - 1: -1].float() / self.config.temperature
        hidden = out.hidden_states[-1][:, prompt_len - 1: -1].float()
        if not self.config.value_trunk_grad:
            hidden = hidden.detach()
        return logits, self.value_head(hidden).squeeze(-1)

    def reference_logits(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                         prompt_len: int) -> torch.Tensor:
        """Reference-policy logits: the same model with its LoRA adapter switched off."""
        with self.model.disable_adapter():
            logits, _ = self._forward(input_ids, attention_mask, prompt_len)
        return logits

    @staticmethod
    def _logprobs(logits: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
        import torch

        return torch.log_softmax(logits, dim=-1).gather(-1, tokens.unsqueeze(-1)).squeeze(-1)

    def _completion_mask(self, completion: torch.Tensor) -> torch.Tensor:
        """1 up to and including the first end-of-sequence token, 0 after (generate's padding)."""
        import torch

        eos = torch.isin(completion, torch.tensor(self.eos_ids, device=completion.device)).long()
        return ((eos.cumsum(dim=1) - eos) == 0).float()

    # ------------------------------------------------------------------ rollout and update

    def rollout(self) -> tuple[Rollout | None, dict[str, Any]]:
        """Sample and score one batch; None (with the stats) when every reward abstained."""
        import torch

        cfg = self.config
        rows = self._next_rows()
        enc = self.tokenizer([self._render(r) for r in rows], return_tensors="pt", padding=True,
                             padding_side="left", add_special_tokens=False).to(self.device)
        prompt_len = enc.input_ids.shape[1]
        with torch.no_grad():
            out = self.model.generate(
                **enc, do_sample=True, temperature=cfg.temperature, top_k=0, top_p=1.0,
                max_new_tokens=cfg.max_new_tokens, eos_token_id=self.eos_ids,
                pad_token_id=self.tokenizer.pad_token_id)
        completion = out[:, prompt_len:]
        mask = self._completion_mask(completion)
        texts = [self.tokenizer.decode(c[m.bool()], skip_special_tokens=True)
                 for c, m in zip(completion, mask, strict=True)]
        columns = {k: [r[k] for r in rows] for k in rows[0] if k != "prompt"}
        raw = score_completions(self.reward, [str(r["prompt"]) for r in rows], texts, columns,
                                timeout_s=cfg.reward.timeout_s,
                                chunk_size=cfg.reward.chunk_size or len(texts))
        keep = [i for i, s in enumerate(raw) if s is not None]
        scored = [float(raw[i]) for i in keep]  # type: ignore[arg-type]
        stats: dict[str, Any] = {
            "reward_mean": sum(scored) / len(scored) if scored else None,
            "reward_std": _std(scored) if scored else None,
            "abstained": len(raw) - len(keep),
            "completion_len": float(mask.sum(dim=1).mean()),
        }
        if not keep:
            return None, stats
        idx = torch.tensor(keep, device=self.device)
        input_ids, completion, mask = out[idx], completion[idx], mask[idx]
        attention_mask = torch.cat([enc.attention_mask[idx], mask.long()], dim=1)
        with torch.no_grad():
            logits, values = self._forward(input_ids, attention_mask, prompt_len)
            logprobs = self._logprobs(logits, completion)
            ref = self._logprobs(self.reference_logits(input_ids, attention_mask, prompt_len),
                                 completion)
        scores = torch.tensor(scored, device=self.device) * cfg.reward_scale
        return Rollout(input_ids, attention_mask, prompt_len, mask, logprobs * mask, ref * mask,
                       values * mask, scores, [texts[i] for i in keep], scored), stats

    def update(self, batch: Rollout) -> dict[str, float]:
        """Shape rewards, run GAE, then ``ppo_epochs`` epochs of clipped minibatch updates."""
        import torch

        cfg = self.config
        rewards, kl = shape_rewards(batch.logprobs, batch.ref_logprobs, batch.mask, batch.scores,
                                    cfg.kl_coef)
        advantages, returns = gae(rewards, batch.values, batch.mask, cfg.gamma, cfg.lam)
        if cfg.whiten_advantages and batch.mask.sum() > 1:
            # When every sequence scored the same, no completion is better than another and the
            # advantages are only KL and critic noise: centre them, but do not blow them up.
            scale = bool((batch.scores != batch.scores[0]).any())
            advantages = masked_whiten(advantages, batch.mask, scale=scale)
        sums: dict[str, float] = {}
        updates = 0
        for _ in range(cfg.ppo_epochs):
            order = torch.randperm(batch.input_ids.shape[0], generator=self._gen)
            for chunk in order.to(self.device).split(cfg.minibatch_size):
                mask = batch.mask[chunk]
                logits, values = self._forward(batch.input_ids[chunk],
                                               batch.attention_mask[chunk], batch.prompt_len)
                logprobs = self._logprobs(logits, batch.input_ids[chunk, batch.prompt_len:])
                pg_loss, clipfrac, approx_kl = clipped_policy_loss(
                    logprobs, batch.logprobs[chunk], advantages[chunk], mask, cfg.cliprange)
                vf_loss, vf_clipfrac = clipped_value_loss(
                    values, batch.values[chunk], returns[chunk], mask, cfg.cliprange_value)
                entropy = masked_mean(entropy_from_logits(logits), mask)
                loss = pg_loss + cfg.vf_coef * vf_loss - cfg.entropy_coef * entropy
                self.optimizer.zero_grad(set_to_none=True)
                loss.backward()
                if cfg.max_grad_norm is not None:
                    torch.nn.utils.clip_grad_norm_(self.params, cfg.max_grad_norm)
                self.optimizer.step()
                for key, val in (("policy_loss", pg_loss), ("value_loss", vf_loss),
                                 ("clipfrac", clipfrac), ("value_clipfrac", vf_clipfrac),
                                 ("approx_kl", approx_kl), ("entropy", entropy)):
                    sums[key] = sums.get(key, 0.0) + float(val.detach())
                updates += 1
        metrics = {key: val / updates for key, val in sums.items()}
        metrics["kl"] = float(kl.sum(dim=1).mean())  # per-sequence KL to the reference
        metrics["return_mean"] = float(masked_mean(returns, batch.mask))
        return metrics

    # ------------------------------------------------------------------ Trainer API

    def train_step(self) -> dict[str, Any]:
        """One PPO step (rollout + update); returns its metrics record."""
        start = time.perf_counter()
        batch, stats = self.rollout()
        record: dict[str, Any] = {"step": self.step + 1, **stats}
        if batch is not None:
            record.update(self.update(batch))
        self.step += 1
        record["step_time_s"] = round(time.perf_counter() - start, 4)
        return record

    def train(self) -> dict[str, Any]:
        """Run from ``self.step`` (0, or the resumed step) to ``config.steps``; last record."""
        return run_steps(self, self.config, self.out_dir, self.progress)

    def evaluate(self, batches: int = 1) -> dict[str, Any]:
        """Reward statistics over ``batches`` sampled batches, without updating.

        The RNG states are restored afterwards, so evaluating does not change the training run.
        """
        state, gen_state = capture_rng_state(), self._gen.get_state()
        scores: list[float] = []
        abstained = 0
        try:
            for _ in range(batches):
                batch, stats = self.rollout()
                abstained += stats["abstained"]
                if batch is not None:
                    scores += batch.rewards
        finally:
            restore_rng_state(state)
            self._gen.set_state(gen_state)
        return {"step": self.step, "samples": len(scores), "abstained": abstained,
                "reward_mean": sum(scores) / len(scores) if scores else None,
                "reward_std": _std(scores) if scores else None}

    def save(self, path: Path) -> None:
        """Checkpoint: adapter, value head, optimizer, RNG states (global + trainer), step."""
        import torch

        def save_model(staging: Path) -> None:
            self.model.save_pretrained(staging / _ADAPTER)
            self.tokenizer.save_pretrained(staging / _ADAPTER)
            torch.save(self.value_head.state_dict(), staging / _VALUE_HEAD)
            torch.save(self._gen.get_state(), staging / _TRAINER_RNG)

        save_checkpoint(path, step=self.step, optimizer=self.optimizer, save_model=save_model,
                        state={"trainer": self.name, "seed": self.config.seed})

    def resume(self, path: Path) -> None:
        """Restore a :meth:`save` checkpoint into this freshly constructed trainer."""
        import torch
        from peft import set_peft_model_state_dict
        from safetensors.torch import load_file

        found = load_checkpoint(path, optimizer=self.optimizer)
        weights = load_file(str(found.path / _ADAPTER / "adapter_model.safetensors"))
        set_peft_model_state_dict(self.model, weights)
        self.value_head.load_state_dict(torch.load(found.path / _VALUE_HEAD,
                                                   map_location=self.device, weights_only=True))
        self._gen.set_state(torch.load(found.path / _TRAINER_RNG, weights_only=True))
        self.step = found.step


def _std(xs: Sequence[float]) -> float:
    mean = sum(xs) / len(xs)
    return math.sqrt(sum((x - mean) ** 2 for x in xs) / len(xs))
