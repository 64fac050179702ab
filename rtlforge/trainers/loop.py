"""The step loop of the trainers that advance one ``train_step()`` at a time (:func:`run_steps`):
metrics lines, periodic pruned checkpoints and the final save, done the same way for each.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from rtlforge.trainers.checkpoints import checkpoint_path, prune_checkpoints
from rtlforge.trainers.metrics import MetricsWriter, ProgressCallback

if TYPE_CHECKING:
    from rtlforge.trainers.config import TrainerConfig

__all__ = ["run_steps"]


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
