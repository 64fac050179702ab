"""What every trainer shares: config models, metrics, seeding, checkpoints, model set-up, scoring.

Three trainers (SFT, GRPO, PPO) are written against this module, so it is deliberately small and
explicit. Nothing here imports torch/transformers/peft at module level: the plugin host imports
every plugin module at start-up, and ``rtlforge --help`` must stay fast. Heavy imports live inside
the functions that need them.

Checkpoint layout (one directory, written atomically: built under a temporary sibling, fsynced and
renamed into place, so a kill during a save never leaves a half-written checkpoint under the final
name and never touches the previous one)::

    CKPT/rtlforge_checkpoint.json  # format, step, trainer state (JSON), written by save_checkpoint
    CKPT/rng_state.pth             # python/numpy/torch(/cuda) RNG states (Hugging Face layout)
    CKPT/optimizer.pt              # optimizer.state_dict(), when an optimizer is given
    CKPT/scheduler.pt              # scheduler.state_dict(), when a scheduler is given
    CKPT/...                       # whatever ``save_model`` writes (weights / adapter, tokenizer)

The file names match what ``transformers.Trainer`` writes, so an HF-based trainer can resume from
our checkpoints with ``resume_from_checkpoint``.
"""

from __future__ import annotations

import json
import math
import os
import queue
import random
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Executor, Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from rtlforge.core.errors import ConfigError, InfraError, RtlforgeError
from rtlforge.core.log import get_logger
from rtlforge.core.untrusted import load_json

if TYPE_CHECKING:
    from rtlforge.core.interfaces import Reward, Trainer
    from rtlforge.core.plugins import PluginHost

log = get_logger("rtlforge.trainers")

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


# --------------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------------


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


# --------------------------------------------------------------------------------------------
# Config models
# --------------------------------------------------------------------------------------------


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


# --------------------------------------------------------------------------------------------
# Metrics
# --------------------------------------------------------------------------------------------

ProgressCallback = Callable[[Mapping[str, Any]], None]
"""Called with each metrics record right after it is durably written (e.g. to draw progress)."""


def _jsonable(value: Any) -> Any:
    """Tensors/numpy scalars -> Python numbers; NaN/inf -> None (strict JSON has no NaN)."""
    if hasattr(value, "item") and callable(value.item):
        try:
            value = value.item()
        except (ValueError, RuntimeError):  # a non-scalar array/tensor
            value = value.tolist()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    return value


class MetricsWriter:
    """Append-only JSONL metrics: one object per line, flushed and fsynced per line.

    A crash loses at most the line being written; :func:`read_metrics` skips a torn last line.
    ``truncate_after`` (used on resume) first drops records of steps after the checkpoint, so a
    resumed run's file reads like an uninterrupted one.
    """

    def __init__(self, path: str | Path, *, truncate_after: int | None = None,
                 callback: ProgressCallback | None = None) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.callback = callback
        if truncate_after is not None and self.path.exists():
            kept = [r for r in read_metrics(self.path)
                    if not isinstance(r.get("step"), int) or r["step"] <= truncate_after]
            _atomic_write_text(self.path, "".join(_dump_line(r) for r in kept))
        self._fh = self.path.open("a", encoding="utf-8")
        self._lock = threading.Lock()

    def write(self, record: Mapping[str, Any]) -> None:
        line = _dump_line(record)
        with self._lock:
            self._fh.write(line)
            self._fh.flush()
            os.fsync(self._fh.fileno())
        if self.callback is not None:
            self.callback(record)

    def close(self) -> None:
        with self._lock:
            if not self._fh.closed:
                self._fh.close()

    def __enter__(self) -> MetricsWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _dump_line(record: Mapping[str, Any]) -> str:
    return json.dumps(_jsonable(dict(record)), allow_nan=False, sort_keys=False) + "\n"


def read_metrics(path: str | Path) -> list[dict[str, Any]]:
    """Every complete record of a metrics file (a torn final line from a crash is skipped)."""
    records: list[dict[str, Any]] = []
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return records
    for line in text.splitlines():
        try:
            obj = load_json(line)
        except ValueError:
            continue
        if isinstance(obj, dict):
            records.append(obj)
    return records


# --------------------------------------------------------------------------------------------
# Seeding and RNG state
# --------------------------------------------------------------------------------------------


def seed_everything(seed: int, *, deterministic: bool = False) -> None:
    """Seed python, numpy and torch (all devices) so a run is repeatable."""
    import numpy as np

    random.seed(seed)
    np.random.seed(seed % 2**32)
    try:
        import torch
    except ImportError:
        return
    torch.manual_seed(seed)
    if deterministic:
        torch.use_deterministic_algorithms(True, warn_only=True)


def capture_rng_state() -> dict[str, Any]:
    """The python/numpy/torch RNG states, in the layout ``transformers.Trainer`` uses."""
    import numpy as np
    import torch

    kind, keys, pos, has_gauss, cached = np.random.get_state()
    state: dict[str, Any] = {
        "python": random.getstate(),
        # plain Python values load under torch.load(weights_only=True) without allow-listing numpy
        "numpy": (kind, keys.tolist(), int(pos), int(has_gauss), float(cached)),
        "cpu": torch.random.get_rng_state(),
    }
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda"] = torch.cuda.random.get_rng_state_all()
    return state


def restore_rng_state(state: Mapping[str, Any]) -> None:
    import numpy as np
    import torch

    python = state["python"]
    random.setstate((python[0], tuple(python[1]), python[2]))
    kind, keys, pos, has_gauss, cached = state["numpy"]
    np.random.set_state((kind, np.asarray(keys, dtype=np.uint32), pos, has_gauss, cached))
    torch.random.set_rng_state(state["cpu"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.random.set_rng_state_all(state["cuda"])


# --------------------------------------------------------------------------------------------
# Checkpoints
# --------------------------------------------------------------------------------------------

CHECKPOINT_FILE = "rtlforge_checkpoint.json"
CHECKPOINT_FORMAT = 1
RNG_FILE, OPTIMIZER_FILE, SCHEDULER_FILE = "rng_state.pth", "optimizer.pt", "scheduler.pt"
_CKPT_NAME = re.compile(r"^checkpoint-(\d+)$")


@dataclass(frozen=True)
class CheckpointState:
    """What :func:`load_checkpoint` found; ``path`` also holds the model files to reload."""

    path: Path
    step: int
    state: dict[str, Any]


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # not supported on this platform/filesystem
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _fsync_tree(root: Path) -> None:
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            with open(os.path.join(dirpath, name), "rb") as fh:
                os.fsync(fh.fileno())
        _fsync_dir(Path(dirpath))


def _atomic_write_text(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)


def checkpoint_path(root: str | Path, step: int) -> Path:
    """``ROOT/checkpoint-<step>``: the name :func:`latest_checkpoint` and pruning understand."""
    return Path(root) / f"checkpoint-{step}"


def save_checkpoint(
    path: str | Path,
    *,
    step: int,
    state: Mapping[str, Any] | None = None,
    optimizer: Any = None,
    scheduler: Any = None,
    save_model: Callable[[Path], None] | None = None,
) -> Path:
    """Write a complete checkpoint at ``path`` atomically (replacing one already there).

    ``save_model(dir)`` writes the weights/adapter (and tokenizer) into the staging directory;
    ``state`` is the trainer's own JSON-serialisable state. The staging directory only becomes
    ``path`` once everything is on disk, so readers see the old checkpoint or the new one.
    """
    import torch

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}.tmp-"))
    try:
        if save_model is not None:
            save_model(staging)
        torch.save(capture_rng_state(), staging / RNG_FILE)
        if optimizer is not None:
            torch.save(optimizer.state_dict(), staging / OPTIMIZER_FILE)
        if scheduler is not None:
            torch.save(scheduler.state_dict(), staging / SCHEDULER_FILE)
        meta = {"format": CHECKPOINT_FORMAT, "step": int(step), "saved_at": time.time(),
                "state": _jsonable(dict(state or {}))}
        (staging / CHECKPOINT_FILE).write_text(
            json.dumps(meta, indent=2, allow_nan=False) + "\n", encoding="utf-8")
        _fsync_tree(staging)
        if path.exists():
            # Two renames: the old checkpoint stays whole until the new one is in place; a kill in
            # between leaves it under the ``.old-`` name, which load_checkpoint falls back to.
            old = path.parent / f".{path.name}.old-{os.getpid()}-{time.monotonic_ns()}"
            os.replace(path, old)
            os.replace(staging, path)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(staging, path)
        _fsync_dir(path.parent)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return path


def _complete(path: Path) -> bool:
    return (path / CHECKPOINT_FILE).is_file()


def load_checkpoint(path: str | Path, *, optimizer: Any = None, scheduler: Any = None,
                    restore_rng: bool = True) -> CheckpointState:
    """Restore optimizer/scheduler/RNG from a checkpoint and return its step and trainer state.

    The model weights are the caller's to reload (from ``CheckpointState.path``), since only the
    trainer knows whether they are an adapter or a full model.
    """
    import torch

    path = Path(path)
    if not _complete(path):
        # a kill between the two renames of a replacing save leaves the old copy aside
        olds = sorted(path.parent.glob(f".{path.name}.old-*"), key=lambda p: p.stat().st_mtime)
        olds = [p for p in olds if _complete(p)]
        if not olds:
            raise CheckpointError(f"{path} is not a complete rtlforge checkpoint "
                                  f"(no {CHECKPOINT_FILE})")
        os.replace(olds[-1], path)
    try:
        meta = json.loads((path / CHECKPOINT_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CheckpointError(f"cannot read {path / CHECKPOINT_FILE}: {exc}") from exc
    if meta.get("format") != CHECKPOINT_FORMAT:
        raise CheckpointError(f"{path}: checkpoint format {meta.get('format')!r} is not "
                              f"supported (expected {CHECKPOINT_FORMAT})")
    for obj, name in ((optimizer, OPTIMIZER_FILE), (scheduler, SCHEDULER_FILE)):
        if obj is None:
            continue
        if not (path / name).is_file():
            raise CheckpointError(f"{path} has no {name} to restore")
        obj.load_state_dict(torch.load(path / name, map_location="cpu", weights_only=True))
    if restore_rng:
        restore_rng_state(torch.load(path / RNG_FILE, weights_only=True))
    return CheckpointState(path=path, step=int(meta["step"]), state=dict(meta.get("state", {})))


def _checkpoints(root: Path) -> Iterator[tuple[int, Path]]:
    if not root.is_dir():
        return
    for child in root.iterdir():
        match = _CKPT_NAME.match(child.name)
        if match and child.is_dir() and _complete(child):
            yield int(match.group(1)), child


def latest_checkpoint(root: str | Path) -> Path | None:
    """The complete ``checkpoint-<step>`` under ``root`` with the highest step, if any."""
    found = sorted(_checkpoints(Path(root)))
    return found[-1][1] if found else None


def prune_checkpoints(root: str | Path, keep: int | None) -> list[Path]:
    """Delete all but the newest ``keep`` checkpoints (and stale staging dirs); return removed."""
    root = Path(root)
    removed: list[Path] = []
    if root.is_dir():
        for stale in root.glob(".checkpoint-*.tmp-*"):
            shutil.rmtree(stale, ignore_errors=True)
    if keep is None:
        return removed
    found = sorted(_checkpoints(root))
    for _step, path in found[: max(0, len(found) - keep)]:
        shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
    return removed


def run_steps(trainer: Any, config: TrainerConfig, out_dir: Path,
              progress: ProgressCallback | None = None) -> dict[str, Any]:
    """The step loop trainers with a ``train_step()`` share: from ``trainer.step`` to
    ``config.steps``, a metrics line every ``logging.every`` steps (and the last),
    periodic checkpoints pruned to ``checkpoint.keep``, then ``final/``; the last record.

    ``trainer`` has ``step`` (advanced by ``train_step``), ``train_step() -> record`` and
    ``save(path)``.
    """
    root = out_dir / "checkpoints"
    last: dict[str, Any] = {}
    with MetricsWriter(out_dir / config.logging.metrics_file, truncate_after=trainer.step,
                       callback=progress) as writer:
        while trainer.step < config.steps:
            last = trainer.train_step()
            if trainer.step % config.logging.every == 0 or trainer.step == config.steps:
                writer.write(last)
            every = config.checkpoint.every
            if every and trainer.step % every == 0 and trainer.step < config.steps:
                trainer.save(checkpoint_path(root, trainer.step))
                prune_checkpoints(root, config.checkpoint.keep)
    trainer.save(out_dir / "final")
    return last


# --------------------------------------------------------------------------------------------
# Model and tokenizer
# --------------------------------------------------------------------------------------------


def _torch_dtype(name: str) -> Any:
    import torch

    return {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16,
            "auto": "auto"}[name]


def build_model_and_tokenizer(model_cfg: ModelConfig, out_dir: str | Path, *,
                              seed: int = 0) -> tuple[Any, Any]:
    """Load (or build the tiny) causal LM and its tokenizer; wrap it with LoRA when configured.

    With ``build_tiny`` the model is built in ``out_dir/base-model`` (reused when identical). The
    returned model is on ``model_cfg.device``; a pad token is guaranteed. QLoRA raises
    :class:`QLoRAUnavailableError` unless bitsandbytes and CUDA are both present.
    """
    try:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as exc:
        raise TrainerInfraError(f"training needs the [train] extra ({exc.name} is missing): "
                                "pip install 'rtlforge[train]'") from exc

    if model_cfg.threads is not None:
        torch.set_num_threads(model_cfg.threads)
    if model_cfg.build_tiny is not None:
        from rtlforge.testing.tiny_model import build_tiny_model

        spec = model_cfg.build_tiny
        source: str | Path = build_tiny_model(
            Path(out_dir) / "base-model", hidden=spec.hidden, layers=spec.layers,
            heads=spec.heads, vocab_size=spec.vocab_size,
            seed=spec.seed if spec.seed is not None else seed)
    else:
        source = model_cfg.path  # type: ignore[assignment]  # validated: exactly one is set

    lora = model_cfg.lora
    kwargs: dict[str, Any] = {"dtype": _torch_dtype(model_cfg.dtype)}
    if lora is not None and lora.qlora:
        kwargs.update(_qlora_kwargs(model_cfg))
    try:
        tokenizer = AutoTokenizer.from_pretrained(source)
        model = AutoModelForCausalLM.from_pretrained(source, **kwargs)
    except OSError as exc:
        raise TrainerInfraError(f"cannot load model {source}: {exc}") from exc
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    if not (lora is not None and lora.qlora):  # 4-bit models are placed by device_map
        try:
            model.to(model_cfg.device)
        except (RuntimeError, AssertionError) as exc:
            raise TrainerInfraError(f"cannot use device {model_cfg.device!r}: {exc}") from exc
    if lora is not None:
        model = _apply_lora(model, lora)
    return model, tokenizer


def _qlora_kwargs(model_cfg: ModelConfig) -> dict[str, Any]:
    import importlib.util

    import torch

    missing = []
    if importlib.util.find_spec("bitsandbytes") is None:
        missing.append("the bitsandbytes package")
    if not torch.cuda.is_available():
        missing.append("a CUDA device")
    if missing:
        raise QLoRAUnavailableError(
            f"QLoRA needs {' and '.join(missing)}; use plain LoRA (lora.qlora: false) here")
    from transformers import BitsAndBytesConfig

    compute = torch.bfloat16 if model_cfg.dtype in ("bfloat16", "auto") else torch.float16
    return {"quantization_config": BitsAndBytesConfig(
        load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True,
        bnb_4bit_compute_dtype=compute), "device_map": {"": model_cfg.device}}


def _apply_lora(model: Any, lora: LoraSpec) -> Any:
    try:
        from peft import LoraConfig, get_peft_model, prepare_model_for_kbit_training
    except ImportError as exc:
        raise TrainerInfraError("LoRA needs peft: pip install 'rtlforge[train]'") from exc
    if lora.qlora:
        model = prepare_model_for_kbit_training(model)
    config = LoraConfig(r=lora.r, lora_alpha=lora.alpha, lora_dropout=lora.dropout,
                        target_modules=lora.target_modules, task_type="CAUSAL_LM")
    return get_peft_model(model, config)


# --------------------------------------------------------------------------------------------
# Reward scoring with a wall-clock budget
# --------------------------------------------------------------------------------------------


def _call_reward(reward: Reward, prompts: Sequence[str], completions: Sequence[str],
                 columns: Mapping[str, Sequence[Any]]) -> list[float | None]:
    scores = list(reward.score(prompts, completions, **columns))
    if len(scores) != len(completions):
        raise TrainerError(f"reward returned {len(scores)} scores for {len(completions)} "
                           "completions")
    out: list[float | None] = []
    for s in scores:
        if s is None:
            out.append(None)
            continue
        value = float(s)
        out.append(value if math.isfinite(value) else None)
    return out


def _daemon_submit(jobs: queue.Queue[Callable[[], None] | None], workers: int) -> None:
    def loop() -> None:
        while (job := jobs.get()) is not None:
            job()

    for _ in range(workers):
        threading.Thread(target=loop, name="rtlforge-score", daemon=True).start()


def score_completions(
    reward: Reward,
    prompts: Sequence[str],
    completions: Sequence[str],
    columns: Mapping[str, Sequence[Any]] | None = None,
    *,
    timeout_s: float,
    executor: Executor | None = None,
    chunk_size: int = 1,
    max_workers: int = 8,
) -> list[float | None]:
    """Score a batch, giving up on whatever is unfinished after ``timeout_s`` seconds (wall).

    The batch is split into chunks of ``chunk_size`` completions scored in parallel, so one hung
    candidate only costs its own chunk: unfinished chunks, chunks whose reward raised, and
    non-finite scores become None (abstain) with a logged reason, never 0. Rewards that compare
    completions within a batch need ``chunk_size=len(completions)``. Without an ``executor`` the
    work runs on daemon threads, so a reward that never returns cannot keep the process alive.
    """
    if len(prompts) != len(completions):
        raise ValueError(f"{len(prompts)} prompts but {len(completions)} completions")
    columns = dict(columns or {})
    for key, col in columns.items():
        if len(col) != len(completions):
            raise ValueError(f"column {key!r} has {len(col)} values for {len(completions)} "
                             "completions")
    n = len(completions)
    if n == 0:
        return []
    if chunk_size < 1:
        raise ValueError("chunk_size must be >= 1")
    spans = [(i, min(i + chunk_size, n)) for i in range(0, n, chunk_size)]

    def job(lo: int, hi: int) -> list[float | None]:
        return _call_reward(reward, prompts[lo:hi], completions[lo:hi],
                            {k: list(v[lo:hi]) for k, v in columns.items()})

    futures: list[Future[list[float | None]]] = []
    jobs: queue.Queue[Callable[[], None] | None] | None = None
    if executor is not None:
        futures = [executor.submit(job, lo, hi) for lo, hi in spans]
    else:
        jobs = queue.Queue()
        for lo, hi in spans:
            fut: Future[list[float | None]] = Future()

            def run(fut: Future[list[float | None]] = fut, lo: int = lo, hi: int = hi) -> None:
                if not fut.set_running_or_notify_cancel():
                    return
                try:
                    fut.set_result(job(lo, hi))
                except BaseException as exc:  # noqa: BLE001 - handed to the waiting caller
                    fut.set_exception(exc)

            futures.append(fut)
            jobs.put(run)
        workers = min(max_workers, len(spans))
        for _ in range(workers):
            jobs.put(None)  # one stop marker per worker, after all the work
        _daemon_submit(jobs, workers)

    deadline = time.monotonic() + timeout_s
    out: list[float | None] = [None] * n
    reasons: dict[str, int] = {}
    for (lo, hi), fut in zip(spans, futures, strict=True):
        try:
            scores = fut.result(timeout=max(0.0, deadline - time.monotonic()))
        except FutureTimeout:
            fut.cancel()
            reasons["timeout"] = reasons.get("timeout", 0) + (hi - lo)
            log.warning("reward_timeout", reward=getattr(reward, "name", "?"),
                        samples=list(range(lo, hi)), timeout_s=timeout_s)
            continue
        except Exception as exc:  # noqa: BLE001 - an infrastructure failure: abstain
            reasons["error"] = reasons.get("error", 0) + (hi - lo)
            log.warning("reward_error", reward=getattr(reward, "name", "?"),
                        samples=list(range(lo, hi)), error=f"{type(exc).__name__}: {exc}")
            continue
        out[lo:hi] = scores
    if reasons:
        log.info("reward_abstained", reward=getattr(reward, "name", "?"), **reasons)
    return out

