"""Checkpoints: what a trainer saves so that a resumed run continues exactly where it stopped.

Layout (one directory, written atomically: built under a temporary sibling, fsynced and renamed
into place, so a kill during a save never leaves a half-written checkpoint under the final name
and never touches the previous one)::

    CKPT/rtlforge_checkpoint.json  # format, step, trainer state (JSON), written by save_checkpoint
    CKPT/rng_state.pth             # python/numpy/torch(/cuda) RNG states (Hugging Face layout)
    CKPT/optimizer.pt              # optimizer.state_dict(), when an optimizer is given
    CKPT/scheduler.pt              # scheduler.state_dict(), when a scheduler is given
    CKPT/...                       # whatever ``save_model`` writes (weights / adapter, tokenizer)

The file names match what ``transformers.Trainer`` writes, so an HF-based trainer can resume from
our checkpoints with ``resume_from_checkpoint``. torch is imported inside the functions.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rtlforge.trainers.errors import CheckpointError
from rtlforge.trainers.files import _fsync_dir, _fsync_tree
from rtlforge.trainers.metrics import _jsonable
from rtlforge.trainers.rng import capture_rng_state, restore_rng_state

__all__ = ["CHECKPOINT_FILE", "CHECKPOINT_FORMAT", "OPTIMIZER_FILE", "RNG_FILE", "SCHEDULER_FILE",
           "CheckpointState", "checkpoint_path", "latest_checkpoint", "load_checkpoint",
           "prune_checkpoints", "save_checkpoint"]


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
