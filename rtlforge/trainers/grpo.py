"""GRPO for sequential Pareto RTL generation, on TRL's ``GRPOTrainer``.

"Pareto-Optimal RTL Code Generation via Multi-Objective RL" trains with GRPO: G samples per
prompt, advantages ``(R - mean) / std`` within each group, a clipped-ratio objective averaged per
token, and a KL penalty of weight β to the reference policy. TRL implements exactly that; this
module only configures it (``trl_args`` shows the mapping), feeds it the reward library through
its TRL adapter, logs what the paper's analysis needs, and wraps it in the generation loop of
§4.2 (:func:`rtlforge.trainers.datasets.reconstruct`).

Abstaining rewards. The reward returns ``None`` for infrastructure failures. TRL 1.16 turns
``None`` into NaN (``_calculate_rewards``), computes group means and stds with ``nanmean`` /
``nanstd`` and sets the advantage of a completion no reward function scored to 0; that is the
exclusion we want, so ``None`` is handed to TRL unchanged and never becomes 0 here.

Checkpoints and resume. A checkpoint (``checkpoint.every``, ``OUT/checkpoints``) holds the
weights/adapter, optimizer, scheduler, RNG, TRL's ``trainer_state.json`` and the generation loop's
state: generation index, dataset pool (rows with their histories) and the current generation's
rollouts so far, which reconstruction needs. Inside a generation the run resumes through
``transformers.Trainer``'s ``resume_from_checkpoint`` (optimizer, scheduler, RNG, data position);
at a generation boundary the loop reconstructs the next dataset from the saved rollouts and starts
it with the restored RNG and optimizer. TRL's prompt shuffle is made a function of (seed, epoch)
(:class:`_EpochSeededSampler`): TRL's own sampler keeps one generator across epochs, which a
resumed run cannot reposition.

Heavy imports (torch, transformers, trl, peft, datasets) happen inside functions.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, StrictBool, model_validator

from rtlforge.core.interfaces import Trainer
from rtlforge.core.log import get_logger
from rtlforge.core.untrusted import load_json
from rtlforge.rewards.adapters import TRAINER_KEYWORDS, RewardSpec, TRLReward
from rtlforge.rewards.base import RewardDetail
from rtlforge.rewards.columns import completion_text
from rtlforge.trainers.base import (
    RNG_FILE,
    CheckpointError,
    MetricsWriter,
    ProgressCallback,
    TrainerConfig,
    TrainerConfigError,
    build_model_and_tokenizer,
    checkpoint_path,
    latest_checkpoint,
    load_checkpoint,
    prune_checkpoints,
    resolve_out_dir,
    restore_rng_state,
    save_checkpoint,
    seed_everything,
)
from rtlforge.trainers.datasets import (
    MAX_HISTORY,
    PER_LENGTH_CAP,
    Rollout,
    history_key,
    history_length_mix,
    initial_rows,
    reconstruct,
)

log = get_logger("rtlforge.trainers.grpo")

__all__ = ["PRESETS", "SEQUENTIAL_GENERATIONS", "ChoiceSpec", "GRPOConfig", "GRPOTrainer",
           "Preset", "RolloutReward", "group_stats"]

Baseline = Literal["single-objective-ppa", "seq-tb", "seq-tb-ppa", "seq-hvc", "repetition-penalty",
                   "paper"]

#: Generations a sequential preset runs when ``generations`` is not set: with ``max_history`` 5
#: the last one trains on histories of up to 4 circuits, which the paper's method needs (§4.2).
SEQUENTIAL_GENERATIONS = MAX_HISTORY


class Preset(BaseModel):
    """What a paper baseline fixes: the reward, the prompts, and whether they show a history.

    ``generations`` is the default number of generations (a sequential preset needs at least
    two, or no prompt ever shows a circuit); ``settings`` are further config defaults the preset
    decides. A field the config sets explicitly wins over both.
    """

    model_config = ConfigDict(frozen=True)

    reward: str
    template: str
    sequential: bool
    generations: int = Field(ge=1)
    reward_kwargs: dict[str, Any] = Field(default_factory=dict)
    settings: dict[str, Any] = Field(default_factory=dict)
    doc: str = ""


#: The paper's methods as configurations of one trainer (docs/training.md, "GRPO").
PRESETS: dict[str, Preset] = {
    "single-objective-ppa": Preset(
        reward="testbench+ppa", template="spec", sequential=False, generations=1,
        doc="plain spec prompts, reward 1[pass] + (Pg/P)(Ag/A)(Dg/D): one scalar PPA target"),
    "seq-tb": Preset(
        reward="testbench", template="pareto", sequential=True,
        generations=SEQUENTIAL_GENERATIONS,
        doc="sequential prompts with history, reward 1[pass] only"),
    "seq-tb-ppa": Preset(
        reward="testbench+ppa", template="pareto", sequential=True,
        generations=SEQUENTIAL_GENERATIONS,
        doc="sequential prompts, reward 1[pass] + scalarised PPA"),
    "seq-hvc": Preset(
        reward="sequential-hvc", template="pareto", sequential=True,
        generations=SEQUENTIAL_GENERATIONS,
        doc="the paper's method with our prompts: sequential prompts, reward "
            "1[pass] + clip(HVC | history, 0, 3)"),
    "repetition-penalty": Preset(
        reward="repetition-penalty", template="pareto", sequential=True,
        generations=SEQUENTIAL_GENERATIONS, reward_kwargs={"penalty": 1.0},
        doc="ablation: TB + scalarised PPA - λ when the circuit repeats its history"),
    "paper": Preset(
        reward="sequential-hvc", template="paper", sequential=True, generations=5,
        reward_kwargs={"hvc_cap": 3.0},
        settings={"max_history": 5, "per_length_cap": 1000, "loss_type": "grpo",
                  "scale_rewards": "group"},
        doc="the paper's method as published (docs/training.md, 'The paper preset'): "
            "seq-hvc with the paper template (our wording of the paper's prompt), "
            "5 generations, histories up to 4"),
}

DEFAULT_BASELINE = "seq-hvc"


def _default_generations(preset: Preset, sequential: bool | None) -> int:
    """The preset's generations, or what ``sequential`` needs when it overrides the preset."""
    if sequential is None or sequential is preset.sequential:
        return preset.generations
    return SEQUENTIAL_GENERATIONS if sequential else 1


class ChoiceSpec(BaseModel):
    """A constrained toy task: the completion is a label that picks a prepared circuit.

    The tiny test model cannot write Verilog, but it can learn which of a few labels earns more
    reward. :class:`RolloutReward` replaces each completion by the variant its first
    non-space character names (an unknown label becomes empty text, i.e. "no code", reward 0),
    and the real reward then validates and measures that circuit. ``variants`` maps a label to a
    ``note`` of ``recorded`` (a JSONL of ``{"task_id", "note", "completion"}``) or, without
    ``recorded``, to the completion text itself. With ``constrain`` sampling is limited to the
    labels' tokens (and end-of-sequence) through ``generation_kwargs.suppress_tokens``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    task_id: str
    variants: dict[str, str]
    recorded: str | None = None
    constrain: bool = True

    @model_validator(mode="after")
    def _labels(self) -> ChoiceSpec:
        if not self.variants or any(len(k) != 1 or k.isspace() for k in self.variants):
            raise ValueError("choice.variants needs single-character, non-space labels")
        return self

    def texts(self) -> dict[str, str]:
        """Label -> completion text holding the variant's Verilog."""
        if self.recorded is None:
            return dict(self.variants)
        found: dict[str, str] = {}
        for line in Path(self.recorded).read_text(encoding="utf-8").splitlines():
            row = load_json(line) if line.strip() else None
            if row and row.get("task_id") == self.task_id:
                found.setdefault(str(row.get("note")), row["completion"])
        missing = sorted(set(self.variants.values()) - set(found))
        if missing:
            raise TrainerConfigError(f"choice: notes {missing} not in {self.recorded}")
        return {label: found[note] for label, note in self.variants.items()}


class GRPOConfig(TrainerConfig):
    """GRPO settings; the TRL option each maps to is in :meth:`GRPOTrainer.trl_args`.

    ``steps`` is the total number of optimizer steps, split evenly over ``generations``.
    """

    trainer: Literal["grpo"] = "grpo"
    baseline: Baseline = DEFAULT_BASELINE
    sequential: StrictBool | None = None  # overrides the preset's; None: the preset's
    reward: str | None = None  # overrides the preset's reward
    reward_kwargs: dict[str, Any] = Field(default_factory=dict)
    template: str | None = None  # overrides the preset's template
    tasks: str
    task_ids: list[str] | None = None
    repeat: int = Field(1, ge=1)  # copies of each history-free prompt in the original dataset
    pipeline: dict[str, Any] = Field(default_factory=lambda: {"timeout": 60.0})
    reward_cache: str | None = None  # SQLite validation cache shared by worker processes
    estimator: str = "yosys-sta"
    estimator_kwargs: dict[str, Any] = Field(default_factory=dict)
    # GRPO
    num_generations: int = Field(8, ge=2)  # G
    prompts_per_step: int = Field(1, ge=1)  # groups per optimizer step
    max_completion_length: int = Field(1024, ge=1)
    temperature: float = Field(1.0, gt=0)
    top_p: float = Field(1.0, gt=0, le=1)
    learning_rate: float = Field(1e-6, gt=0)
    beta: float = Field(0.04, ge=0)  # KL weight
    epsilon: float = Field(0.2, gt=0)  # clip range
    num_iterations: int = Field(1, ge=1)  # μ: policy updates per batch of samples
    loss_type: Literal["grpo", "dapo", "bnpo", "dr_grpo"] = "grpo"
    scale_rewards: Literal["group", "batch", "none"] = "group"
    # generation-based training (paper §4.2); unset: the preset's (``_preset_defaults``)
    generations: int = Field(1, ge=1)
    max_history: int = Field(MAX_HISTORY, ge=1)
    per_length_cap: int = Field(PER_LENGTH_CAP, ge=1)
    # devices: GPU-only paths, configured here, never exercised on CPU
    bf16: bool = False
    use_vllm: bool = False
    vllm_mode: Literal["colocate", "server"] = "colocate"
    vllm_gpu_memory_utilization: float = Field(0.3, gt=0, le=1)
    choice: ChoiceSpec | None = None
    trl: dict[str, Any] = Field(default_factory=dict)  # extra TRL GRPOConfig options, verbatim

    @property
    def preset(self) -> Preset:
        return PRESETS[self.baseline]

    @property
    def is_sequential(self) -> bool:
        """Whether prompts carry a circuit history: ``sequential`` if set, else the preset's."""
        return self.preset.sequential if self.sequential is None else self.sequential

    @property
    def reward_name(self) -> str:
        return self.reward or self.preset.reward

    @property
    def template_name(self) -> str:
        return self.template or self.preset.template

    @model_validator(mode="before")
    @classmethod
    def _preset_defaults(cls, data: Any) -> Any:
        """Fill what the preset decides and the config leaves unset (or null).

        ``generations`` defaults to the preset's; with ``sequential`` overriding the preset's
        nature it defaults to what that nature needs (1 without history, else
        :data:`SEQUENTIAL_GENERATIONS`).
        """
        if not isinstance(data, Mapping):
            return data
        name = data.get("baseline")
        preset = PRESETS.get(name if isinstance(name, str) else DEFAULT_BASELINE)
        if preset is None:
            return data  # an unknown baseline: the field's own validation names it
        sequential = data.get("sequential")
        defaults = {**preset.settings, "generations": _default_generations(
            preset, sequential if isinstance(sequential, bool) else None)}
        return {**data, **{k: v for k, v in defaults.items() if data.get(k) is None}}

    @model_validator(mode="after")
    def _consistent(self) -> GRPOConfig:
        name, n = self.baseline, self.generations
        overridden = self.sequential is not None and self.sequential is not self.preset.sequential
        how = f" (sequential: {str(self.sequential).lower()})" if overridden else ""
        if n > 1 and not self.is_sequential:
            raise ValueError(f"baseline {name!r}{how} has no circuit history: generations must "
                             f"be 1, got {n}")
        if n < 2 and self.is_sequential:
            raise ValueError(
                f"baseline {name!r} is sequential: generations must be at least 2, got {n}. One "
                "generation never reconstructs a history, so every prompt would have an empty "
                "one (HVC over an empty history is the scalar PPA product); the paper's method "
                f"runs {SEQUENTIAL_GENERATIONS} generations (histories up to "
                f"{SEQUENTIAL_GENERATIONS - 1}). Leave generations unset for "
                f"{SEQUENTIAL_GENERATIONS}, or set 'sequential: false' to train this preset's "
                "reward on history-free prompts in one generation")
        if self.steps < n:
            default = n == _default_generations(self.preset, self.sequential)
            source = f", the {name!r} preset's default{how}" if default else ""
            raise ValueError(
                f"steps ({self.steps}) must be at least generations ({n}{source}): every "
                "generation trains at least one optimizer step. Raise steps"
                + (", or set generations (2 or more for a sequential preset)"
                   if self.is_sequential else ""))
        return self


# --------------------------------------------------------------------------------------------
# reward wrapper
# --------------------------------------------------------------------------------------------


def group_stats(rewards: Sequence[float | None], codes: Sequence[str | None],
                group_size: int) -> dict[str, float]:
    """Per-call statistics of a batch laid out as consecutive groups of ``group_size``.

    A group has no signal when fewer than two of its members were scored or all scored members
    got the same reward: its advantages are all zero. ``None`` rewards are left out, never 0.
    """
    n_groups = max(1, len(rewards) // group_size)
    zero, unique = 0, []
    for g in range(n_groups):
        part = [r for r in rewards[g * group_size:(g + 1) * group_size] if r is not None]
        if len(part) < 2 or max(part) - min(part) <= 1e-12:
            zero += 1
        unique.append(len({c for c in codes[g * group_size:(g + 1) * group_size] if c}))
    return {"zero_signal_groups": float(zero), "groups": float(n_groups),
            "unique_circuits": float(np.mean(unique)) if unique else 0.0,
            "abstained": float(sum(r is None for r in rewards))}


class RolloutReward(TRLReward):
    """The TRL adapter plus what training needs to see: per-sample details and group stats.

    It scores with the reward's ``score_detailed`` (so verdicts, PPA and HVC are kept for the
    next generation's dataset), passes group statistics to TRL's ``log_metric`` (they land in
    the same per-step log as TRL's own metrics), and keeps :class:`Rollout` records in
    ``rollouts`` (per process; the trainer drains them after each generation). Pickles as its
    spec, like the adapter.
    """

    def __init__(self, spec: RewardSpec | None = None, /, *, group_size: int = 1,
                 choice: ChoiceSpec | None = None, **fields: Any) -> None:
        super().__init__(spec, **fields)
        self.group_size = group_size
        self.choice = choice
        self._choice_texts = choice.texts() if choice is not None else None
        self.rollouts: list[Rollout] = []
        self.last_stats: dict[str, float] = {}
        self.seconds = 0.0
        self.scored = 0

    def __getstate__(self) -> dict[str, Any]:
        choice = self.choice.model_dump() if self.choice is not None else None
        return {**super().__getstate__(), "group_size": self.group_size, "choice": choice}

    def __setstate__(self, state: dict[str, Any]) -> None:
        choice = ChoiceSpec(**state["choice"]) if state.get("choice") else None
        self.__init__(RewardSpec(**state["spec"]), group_size=state["group_size"],  # type: ignore[misc]
                      choice=choice)

    def map_completion(self, text: str) -> str:
        """The text the reward sees: the chosen variant in choice mode, else ``text``."""
        if self._choice_texts is None:
            return text
        label = text.strip()[:1]
        return self._choice_texts.get(label, "")

    def __call__(self, prompts: Sequence[Any] | None = None,
                 completions: Sequence[Any] | None = None, **columns: Any) -> list[float | None]:
        from rtlforge.core.errors import ExtractionError
        from rtlforge.core.extract import extract_verilog
        from rtlforge.core.models import Verdict
        from rtlforge.trainers.datasets import group_hvc

        start = time.perf_counter()
        texts = [self.map_completion(completion_text(c)) for c in completions or []]
        n = len(texts)
        # every dataset column, as the TRL adapter passes them (a reward may need its own)
        wanted = {k: v for k, v in columns.items() if k not in TRAINER_KEYWORDS}
        # Verdicts, PPA and HVC come from the testbench rewards' detail; any other reward's
        # detail carries its number only.
        scored = self.reward.score_detailed(list(prompts or [""] * n), texts, **wanted)
        details = [d if isinstance(d, RewardDetail) else None for d in scored]
        scores = [d.reward for d in scored]
        codes: list[str | None] = []
        for t, d in zip(texts, details, strict=True):
            if d is not None:  # the testbench rewards say what they extracted and judged
                codes.append(d.source)
                continue
            try:  # another reward's detail carries no code: extract it here, once
                codes.append(extract_verilog(t))
            except ExtractionError:
                codes.append(None)
        histories = list(wanted.get("history") or [None] * n)
        task_ids = [str(t) for t in wanted.get("task_id") or [""] * n]
        rewards: list[float | None] = []
        passed = hvcs = 0.0
        n_hvc = n_scored = 0
        for i in range(n):
            d = details[i]
            r = scores[i]
            rewards.append(None if r is None or not math.isfinite(r) else float(r))
            ok = d is not None and d.verdict is Verdict.PASS
            hvc = d.hvc if d is not None else None
            if hvc is None and d is not None and d.objectives is not None:
                hvc = group_hvc(histories[i], d.objectives)  # baselines: HVC for the log only
            self.rollouts.append(Rollout(
                task_id=task_ids[i], history=history_key(histories[i]), code=codes[i],
                reward=rewards[i], passed=ok, ppa=d.ppa if d is not None else None,
                objectives=d.objectives if d is not None else None, hvc=hvc))
            if rewards[i] is not None:
                n_scored += 1
                passed += ok
                if hvc is not None:
                    hvcs += hvc
                    n_hvc += 1
        stats = group_stats(rewards, codes, self.group_size)
        stats["pass_rate"] = passed / n_scored if n_scored else math.nan
        stats["hvc_mean"] = hvcs / n_hvc if n_hvc else math.nan
        if self._choice_texts is not None:
            stats.update(self._choice_oracle(list(prompts or [""] * n), wanted, task_ids,
                                             histories, rewards))
        self.last_stats = stats
        self.seconds += time.perf_counter() - start
        self.scored += n
        log_metric = columns.get("log_metric")
        if callable(log_metric):
            for key, value in stats.items():
                if math.isfinite(value):
                    log_metric(f"rtlforge/{key}", value)
        return rewards

    def _choice_oracle(self, prompts: Sequence[Any], wanted: Mapping[str, Any],
                       task_ids: Sequence[str], histories: Sequence[Any],
                       rewards: Sequence[float | None]) -> dict[str, float]:
        """How close the choices came to the best label for each prompt's history.

        The attainable reward falls as histories grow (a circuit already in the history adds
        no hypervolume), so the raw reward mean can drop while the policy improves. In choice
        mode every label is known, so each (task, history) is scored once with every label;
        ``choice_optimal_rate`` is the share of samples that got that best reward and
        ``choice_regret`` the mean shortfall. Cached validation and PPA make this cheap.
        """
        texts = list(dict.fromkeys(self._choice_texts.values())) if self._choice_texts else []
        keys = [(t, history_key(h)) for t, h in zip(task_ids, histories, strict=True)]
        best: dict[tuple[str, str], float | None] = {}
        for i, key in enumerate(keys):
            if key in best or not texts:
                continue
            columns = {k: [v[i]] * len(texts) for k, v in wanted.items()}
            scores = self.reward.score([prompts[i]] * len(texts), texts, **columns)
            finite = [s for s in scores if s is not None and math.isfinite(s)]
            best[key] = max(finite) if finite else None
        optimal = regret = 0.0
        counted = 0
        for key, r in zip(keys, rewards, strict=True):
            top = best.get(key)
            if top is None or r is None:
                continue
            counted += 1
            optimal += r >= top - 1e-9
            regret += max(0.0, top - r)
        if not counted:
            return {}
        return {"choice_optimal_rate": optimal / counted, "choice_regret": regret / counted}


# --------------------------------------------------------------------------------------------
# trainer
# --------------------------------------------------------------------------------------------

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


class _EpochSeededSampler:
    """TRL's ``RepeatSampler`` reseeded from ``seed + epoch`` at every pass.

    TRL seeds one generator when the sampler is built and lets it run on across epochs, so the
    order of epoch *k* depends on every earlier pass; a resumed run builds a fresh sampler and
    would replay epoch 0's order. ``transformers.Trainer`` calls ``set_epoch`` before each pass
    (also on a resumed one), so seeding from the epoch makes the order reproducible from the
    step count alone. The wrapped sampler does the grouping and repetition unchanged.
    """

    def __init__(self, inner: Any, seed: int) -> None:
        self.inner = inner
        self.seed = seed
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return len(self.inner)

    def __iter__(self) -> Iterator[int]:
        generator = getattr(self.inner, "generator", None)
        if generator is not None:
            generator.manual_seed(self.seed + self.epoch)
        return iter(self.inner)


_TRL_CLASS: type | None = None


def _trl_trainer_class() -> type:
    """TRL's ``GRPOTrainer`` with :class:`_EpochSeededSampler` (built lazily: imports trl)."""
    global _TRL_CLASS
    if _TRL_CLASS is None:
        from trl import GRPOTrainer as TRLTrainer

        class _Trainer(TRLTrainer):  # type: ignore[misc,valid-type]
            def _get_train_sampler(self, dataset: Any = None) -> Any:
                return _EpochSeededSampler(super()._get_train_sampler(dataset), self.args.seed)

        _TRL_CLASS = _Trainer
    return _TRL_CLASS


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
        """Everything a resume needs to continue as if uninterrupted (see the module docstring).

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


class _MetricsCallback:
    """A ``TrainerCallback`` (duck-typed, so this module imports no transformers) that writes one
    metrics.jsonl line per optimizer step from TRL's logs, and the periodic checkpoints."""

    def __init__(self, owner: GRPOTrainer) -> None:
        self.owner = owner

    def __getattr__(self, name: str) -> Any:
        if name.startswith("on_"):
            return lambda *a, **k: None
        raise AttributeError(name)

    def on_train_begin(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        pending = self.owner._pending_optim
        optimizer = kw.get("optimizer")
        if pending is not None and optimizer is not None:
            optimizer.load_state_dict(pending)
            self.owner._pending_optim = None

    def on_log(self, args: Any, state: Any, control: Any, logs: Mapping[str, Any] | None = None,
               **kw: Any) -> None:
        if not logs or "train_runtime" in logs or not any(k in logs for k in ("reward", "loss")):
            return
        self.owner._record(state.global_step, logs)
