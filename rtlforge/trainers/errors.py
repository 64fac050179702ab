"""The trainer errors, apart so that every trainer module can raise them without importing another.

Each one sits on a branch of the error taxonomy (:mod:`rtlforge.core.errors`): a malformed config
or a wrong checkpoint is the caller's (CLI exit code 2), a missing library, device or data file
the environment's (exit code 3).
"""

from __future__ import annotations

from rtlforge.core.errors import ConfigError, InfraError, RtlforgeError

__all__ = ["CheckpointError", "QLoRAUnavailableError", "TrainerConfigError", "TrainerError",
           "TrainerInfraError"]


class TrainerError(RtlforgeError):
    """Base of the trainer errors."""


class TrainerConfigError(TrainerError, ConfigError, ValueError):
    """A training config is malformed; the message names the offending field (CLI exit code 2)."""


class TrainerInfraError(TrainerError, InfraError):
    """The environment cannot run the training (missing library, device, data; exit code 3)."""


class QLoRAUnavailableError(TrainerInfraError):
    """QLoRA needs bitsandbytes and a CUDA device; this machine lacks one of them."""


class CheckpointError(TrainerError, ConfigError):
    """A checkpoint is missing, incomplete or from an incompatible format."""
