"""Training configs: the models every trainer's YAML shares, and turning a file into a trainer.

A config names its trainer (``trainer: sft``); :func:`load_config` and :func:`parse_config`
validate it with the ``config_class`` that trainer plugin declares, and :func:`create_trainer`
builds the trainer from it. The models are strict: an unknown key is an error, so a typo in a
YAML file fails instead of silently leaving a default in place.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from rtlforge.trainers.errors import TrainerConfigError

if TYPE_CHECKING:
    from rtlforge.core.interfaces import Trainer
    from rtlforge.core.plugins import PluginHost
    from rtlforge.trainers.metrics import ProgressCallback

__all__ = ["CheckpointConfig", "LoggingConfig", "LoraSpec", "ModelConfig", "StrictModel",
           "TinyModelSpec", "TrainerConfig", "config_classes", "create_trainer", "load_config",
           "parse_config", "resolve_out_dir"]


class StrictModel(BaseModel):
    """Unknown keys are errors: a typo in a YAML file must fail, not silently use a default."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class TinyModelSpec(StrictModel):
    """Build the offline tiny model (``rtlforge.testing.tiny_model``) instead of loading one."""

    hidden: int = Field(128, ge=8)
    layers: int = Field(2, ge=1)
    heads: int = Field(4, ge=1)
    vocab_size: int = Field(512, ge=300)
    seed: int | None = None  # None: the run's seed


class LoraSpec(StrictModel):
    """LoRA adapter settings; ``qlora`` also loads the base model in 4 bit (CUDA + bitsandbytes)."""

    r: int = Field(8, ge=1)
    alpha: float = Field(16.0, gt=0)
    dropout: float = Field(0.0, ge=0.0, lt=1.0)
    target_modules: list[str] | Literal["all-linear"] = "all-linear"
    qlora: bool = False


class ModelConfig(StrictModel):
    path: str | None = None
    build_tiny: TinyModelSpec | None = None
    lora: LoraSpec | None = None
    device: str = "cpu"
    dtype: Literal["float32", "bfloat16", "float16", "auto"] = "float32"
    threads: int | None = Field(1, ge=1)  # torch intra-op threads; None leaves torch's default

    @model_validator(mode="after")
    def _one_source(self) -> ModelConfig:
        if (self.path is None) == (self.build_tiny is None):
            raise ValueError("set exactly one of 'path' (a model directory or hub id) "
                             "and 'build_tiny'")
        return self


class LoggingConfig(StrictModel):
    every: int = Field(1, ge=1)  # one metrics line per this many optimizer steps
    metrics_file: str = "metrics.jsonl"


class CheckpointConfig(StrictModel):
    every: int | None = Field(None, ge=1)  # save every N steps; None: only at the end
    keep: int | None = Field(2, ge=1)  # newest periodic checkpoints kept; None keeps all
    resume_from: str | None = None  # a checkpoint directory, or "latest" (in OUT/checkpoints)


class TrainerConfig(StrictModel):
    """Fields every trainer shares; each trainer subclasses it with ``trainer: Literal[...]``."""

    trainer: str
    seed: int = 0
    out_dir: str | None = None
    model: ModelConfig
    steps: int = Field(ge=1)
    logging: LoggingConfig = LoggingConfig()
    checkpoint: CheckpointConfig = CheckpointConfig()
    #: The metrics.jsonl field this run's learning shows in: the CLI's progress bar shows it
    #: first and its summary opens with its first and last values. None: the trainer's choice
    #: (``reward_mean``, or what a trainer's task makes the honest curve, see ``headline_metric``).
    headline: str | None = None

    def headline_metric(self) -> str:
        return self.headline or "reward_mean"


def _format_validation_error(exc: ValidationError, origin: str) -> str:
    lines = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "(top level)"
        msg = err["msg"]
        if err["type"] == "extra_forbidden":
            msg = "unknown field (check the spelling; unknown keys are not allowed)"
        elif err["type"] == "missing":
            msg = "required field is missing"
        lines.append(f"  {where}: {msg}")
    return f"invalid training config {origin}:\n" + "\n".join(lines)


def _host(host: PluginHost | None) -> PluginHost:
    if host is not None:
        return host
    from rtlforge.core.plugins import PluginHost

    return PluginHost.default()


def config_classes(host: PluginHost | None = None) -> dict[str, type[TrainerConfig]]:
    """Trainer name -> config class, from the ``config_class`` the trainers registered with
    ``host`` declare (None: :meth:`PluginHost.default`)."""
    from rtlforge.core.interfaces import Trainer

    host = _host(host)
    out: dict[str, type[TrainerConfig]] = {}
    for name in host.names("trainer"):
        trainer = host.get("trainer", name)
        if not (isinstance(trainer, type) and issubclass(trainer, Trainer)):
            continue  # a factory declares no config class
        cls = trainer.config_class
        if isinstance(cls, type) and issubclass(cls, TrainerConfig):
            out[name] = cls
    return out


def parse_config(data: Any, *, host: PluginHost | None = None,
                 origin: str = "<mapping>") -> TrainerConfig:
    """Validate an already-loaded mapping, dispatching on its ``trainer`` key."""
    if not isinstance(data, Mapping):
        raise TrainerConfigError(f"training config {origin} must be a mapping at the top level, "
                                 f"not {type(data).__name__}")
    name = data.get("trainer")
    if not isinstance(name, str) or not name:
        raise TrainerConfigError(f"training config {origin}: field 'trainer' is required "
                                 "(the trainer plugin's name, e.g. 'sft', 'grpo', 'ppo')")
    classes = config_classes(host)
    if name not in classes:
        known = ", ".join(sorted(classes)) or "none registered"
        raise TrainerConfigError(f"training config {origin}: trainer {name!r} is unknown "
                                 f"(available: {known})")
    try:
        return classes[name].model_validate(dict(data))
    except ValidationError as exc:
        raise TrainerConfigError(_format_validation_error(exc, origin)) from None


def load_config(path: str | Path, *, host: PluginHost | None = None) -> TrainerConfig:
    """Read a YAML training config and validate it with the trainer's own config class."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise TrainerConfigError(f"cannot read training config {path}: {exc.strerror}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise TrainerConfigError(f"training config {path} is not valid YAML: {exc}") from None
    return parse_config(data, host=host, origin=str(path))


def resolve_out_dir(config: TrainerConfig, out: str | Path | None = None) -> Path:
    """``out`` (the CLI's ``--out``) wins over the config's ``out_dir``; one of them is needed."""
    chosen = out if out is not None else config.out_dir
    if chosen is None:
        raise TrainerConfigError("no output directory: set 'out_dir' in the config or pass --out")
    return Path(chosen)


def create_trainer(config: TrainerConfig, *, host: PluginHost | None = None,
                   progress: ProgressCallback | None = None) -> Trainer:
    """Instantiate the trainer plugin named by ``config.trainer`` through its declared
    :meth:`~rtlforge.core.interfaces.Trainer.from_config` (None host: the default)."""
    from rtlforge.core.interfaces import Trainer

    host = _host(host)
    cls = host.get("trainer", config.trainer)
    if not (isinstance(cls, type) and issubclass(cls, Trainer)):
        raise TrainerConfigError(f"trainer {config.trainer!r} is registered as a factory, "
                                 "not a Trainer class with from_config")
    return cls.from_config(config, host=host, progress=progress)
