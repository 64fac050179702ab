"""``trainer: behave-agent``: GRPO over multi-turn, tool-using episodes (BEHAVE §3.4, App. D).

Per update the pool schedule (:mod:`rtlforge.behave.acquire.schedule`, the paper's: up to 12
groups drawn, the first 8 complete non-constant ones kept, cool-downs) draws tasks; each group
is G rollouts of one task, run in lockstep: the policy samples one turn for every live rollout
in one batched ``generate`` call, then every environment answers its reply's tool calls on the
executor's threads (the tools themselves run in the sandbox, here or, with ``executor: ray``,
on the cluster's workers as :mod:`rtlforge.behave.env.jobs`). A rollout ends on ``submit``, a
budget, a reply without a tool call, or a context that no longer fits; then it is judged and
scored (:mod:`.outcome`: BEHAVE-Sim on the submitted artifact against B*; unresolved = 0; an
infrastructure failure drops the rollout, and its group is incomplete, so not kept).

The kept groups get group-relative advantages and one optimizer step on the masked loss
(:mod:`.objective`): only the policy's own tokens, each in the context it was sampled from
(:mod:`.rollout`), normalised per rollout (GRPO's ``1/G Σ_i 1/|o_i| Σ_t``, with ``|o_i|`` the
model tokens of all turns of rollout i) or per token of the update (DAPO), with an optional
KL to the reference (the adapter switched off, or a frozen copy of the initial weights).

Why its own loop and not TRL's: TRL's GRPO samples single completions from a dataloader; a
multi-turn rollout interleaves sampling with tool execution and a schedule that picks the next
group from the rewards of the last. Resumable: a checkpoint holds the trainable weights,
optimizer, RNG, schedule state and the rollout log's length.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field

from rtlforge.agents.agentrl.acquisition import AcquisitionConfig, acquire_round
from rtlforge.agents.agentrl.context import select_turns
from rtlforge.agents.agentrl.envs import (
    BehaveEnvConfig,
    BehaveEnvFactory,
    EnvFactory,
    EpisodeEnv,
    ToyEnvConfig,
    ToyEnvFactory,
)
from rtlforge.agents.agentrl.objective import group_advantages, masked_policy_loss, token_logprobs
from rtlforge.agents.agentrl.outcome import episode_feedback, score_episode
from rtlforge.agents.agentrl.rollout import Rollout, TurnRecord, pack
from rtlforge.behave.acquire.schedule import ScheduleConfig, ScheduleState, TaskSchedule
from rtlforge.behave.env.messages import Message
from rtlforge.core.interfaces import Trainer
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

__all__ = ["BehaveAgentConfig", "BehaveAgentTrainer"]

_WEIGHTS = "policy.pt"
_ROLLOUTS = "rollouts.jsonl"


class BehaveAgentConfig(TrainerConfig):
    """``steps`` is the number of policy updates (one per schedule update)."""

    trainer: Literal["behave-agent"] = "behave-agent"
    env: BehaveEnvConfig | ToyEnvConfig = Field(discriminator="kind")
    tasks: list[str] = Field(default_factory=list,
                             description="seed BEHAVE task directories (env.kind: behave)")
    pool: str | None = Field(None, description="the task pool; default OUT/pool")
    artifact: Literal["rtl", "model"] = Field("rtl", description="what the reward judges")
    schedule: ScheduleConfig = ScheduleConfig()
    num_generations: int = Field(8, ge=2, description="G: rollouts per group")
    context_window: int = Field(32768, ge=64, description="tokens the policy sees per turn")
    max_new_tokens: int = Field(1024, ge=1, description="tokens per model turn")
    temperature: float = Field(1.0, gt=0)
    allowed_tokens: list[str] | None = Field(
        None, description="restrict sampling (and the loss's distribution) to these tokens")
    learning_rate: float = Field(1e-6, gt=0)
    max_grad_norm: float | None = Field(1.0, gt=0)
    beta: float = Field(0.0, ge=0, description="KL weight to the reference policy")
    loss_norm: Literal["rollout", "token"] = "rollout"
    advantage_eps: float = Field(1e-4, gt=0)
    gradient_checkpointing: bool = Field(
        False, description="recompute activations in the backward pass (long contexts on a "
        "GPU); the loss forward then runs in train mode, so the model's dropout must be 0")
    executor: Literal["serial", "thread", "ray"] = Field(
        "thread", description="where the environments' steps and their tools run: serial or "
        "thread (here), or ray (the steps on this process's threads, every tool job, the "
        "hidden check included, on the Ray cluster's workers)")
    workers: int = Field(4, ge=1, description="threads for the steps")
    executor_options: dict[str, Any] = Field(
        default_factory=dict, description="options of the executor plugin (ray: address, "
        "workers, runtime_env, ...; see `rtlforge plugins --options --kind executor`)")
    log_tokens: bool = Field(
        True, description="the rollout log keeps every segment's token ids (False: only its "
        "length; a 60-turn rollout is hundreds of KB of ids)")
    acquisition: AcquisitionConfig | None = Field(
        None, description="acquisition rounds between updates (self-improvement)")


class BehaveAgentTrainer(Trainer):
    name: ClassVar[str] = "behave-agent"
    config_class: ClassVar[type[BehaveAgentConfig]] = BehaveAgentConfig
    reports_progress: ClassVar[bool] = True

    def __init__(self, config: BehaveAgentConfig, *, host: Any = None,
                 progress: ProgressCallback | None = None,
                 factory: EnvFactory | None = None) -> None:
        """Args:
            config: the validated config (the YAML file's ``BehaveAgentConfig``).
            host: where the executor, the environment's validators and estimator and the
                acquisition roles come from (the default host when left out).
            progress: called with each metrics record once it is written (the CLI draws its
                progress bar with it).
            factory: an environment factory that replaces the one the config's ``env`` names
                (tests, embedding tools).
        """
        from rtlforge.core.plugins import PluginHost

        if config.out_dir is None:
            raise TrainerConfigError("behave-agent: no output directory (out_dir or --out)")
        if config.env.kind == "behave" and not config.tasks and factory is None:
            raise TrainerConfigError("behave-agent: 'tasks' (seed task directories) is empty")
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
        self._factory = factory
        self._model: Any = None
        self._tokenizer: Any = None
        self._optimizer: Any = None
        self._reference: Any = None
        self._allowed: Any = None
        self._executor: Any = None
        self._stop_ids: set[int] = set()

    # ------------------------------------------------------------------ construction

    def _build(self) -> None:
        if self._model is not None:
            return
        import copy

        import torch

        cfg = self.config
        seed_everything(cfg.seed)
        self._model, self._tokenizer = build_model_and_tokenizer(cfg.model, self.out_dir,
                                                                 seed=cfg.seed)
        self._model.eval()  # dropout off: the update's ratio is exactly 1
        if cfg.gradient_checkpointing:
            self._model.gradient_checkpointing_enable(
                gradient_checkpointing_kwargs={"use_reentrant": False})
        if cfg.beta > 0 and cfg.model.lora is None:
            self._reference = copy.deepcopy(self._model).requires_grad_(False)
        self._optimizer = torch.optim.AdamW(
            [p for p in self._model.parameters() if p.requires_grad], lr=cfg.learning_rate)
        if cfg.allowed_tokens is not None:
            ids = []
            for token in cfg.allowed_tokens:
                found = self._tokenizer(token, add_special_tokens=False).input_ids
                if len(found) != 1:
                    raise TrainerConfigError(f"behave-agent: allowed token {token!r} is "
                                             f"{len(found)} tokens, not one")
                ids.append(found[0])
            self._allowed = torch.tensor(sorted(set(ids)))
        eos = self._model.generation_config.eos_token_id
        eos = eos if isinstance(eos, list) else [eos]
        self._stop_ids = {int(i) for i in eos if i is not None}
        if self._factory is None:
            env = cfg.env
            # tools go to the executor only when it is remote: a local pool's threads are
            # busy running the steps that would wait for them
            tools = self.executor if cfg.executor == "ray" else None
            self._factory = (ToyEnvFactory(env) if isinstance(env, ToyEnvConfig) else
                             BehaveEnvFactory(env, tasks=cfg.tasks, pool=self.pool_dir,
                                              host=self.host, executor=tools))

    @property
    def executor(self) -> Any:
        """Where environment steps run (made on first use, closed by :meth:`close`)."""
        if self._executor is None:
            cfg = self.config
            options = dict(cfg.executor_options)
            if cfg.executor == "thread":
                options.setdefault("workers", cfg.workers)
            elif cfg.executor == "ray":
                options.setdefault("local_workers", cfg.workers)
            self._executor = self.host.create("executor", cfg.executor, **options)
        return self._executor

    def close(self) -> None:
        if self._executor is not None:
            self._executor.close()
            self._executor = None
        if self._factory is not None:
            self._factory.close()

    # ------------------------------------------------------------------ tokens

    def _encode(self, text: str) -> list[int]:
        return list(self._tokenizer(text, add_special_tokens=False).input_ids)

    def _render(self, message: Message) -> str:
        content = message.content or ""
        if message.role == "tool":
            if self.config.env.tool_format == "qwen":
                return (f"<|im_start|>user\n<tool_response>\n{content}\n</tool_response>"
                        "<|im_end|>\n")
            return f"<|im_start|>tool\n{content}<|im_end|>\n"
        return f"<|im_start|>{message.role}\n{content}<|im_end|>\n"

    def _generate(self, contexts: list[list[int]]) -> list[list[int]]:
        """One sampled turn per context, cut after its first stop token."""
        import torch

        pad = self._tokenizer.pad_token_id
        width = max(len(c) for c in contexts)
        ids = torch.tensor([[pad] * (width - len(c)) + c for c in contexts])
        attention = torch.tensor([[0] * (width - len(c)) + [1] * len(c) for c in contexts])
        processors = []
        if self._allowed is not None:
            from transformers import LogitsProcessor, LogitsProcessorList

            allowed = self._allowed

            class _Allowed(LogitsProcessor):
                def __call__(self, input_ids: Any, scores: Any) -> Any:
                    keep = torch.full_like(scores, float("-inf"))
                    keep[:, allowed] = 0.0
                    return scores + keep

            processors = LogitsProcessorList([_Allowed()])
        device = next(self._model.parameters()).device
        with torch.no_grad():
            out = self._model.generate(
                input_ids=ids.to(device), attention_mask=attention.to(device), do_sample=True,
                temperature=self.config.temperature, top_k=0, top_p=1.0,
                max_new_tokens=self.config.max_new_tokens, pad_token_id=pad,
                logits_processor=processors or None)
        completions = []
        for row in out[:, width:].tolist():
            cut: list[int] = []
            for token in row:
                cut.append(int(token))
                if token in self._stop_ids:
                    break
            completions.append(cut)
        return completions

    # ------------------------------------------------------------------ rollouts

    def rollout_group(self, task_id: str, group: int) -> list[Rollout]:
        """G rollouts of ``task_id`` in lockstep (see the module)."""
        cfg = self.config
        factory = self._factory
        assert factory is not None
        envs: list[EpisodeEnv] = [factory.make(task_id, i) for i in range(cfg.num_generations)]
        rollouts = [Rollout(update=self.step, task_id=task_id, group=group, index=i)
                    for i in range(cfg.num_generations)]
        prompt_ids = self._encode("<|im_start|>assistant\n")
        try:
            for env, rollout in zip(envs, rollouts, strict=True):
                for message in factory.instructions(env.reset()):
                    rollout.add("instructions", 0, self._encode(self._render(message)))
            live = list(range(len(envs)))
            turn = 0
            while live:
                turn += 1
                contexts, ready = [], []
                for i in live:
                    context = self._context(rollouts[i], turn, prompt_ids)
                    if context is None:
                        rollouts[i].end_reason = "context_full"
                        continue
                    contexts.append(context)
                    ready.append(i)
                if not ready:
                    break
                completions = self._generate([ids for ids, _ in contexts])
                replies = []
                for i, (_ids, record), completion in zip(ready, contexts, completions,
                                                        strict=True):
                    rollout = rollouts[i]
                    index = rollout.add("model", turn, completion)
                    close = "\n" if completion and completion[-1] in self._stop_ids \
                        else "<|im_end|>\n"
                    rollout.add("format", turn, self._encode(close))
                    text = self._tokenizer.decode(completion, skip_special_tokens=True)
                    reply = factory.parse(text, turn)
                    rollout.turns.append(record.model_copy(update={"completion": index}))
                    replies.append(reply)
                answers = list(self.executor.map(
                    lambda pair: pair[0].step(pair[1]),
                    [(envs[i], r) for i, r in zip(ready, replies, strict=True)]))
                for i, messages in zip(ready, answers, strict=True):
                    for message in messages:
                        rollouts[i].add("tool", turn, self._encode(self._render(message)))
                    # the calls the environment answered (what ran, or why not)
                    rollouts[i].turns[-1] = rollouts[i].turns[-1].model_copy(update={
                        "tool_calls": tuple((m.name or "")[:64] for m in messages)})
                live = [i for i in ready if not envs[i].done]
            results = list(self.executor.map(lambda env: env.finish(), envs))
        finally:
            for env in envs:
                env.close()
        for rollout, result in zip(rollouts, results, strict=True):
            score = score_episode(result, cfg.artifact)
            rollout.end_reason = rollout.end_reason or result.end_reason
            rollout.rtl, rollout.model = result.rtl.status, result.model.status
            rollout.reward, rollout.unresolved = score.reward, score.unresolved
            rollout.drop_reason = score.drop_reason
            rollout.feedback = score.drop_reason or episode_feedback(
                result, cfg.artifact, end_reason=rollout.end_reason)
        return rollouts

    def _context(self, rollout: Rollout, turn: int, prompt_ids: list[int]
                 ) -> tuple[list[int], TurnRecord] | None:
        """The tokens for ``turn`` (instructions, the turns that fit, the opening) and its
        record (the completion index is filled in once sampled); None: nothing fits."""
        instructions = rollout.turn_segments(0)
        past = [rollout.turn_segments(t) for t in range(1, turn)]
        lengths = [sum(len(rollout.segments[s].ids) for s in segs) for segs in past]
        chosen = select_turns(sum(len(rollout.segments[s].ids) for s in instructions),
                              lengths, prompt=len(prompt_ids),
                              reserve=self.config.max_new_tokens,
                              window=self.config.context_window)
        if chosen is None:
            return None
        kept, evicted = chosen
        opening = rollout.add("format", turn, prompt_ids)
        context = instructions + [s for k in kept for s in past[k]] + [opening]
        ids = [t for s in context for t in rollout.segments[s].ids]
        return ids, TurnRecord(turn=turn, context=tuple(context), completion=opening,
                               evicted=tuple(k + 1 for k in evicted))

    # ------------------------------------------------------------------ the update

    def rollout_loss(self, rollout: Rollout, advantage: float, norm: float) -> tuple[Any, float]:
        """This rollout's share of the update's loss (divided by ``norm``) and its summed KL.

        Logits are computed only at the rows that predict the model's own tokens
        (``logits_to_keep``): on a real vocabulary and a long context, the full logits of a
        sequence would dwarf the model's activations, and the other rows carry no loss."""
        import torch

        device = next(self._model.parameters()).device
        total: Any = torch.zeros((), device=device)
        kl_total = 0.0
        allowed = self._allowed.to(device) if self._allowed is not None else None
        temperature = self.config.temperature
        for ids, mask in pack(rollout):
            rows = [t for t in range(len(ids) - 1) if mask[t + 1]]
            if not rows:
                continue
            seq = torch.tensor([ids], device=device)
            keep = torch.tensor(rows, device=device)
            targets = seq[0, keep + 1]
            logits = self._model(input_ids=seq, logits_to_keep=keep, use_cache=False).logits[0]
            logprobs = token_logprobs(logits, targets, allowed, temperature)
            ref = None
            if self.config.beta > 0:
                with torch.no_grad():
                    ref = token_logprobs(self._reference_logits(seq, keep), targets,
                                         allowed, temperature)
            loss, kl = masked_policy_loss(logprobs, torch.ones_like(targets), advantage,
                                          ref_logprobs=ref, beta=self.config.beta)
            total = total + loss / norm
            kl_total += float(kl)
        return total, kl_total

    def _reference_logits(self, seq: Any, keep: Any) -> Any:
        if self._reference is not None:
            return self._reference(input_ids=seq, logits_to_keep=keep, use_cache=False).logits[0]
        with self._model.disable_adapter():
            return self._model(input_ids=seq, logits_to_keep=keep, use_cache=False).logits[0]

    def update(self, kept: list[Rollout]) -> dict[str, Any]:
        """One optimizer step on the kept rollouts (advantages already set)."""
        import torch

        trained = [r for r in kept if r.model_tokens > 0]
        if not trained:
            return {"loss": None, "kl": None, "grad_norm": None}
        tokens = sum(r.model_tokens for r in trained)
        self._optimizer.zero_grad()
        if self.config.gradient_checkpointing:
            self._model.train()  # HF checkpoints only in train mode
        loss_sum, kl_sum = 0.0, 0.0
        for rollout in trained:
            assert rollout.advantage is not None
            norm = (rollout.model_tokens * len(trained) if self.config.loss_norm == "rollout"
                    else tokens)
            loss, kl = self.rollout_loss(rollout, rollout.advantage, norm)
            loss.backward()
            loss_sum += float(loss.detach())
            kl_sum += kl
        params = [p for p in self._model.parameters() if p.requires_grad]
        clip = self.config.max_grad_norm if self.config.max_grad_norm is not None \
            else float("inf")
        grad_norm = float(torch.nn.utils.clip_grad_norm_(params, clip))
        self._optimizer.step()
        self._model.eval()
        return {"loss": loss_sum, "kl": kl_sum / tokens if self.config.beta > 0 else None,
                "grad_norm": grad_norm}

    def train_update(self, schedule: TaskSchedule) -> dict[str, Any]:
        """Draw groups with the schedule, roll them out, step on the kept ones, log."""
        started = time.perf_counter()
        drawn: list[list[Rollout]] = []

        def rollout(task_id: str) -> list[float | None]:
            group = self.rollout_group(task_id, len(drawn))
            drawn.append(group)
            return [r.reward for r in group]

        record = schedule.run_update(rollout)
        kept_groups = [group for group, result in zip(drawn, record.groups, strict=True)
                       if result.kept]
        kept: list[Rollout] = []
        for group in kept_groups:
            advantages = group_advantages([float(r.reward) for r in group],  # type: ignore[arg-type]
                                          eps=self.config.advantage_eps)
            for r, a in zip(group, advantages, strict=True):
                r.advantage = a
                kept.append(r)
        stats = self.update(kept)
        rollouts = [r for group in drawn for r in group]
        with (self.out_dir / _ROLLOUTS).open("a", encoding="utf-8") as out:
            for r in rollouts:
                row = r.model_dump(mode="json")
                if not self.config.log_tokens:
                    row["segments"] = [{"kind": s.kind, "turn": s.turn, "n": len(s.ids)}
                                       for s in r.segments]
                out.write(json.dumps(row) + "\n")
        self.step += 1
        return {"step": self.step, "event": "update", **_metrics(rollouts, kept), **stats,
                "drawn_tasks": [g.task_id for g in record.groups],
                "kept_tasks": list(record.kept), "pool_tasks": len(schedule.state.tasks),
                "seconds": round(time.perf_counter() - started, 3)}

    # ------------------------------------------------------------------ the loop

    def _schedule(self, fresh: bool) -> TaskSchedule:
        path = self.pool_dir / "schedule.json"
        self.pool_dir.mkdir(parents=True, exist_ok=True)
        if not fresh:
            return TaskSchedule.load(path)
        schedule = (TaskSchedule.load(path) if path.exists()
                    else TaskSchedule(ScheduleState(config=self.config.schedule)))
        if schedule.state.config != self.config.schedule:
            raise TrainerConfigError(f"behave-agent: the pool's schedule ({path}) was made "
                                     "with other settings than the config's 'schedule'")
        assert self._factory is not None
        schedule.add_tasks(self._factory.task_ids())
        schedule.save(path)
        return schedule

    def train(self) -> dict[str, Any]:
        self._build()
        cfg = self.config
        resume = self._configured_resume()
        if resume is not None:
            self.resume(resume)
        schedule = self._schedule(fresh=resume is None)
        root = self.out_dir / "checkpoints"
        last: dict[str, Any] = {}
        try:
            with MetricsWriter(self.out_dir / cfg.logging.metrics_file,
                               truncate_after=self.step if resume is not None else None,
                               callback=self.progress) as writer:
                while self.step < cfg.steps:
                    if self.phase == "acquire":
                        last = self.acquire()
                        schedule = TaskSchedule.load(self.pool_dir / "schedule.json")
                        writer.write(last)
                        self._checkpoint(schedule, checkpoint_path(root, self._index()))
                        prune_checkpoints(root, cfg.checkpoint.keep)
                        continue
                    last = self.train_update(schedule)
                    schedule.save(self.pool_dir / "schedule.json")
                    acq = cfg.acquisition
                    if (acq is not None and self.step % acq.updates_per_round == 0
                            and self.step < cfg.steps):
                        self.phase = "acquire"
                    if self.step % cfg.logging.every == 0 or self.step == cfg.steps:
                        writer.write(last)
                    every = cfg.checkpoint.every
                    if self.phase == "acquire" or (every is not None and self.step % every == 0):
                        self._checkpoint(schedule, checkpoint_path(root, self._index()))
                        prune_checkpoints(root, cfg.checkpoint.keep)
            self._checkpoint(schedule, self.out_dir / "final")
        finally:
            self.close()
        return {**last, "acquisitions": self.acquisitions,
                "pool_tasks": len(schedule.state.tasks)}

    def _index(self) -> int:
        """Checkpoint number: updates and acquisition rounds both checkpoint, in one sequence."""
        return self.step + self.acquisitions

    def acquire(self) -> dict[str, Any]:
        """One acquisition round over the rollouts of the last k updates (see .acquisition)."""
        acq = self.config.acquisition
        assert acq is not None
        found = acquire_round(acq, host=self.host, pool_dir=self.pool_dir,
                              rollout_log=self.out_dir / _ROLLOUTS,
                              since_update=max(0, self.step - acq.updates_per_round),
                              seed=self.config.seed)
        self.admitted_since += len(found["admitted"])
        self.acquire_attempts += 1
        self.acquisitions += 1
        if self.admitted_since >= acq.admit_min or self.acquire_attempts >= acq.max_attempts:
            self.phase, self.admitted_since, self.acquire_attempts = "train", 0, 0
        return {"step": self.step, "event": "acquire", **found, "phase": self.phase}

    def _configured_resume(self) -> Path | None:
        spec = self.config.checkpoint.resume_from
        if spec is None:
            return None
        if spec == "latest":
            return latest_checkpoint(self.out_dir / "checkpoints")
        return Path(spec)

    def _checkpoint(self, schedule: TaskSchedule, path: Path) -> None:
        import torch

        def write_model(staging: Path) -> None:
            trainable = {n: p.detach().cpu() for n, p in self._model.named_parameters()
                         if p.requires_grad}
            torch.save(trainable, staging / _WEIGHTS)
            self._tokenizer.save_pretrained(staging)

        state = {"trainer": self.name, "update": self.step, "phase": self.phase,
                 "admitted_since": self.admitted_since,
                 "acquire_attempts": self.acquire_attempts, "acquisitions": self.acquisitions,
                 "schedule": schedule.state.model_dump(mode="json"),
                 "rollout_lines": _count_lines(self.out_dir / _ROLLOUTS)}
        save_checkpoint(path, step=self._index(), optimizer=self._optimizer,
                        save_model=write_model, state=state)

    def save(self, path: Path) -> None:
        self._build()
        self._checkpoint(self._schedule(fresh=not (self.pool_dir / "schedule.json").exists()),
                         Path(path))

    def resume(self, path: Path) -> None:
        """Restore weights, optimizer, RNG, the schedule and the rollout log as they were."""
        import torch

        self._build()
        found = load_checkpoint(path, optimizer=self._optimizer)
        weights = torch.load(found.path / _WEIGHTS, map_location="cpu", weights_only=True)
        params = dict(self._model.named_parameters())
        with torch.no_grad():
            for name, value in weights.items():
                params[name].copy_(value)
        state = found.state
        self.step = int(state["update"])
        self.phase = state["phase"]
        self.admitted_since = int(state["admitted_since"])
        self.acquire_attempts = int(state["acquire_attempts"])
        self.acquisitions = int(state["acquisitions"])
        self.pool_dir.mkdir(parents=True, exist_ok=True)
        TaskSchedule(ScheduleState.model_validate(found.state["schedule"])).save(
            self.pool_dir / "schedule.json")
        _truncate_lines(self.out_dir / _ROLLOUTS, int(found.state["rollout_lines"]))

    def evaluate(self) -> dict[str, Any]:
        """The pool's figures; sampled rewards are what ``train`` logs."""
        schedule = TaskSchedule.load(self.pool_dir / "schedule.json")
        return {"pool_tasks": len(schedule.state.tasks), "update": schedule.state.update}


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _metrics(rollouts: list[Rollout], kept: list[Rollout]) -> dict[str, Any]:
    """Per-update figures (docs/behave-agent-rl.md lists them)."""
    scored = [r for r in rollouts if r.reward is not None]
    rtl = [r for r in scored if r.rtl in ("pass", "fail")]
    model = [r for r in scored if r.model in ("pass", "fail")]
    tools: dict[str, int] = {}
    for r in rollouts:
        for name, count in r.tool_counts.items():
            tools[name] = tools.get(name, 0) + count
    return {
        "rollouts": len(rollouts), "dropped": len(rollouts) - len(scored),
        "groups": len({(r.group) for r in rollouts}), "kept_rollouts": len(kept),
        "reward_mean": _mean([float(r.reward) for r in scored]),  # type: ignore[arg-type]
        "rtl_pass_rate": _mean([float(r.rtl == "pass") for r in rtl]),
        "model_pass_rate": _mean([float(r.model == "pass") for r in model]),
        "unresolved_rate": _mean([float(r.unresolved) for r in scored]),
        "turns_mean": _mean([float(len(r.turns)) for r in rollouts]),
        "tokens_mean": _mean([float(r.model_tokens) for r in rollouts]),
        "feedback_tokens_mean": _mean([float(sum(len(s.ids) for s in r.segments
                                                 if s.kind == "tool")) for r in rollouts]),
        "evictions": sum(bool(t.evicted) for r in rollouts for t in r.turns),
        "tool_calls": dict(sorted(tools.items())),
        "end_reasons": _counts(r.end_reason for r in rollouts),
    }


def _counts(values: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for v in values:
        out[v] = out.get(v, 0) + 1
    return dict(sorted(out.items()))


def _count_lines(path: Path) -> int:
    if not path.exists():
        return 0
    with path.open("rb") as fh:
        return sum(1 for _ in fh)


def _truncate_lines(path: Path, keep: int) -> None:
    if not path.exists():
        return
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    if len(lines) > keep:
        path.write_text("".join(lines[:keep]), encoding="utf-8")
