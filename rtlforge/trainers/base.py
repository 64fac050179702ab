"""The trainers' shared API under its former single module's name, kept for code written against it.

What every trainer shares used to live here; it is now split by noun into
:mod:`~rtlforge.trainers.errors`, :mod:`~rtlforge.trainers.config` (config models and loading),
:mod:`~rtlforge.trainers.metrics`, :mod:`~rtlforge.trainers.rng` (seeding, RNG state),
:mod:`~rtlforge.trainers.checkpoints`, :mod:`~rtlforge.trainers.loop` (:func:`run_steps`),
:mod:`~rtlforge.trainers.models` (model and tokenizer) and :mod:`~rtlforge.trainers.scoring`.
This module re-exports the names it documented (``__all__``) and the checkpoint file names, so
third-party trainer plugins that import ``rtlforge.trainers.base`` keep working; new code imports
from the modules above. Like them, it imports no torch/transformers/peft: the plugin host imports
trainer modules at start-up, and ``rtlforge --help`` must stay fast.
"""

from __future__ import annotations

from rtlforge.trainers.checkpoints import (
    CHECKPOINT_FILE,
    CheckpointState,
    checkpoint_path,
    latest_checkpoint,
    load_checkpoint,
    prune_checkpoints,
    save_checkpoint,
)
from rtlforge.trainers.checkpoints import CHECKPOINT_FORMAT as CHECKPOINT_FORMAT
from rtlforge.trainers.checkpoints import OPTIMIZER_FILE as OPTIMIZER_FILE
from rtlforge.trainers.checkpoints import RNG_FILE as RNG_FILE
from rtlforge.trainers.checkpoints import SCHEDULER_FILE as SCHEDULER_FILE
from rtlforge.trainers.config import (
    CheckpointConfig,
    LoggingConfig,
    LoraSpec,
    ModelConfig,
    StrictModel,
    TinyModelSpec,
    TrainerConfig,
    config_classes,
    create_trainer,
    load_config,
    parse_config,
    resolve_out_dir,
)
from rtlforge.trainers.errors import (
    CheckpointError,
    QLoRAUnavailableError,
    TrainerConfigError,
    TrainerError,
    TrainerInfraError,
)
from rtlforge.trainers.loop import run_steps
from rtlforge.trainers.metrics import MetricsWriter, ProgressCallback, read_metrics
from rtlforge.trainers.models import build_model_and_tokenizer
from rtlforge.trainers.rng import capture_rng_state, restore_rng_state, seed_everything
from rtlforge.trainers.scoring import score_completions

__all__ = [
    "CHECKPOINT_FILE",
    "CheckpointConfig",
    "CheckpointError",
    "CheckpointState",
    "LoggingConfig",
    "LoraSpec",
    "MetricsWriter",
    "ModelConfig",
    "ProgressCallback",
    "QLoRAUnavailableError",
    "StrictModel",
    "TinyModelSpec",
    "TrainerConfig",
    "TrainerConfigError",
    "TrainerError",
    "TrainerInfraError",
    "build_model_and_tokenizer",
    "capture_rng_state",
    "checkpoint_path",
    "config_classes",
    "create_trainer",
    "latest_checkpoint",
    "load_checkpoint",
    "load_config",
    "parse_config",
    "prune_checkpoints",
    "read_metrics",
    "resolve_out_dir",
    "restore_rng_state",
    "run_steps",
    "save_checkpoint",
    "score_completions",
    "seed_everything",
]
