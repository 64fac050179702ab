"""GRPO configs: the paper's baselines as presets of one trainer, and :class:`GRPOConfig`, which
fills what the chosen preset decides and checks that the run it describes can be sequential.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, model_validator

from rtlforge.core.untrusted import load_json
from rtlforge.trainers.config import TrainerConfig
from rtlforge.trainers.datasets import MAX_HISTORY, PER_LENGTH_CAP
from rtlforge.trainers.errors import TrainerConfigError

__all__ = ["DEFAULT_BASELINE", "PRESETS", "SEQUENTIAL_GENERATIONS", "Baseline", "ChoiceSpec",
           "GRPOConfig", "Preset"]

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

    def headline_metric(self) -> str:
        """With a choice task, the share of samples choosing their history's best label: the
        sequential reward falls as histories fill with the best circuits (re-choosing one adds
        no hypervolume), so reward_mean cannot show learning there."""
        if self.headline is None and self.choice is not None:
            return "choice_optimal_rate"
        return super().headline_metric()

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
