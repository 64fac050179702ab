"""GRPO for sequential Pareto RTL generation, on TRL's ``GRPOTrainer``.

"Pareto-Optimal RTL Code Generation via Multi-Objective RL" trains with GRPO: G samples per
prompt, advantages ``(R - mean) / std`` within each group, a clipped-ratio objective averaged per
token, and a KL penalty of weight β to the reference policy. TRL implements exactly that; this
package only configures it (``trl_args`` shows the mapping), feeds it the reward library through
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
(``hooks._EpochSeededSampler``): TRL's own sampler keeps one generator across epochs, which a
resumed run cannot reposition.

The package by noun: :mod:`.config` (the presets and :class:`GRPOConfig`), :mod:`.reward`
(:class:`RolloutReward`, the reward TRL calls, and :func:`group_stats`), :mod:`.trainer`
(:class:`GRPOTrainer`, the generation loop, checkpoints and resume) and :mod:`.hooks` (what
it hooks into TRL's trainer: the epoch-seeded sampler, the metrics callback). Heavy imports
(torch, transformers, trl, peft, datasets) happen inside functions.
"""

from __future__ import annotations

from rtlforge.trainers.grpo.config import (
    PRESETS,
    SEQUENTIAL_GENERATIONS,
    ChoiceSpec,
    GRPOConfig,
    Preset,
)
from rtlforge.trainers.grpo.reward import RolloutReward, group_stats
from rtlforge.trainers.grpo.trainer import GRPOTrainer

__all__ = ["PRESETS", "SEQUENTIAL_GENERATIONS", "ChoiceSpec", "GRPOConfig", "GRPOTrainer",
           "Preset", "RolloutReward", "group_stats"]
