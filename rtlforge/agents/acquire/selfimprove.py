"""``trainer: self-improve``: RL on a growing BEHAVE task pool, with acquisition rounds between.

The loop of BEHAVE §3.4: train k updates → acquire (one round over the rollouts of those
updates) → admit; training resumes once at least N tasks were admitted (or after
``max_acquire_attempts`` rounds that admitted fewer, so a dry library cannot stall the run)
→ continue until ``steps`` updates. Every update draws its groups with the paper's schedule
(:class:`rtlforge.behave.acquire.schedule.TaskSchedule`: up to 12 groups, the first 8 complete
non-constant ones kept, cool-downs, unseen first).

Why here. The trainer needs the trainers' config, model and checkpoint machinery and BEHAVE's
pool, schedule and acquisition; ``trainers`` and ``behave`` may not import each other, and
``agents`` (the top layer) may import both. It registers through ``register_trainers`` from the
acquisition roles' plugin, like the router trainer.

Why its own update. The GRPO trainer hands sampling to TRL's dataloader, which fixes the prompts
of a step before any reward is seen; the schedule decides each next group from the rewards of
the previous ones. So this trainer samples itself and applies the GRPO objective for one policy
iteration per batch (μ = 1, where the clipped ratio is 1 and the surrogate is the
advantage-weighted token log-likelihood; advantages ``(r - mean) / (std + 1e-4)`` per group),
without the KL term. The policy writes a behaviour model B̂ for the task's spec and interface;
the reward is ``behave-model`` (B̂ against B* under BEHAVE-Sim; None abstains).

Resumable after a kill: a checkpoint after every update and every acquisition round holds the
weights, optimizer, RNG, the schedule's state and the loop's phase; the pool's own files are
restored from it (a half-finished acquisition round is rerun: the pool discards what it had
admitted). Heavy imports (torch, transformers) happen inside functions.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field

from rtlforge.behave.acquire.roles import DEFAULT_ROLES, Stage
from rtlforge.behave.acquire.schedule import ScheduleConfig, ScheduleState, TaskSchedule
from rtlforge.core.interfaces import Trainer
from rtlforge.core.log import get_logger
from rtlforge.trainers.checkpoints import (
    checkpoint_path,
    latest_checkpoint,
    load_checkpoint,
    prune_checkpoints,
    save_checkpoint,
)
from rtlforge.trainers.config import TrainerConfig
from rtlforge.trainers.errors import TrainerConfigError
from rtlforge.trainers.metrics import MetricsWriter, ProgressCallback
from rtlforge.trainers.models import build_model_and_tokenizer
from rtlforge.trainers.rng import seed_everything

__all__ = ["SelfImproveConfig", "SelfImproveTrainer"]

_log = get_logger(__name__)
_WEIGHTS = "policy.pt"
_PROMPT = """\
Write a behaviour model in the BEHAVE DSL for this design.

{spec}

Interface:
{interface}

Answer with one ```python block."""


class SelfImproveConfig(TrainerConfig):
    """``steps`` is the number of policy updates; acquisition runs after every
    ``updates_per_round`` of them (not after the last)."""

    trainer: Literal["self-improve"] = "self-improve"
    tasks: list[str] = Field(min_length=1, description="seed BEHAVE task directories")
    pool: str | None = Field(None, description="the task pool; default OUT/pool")
    sources: str = Field(description="the source library")
    evaluation: list[str] = Field(default_factory=list,
                                  description="evaluation sets sources must not overlap")
    generator: str = Field(description="generator plugin the acquisition roles use")
    generator_options: dict[str, Any] = Field(default_factory=dict)
    roles: dict[Stage, str] = Field(default_factory=lambda: dict(DEFAULT_ROLES))
    max_picks: int = Field(2, ge=1, le=20)
    max_rounds: int = Field(3, ge=1, le=10)
    updates_per_round: int = Field(ge=1, description="k: updates between acquisitions")
    admit_min: int = Field(1, ge=0, description="N: admitted tasks before training resumes")
    max_acquire_attempts: int = Field(3, ge=1)
    schedule: ScheduleConfig = ScheduleConfig()
    num_generations: int = Field(4, ge=2, description="G: rollouts per group")
    max_new_tokens: int = Field(256, ge=1)
    temperature: float = Field(1.0, gt=0)
    learning_rate: float = Field(1e-5, gt=0)
    reward_sequences: int = Field(10, ge=1, description="BEHAVE-Sim stimulus for the reward")
    reward_transactions: int = Field(50, ge=1)
    reward_options: dict[str, Any] = Field(
        default_factory=dict, description="further behave-model options, e.g. preset: paper "
        "(the paper's scoring budget; unresolved checks score 0)")


class SelfImproveTrainer(Trainer):
    name: ClassVar[str] = "self-improve"
    config_class: ClassVar[type[SelfImproveConfig]] = SelfImproveConfig
    reports_progress: ClassVar[bool] = True

    def __init__(self, config: SelfImproveConfig, *, host: Any = None,
                 progress: ProgressCallback | None = None) -> None:
        """Args:
            config: the validated self-improvement config (the YAML file's
                ``SelfImproveConfig``).
            host: where the roles, generators and reward the config names come from (the
                default host when left out).
            progress: called with each metrics record once it is written (the CLI draws its
                progress bar with it).
        """
        from rtlforge.core.plugins import PluginHost

        if config.out_dir is None:
            raise TrainerConfigError("self-improve: no output directory (out_dir or --out)")
        self.config = config
        self.host = host if host is not None else PluginHost.default()
        self.progress = progress
        self.out_dir = Path(config.out_dir)
        self.pool_dir = Path(config.pool) if config.pool else self.out_dir / "pool"
        self.step = 0
        self.phase: Literal["train", "acquire"] = "train"
        self.admitted_since = 0
        self.acquire_attempts = 0
        self.acquisitions = 0
        self._model: Any = None
        self._tokenizer: Any = None
        self._optimizer: Any = None
        self._reward: Any = None
        self._resume_from: Path | None = None

    # ------------------------------------------------------------------ construction

    def _build(self) -> None:
        if self._model is not None:
            return
        import torch

        seed_everything(self.config.seed)
        self._model, self._tokenizer = build_model_and_tokenizer(
            self.config.model, self.out_dir, seed=self.config.seed)
        self._optimizer = torch.optim.AdamW(
            [p for p in self._model.parameters() if p.requires_grad],
            lr=self.config.learning_rate)
        self._reward = self.host.create(
            "reward", "behave-model", **{
                "seed": self.config.seed, "sequences": self.config.reward_sequences,
                "transactions": self.config.reward_transactions, **self.config.reward_options})

    def _seed_pool(self) -> TaskSchedule:
        from rtlforge.behave.acquire.taskpool import TaskPool
        from rtlforge.behave.sim.task import BehaveTaskError, load_behave_task

        pool = TaskPool(self.pool_dir)
        path = self.pool_dir / "schedule.json"
        schedule = (TaskSchedule.load(path) if path.exists()
                    else TaskSchedule(ScheduleState(config=self.config.schedule)))
        if schedule.state.config != self.config.schedule:
            raise TrainerConfigError(f"self-improve: the pool's schedule ({path}) was made "
                                     "with other settings than the config's 'schedule'")
        for raw in self.config.tasks:
            source = Path(raw)
            try:
                task = load_behave_task(source)
            except BehaveTaskError as exc:
                raise TrainerConfigError(f"self-improve: seed task {source}: {exc}") from exc
            target = pool.tasks_dir / task.id
            if not target.exists():
                shutil.copytree(source, target)
            schedule.add_tasks([task.id])
        schedule.save(self.pool_dir / "schedule.json")
        return schedule

    # ----------------------------------------------------------------------- rollouts

    def _prompt(self, task_id: str) -> tuple[str, Path]:
        from rtlforge.behave.acquire.round import interface_document
        from rtlforge.behave.sim.task import load_behave_task

        directory = self.pool_dir / "tasks" / task_id
        task = load_behave_task(directory)
        return _PROMPT.format(spec=task.spec.strip(), interface=interface_document(task)), \
            directory

    def _sample(self, prompt: str) -> tuple[Any, Any, list[str]]:
        import torch

        enc = self._tokenizer([prompt] * self.config.num_generations, return_tensors="pt",
                              padding=True, add_special_tokens=False)
        prompt_len = enc.input_ids.shape[1]
        with torch.no_grad():
            out = self._model.generate(
                **enc, do_sample=True, temperature=self.config.temperature, top_k=0,
                top_p=1.0, max_new_tokens=self.config.max_new_tokens,
                pad_token_id=self._tokenizer.pad_token_id)
        texts = [self._tokenizer.decode(row[prompt_len:], skip_special_tokens=True)
                 for row in out]
        return out, prompt_len, texts

    def _update(self, groups: list[tuple[Any, int, list[float]]]) -> float | None:
        """One optimizer step on the kept groups (see the module); the loss, or None."""
        import torch

        if not groups:
            return None
        self._model.train()
        self._optimizer.zero_grad()
        total = 0.0
        pad = self._tokenizer.pad_token_id
        for sequences, prompt_len, rewards in groups:
            scores = torch.tensor(rewards, dtype=torch.float32)
            advantages = (scores - scores.mean()) / (scores.std(unbiased=False) + 1e-4)
            logits = self._model(input_ids=sequences).logits[:, prompt_len - 1:-1]
            targets = sequences[:, prompt_len:]
            mask = (targets != pad).float()
            token_lp = torch.log_softmax(logits.float(), dim=-1).gather(
                -1, targets.unsqueeze(-1)).squeeze(-1)
            per_seq = (token_lp * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1.0)
            loss = -(advantages * per_seq).mean() / len(groups)
            loss.backward()
            total += float(loss.detach())
        self._optimizer.step()
        self._model.eval()
        return total

    def train_update(self, schedule: TaskSchedule) -> dict[str, Any]:
        """One update: draw groups with the schedule, score them, step on the kept ones."""
        from rtlforge.behave.rewards import reward_means

        groups: dict[str, tuple[Any, int, list[float | None]]] = {}
        rows: list[dict[str, Any]] = []
        scored_details: list[Any] = []

        def rollout(task_id: str) -> list[float | None]:
            prompt, directory = self._prompt(task_id)
            sequences, prompt_len, texts = self._sample(prompt)
            details = self._reward.score_detailed(
                [prompt] * len(texts), texts, behave_task=[str(directory)] * len(texts))
            rewards = [d.reward for d in details]
            scored_details.extend(details)
            for detail in details:
                rows.append({"task_id": task_id, "update": self.step, "reward": detail.reward,
                             "feedback": detail.reason or detail.verdict or ""})
            groups[task_id] = (sequences, prompt_len, rewards)
            return rewards

        record = schedule.run_update(rollout)
        kept = [(groups[t][0], groups[t][1], [float(r) for r in groups[t][2] if r is not None])
                for t in record.kept]  # kept groups are complete: no None among their rewards
        loss = self._update(kept)
        with (self.out_dir / "rollouts.jsonl").open("a", encoding="utf-8") as out:
            for row in rows:
                out.write(json.dumps(row) + "\n")
        scored = [r["reward"] for r in rows if r["reward"] is not None]
        self.step += 1
        return {"step": self.step, "event": "update", "drawn": len(record.groups),
                "kept": len(record.kept), "kept_tasks": list(record.kept),
                "drawn_tasks": [g.task_id for g in record.groups],
                "reward_mean": sum(scored) / len(scored) if scored else None,
                # both averages whatever the reward's policy: timeouts left out / counted 0
                "reward_mean_unresolved_zero": reward_means(scored_details)["mean_zero"],
                "abstained": len(rows) - len(scored), "loss": loss,
                "pool_tasks": len(schedule.state.tasks)}

    # ---------------------------------------------------------------------- acquisition

    def acquire(self) -> dict[str, Any]:
        from rtlforge.behave.acquire.round import RoundConfig, read_rollout_log, run_round
        from rtlforge.behave.acquire.sources import EvaluationIndex, load_library
        from rtlforge.behave.acquire.taskpool import TaskPool

        window = max(0, self.step - self.config.updates_per_round)
        log = self.out_dir / "rollouts.jsonl"
        rollouts = [r for r in (read_rollout_log(log) if log.exists() else [])
                    if r.update is not None and r.update >= window]
        index = (EvaluationIndex.from_paths(self.config.evaluation)
                 if self.config.evaluation else None)
        library = load_library(self.config.sources, evaluation=index)
        generator = self.host.create("generator", self.config.generator,
                                     **self.config.generator_options)
        try:
            result = run_round(host=self.host, generator=generator,
                               pool=TaskPool(self.pool_dir), library=library,
                               rollouts=rollouts,
                               config=RoundConfig(max_picks=self.config.max_picks,
                                                  max_rounds=self.config.max_rounds,
                                                  seed=self.config.seed,
                                                  roles=self.config.roles))
        finally:
            generator.close()
        admitted = [r.task_id for r in result.of("admission")]
        self.admitted_since += len(admitted)
        self.acquire_attempts += 1
        self.acquisitions += 1
        if (self.admitted_since >= self.config.admit_min
                or self.acquire_attempts >= self.config.max_acquire_attempts):
            self.phase, self.admitted_since, self.acquire_attempts = "train", 0, 0
        return {"step": self.step, "event": "acquire", "round": result.round,
                "admitted": admitted, "rejected": len(result.of("rejection")),
                "unresolved": len(result.of("unresolved")), "phase": self.phase}

    # ---------------------------------------------------------------------- the loop

    def train(self) -> dict[str, Any]:
        self._build()
        resume = self._resume_from or self._configured_resume()
        if resume is not None:
            self.resume(resume)
        schedule = self._seed_pool() if resume is None else TaskSchedule.load(
            self.pool_dir / "schedule.json")
        root = self.out_dir / "checkpoints"
        cfg = self.config
        last: dict[str, Any] = {}
        with MetricsWriter(self.out_dir / cfg.logging.metrics_file,
                           truncate_after=self.step if resume is not None else None,
                           callback=self.progress) as writer:
            while self.step < cfg.steps:
                if self.phase == "acquire":
                    last = self.acquire()
                    schedule = TaskSchedule.load(self.pool_dir / "schedule.json")
                else:
                    last = self.train_update(schedule)
                    schedule.save(self.pool_dir / "schedule.json")
                    if self.step % cfg.updates_per_round == 0 and self.step < cfg.steps:
                        self.phase = "acquire"
                writer.write(last)
                self._checkpoint(schedule, checkpoint_path(root, self._checkpoint_index()))
                prune_checkpoints(root, cfg.checkpoint.keep)
        self.save(self.out_dir / "final")
        return {**last, "acquisitions": self.acquisitions,
                "pool_tasks": len(schedule.state.tasks)}

    def _checkpoint_index(self) -> int:
        # updates and acquisition rounds both checkpoint: number them in one sequence
        return self.step + self.acquisitions

    def _configured_resume(self) -> Path | None:
        spec = self.config.checkpoint.resume_from
        if spec is None:
            return None
        if spec == "latest":
            return latest_checkpoint(self.out_dir / "checkpoints")
        return Path(spec)

    def _state(self, schedule: TaskSchedule | None = None) -> dict[str, Any]:
        schedule = schedule or TaskSchedule.load(self.pool_dir / "schedule.json")
        return {"trainer": self.name, "update": self.step, "phase": self.phase,
                "admitted_since": self.admitted_since,
                "acquire_attempts": self.acquire_attempts, "acquisitions": self.acquisitions,
                "schedule": schedule.state.model_dump(mode="json"),
                "rollout_lines": _count_lines(self.out_dir / "rollouts.jsonl")}

    def _checkpoint(self, schedule: TaskSchedule, path: Path) -> None:
        import torch

        def write_model(staging: Path) -> None:
            torch.save(self._model.state_dict(), staging / _WEIGHTS)

        save_checkpoint(path, step=self._checkpoint_index(), optimizer=self._optimizer,
                        save_model=write_model, state=self._state(schedule))

    def save(self, path: Path) -> None:
        self._build()
        self._checkpoint(TaskSchedule.load(self.pool_dir / "schedule.json"), Path(path))

    def resume(self, path: Path) -> None:
        """Restore a checkpoint: weights, optimizer, RNG, the loop's phase, the schedule (and
        the pool's copy of it), the rollout log as it was."""
        import torch

        self._build()
        found = load_checkpoint(path, optimizer=self._optimizer)
        self._model.load_state_dict(torch.load(found.path / _WEIGHTS, map_location="cpu",
                                               weights_only=True))
        state = found.state
        self.step = int(state["update"])
        self.phase = state["phase"]
        self.admitted_since = int(state["admitted_since"])
        self.acquire_attempts = int(state["acquire_attempts"])
        self.acquisitions = int(state["acquisitions"])
        TaskSchedule(ScheduleState.model_validate(state["schedule"])).save(
            self.pool_dir / "schedule.json")
        _truncate_lines(self.out_dir / "rollouts.jsonl", int(state["rollout_lines"]))
        self._resume_from = Path(path)

    def evaluate(self) -> dict[str, Any]:
        """Pool and schedule figures (sampling-based evaluation is what ``train`` logs)."""
        schedule = TaskSchedule.load(self.pool_dir / "schedule.json")
        tasks = schedule.state.tasks.values()
        return {"pool_tasks": len(schedule.state.tasks), "update": schedule.state.update,
                "cooling": sum(t.eligible_from > schedule.state.update for t in tasks),
                "unseen": sum(t.last_observed is None for t in tasks)}


def _count_lines(path: Path) -> int:
    if not path.exists():
        return 0
    with path.open("rb") as fh:
        return sum(1 for _ in fh)


def _truncate_lines(path: Path, keep: int) -> None:
    """Drop rollout lines written after the checkpoint (they will be written again)."""
    if not path.exists():
        return
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    if len(lines) > keep:
        path.write_text("".join(lines[:keep]), encoding="utf-8")

