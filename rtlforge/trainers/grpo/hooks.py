"""What the GRPO trainer hooks into TRL's ``GRPOTrainer``: a prompt sampler whose order is a
function of (seed, epoch), so a resumed run can reposition it, and the callback that writes
``metrics.jsonl`` and the periodic checkpoints. trl is imported only when the class is built.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rtlforge.trainers.grpo.trainer import GRPOTrainer


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


@functools.cache
def _trl_trainer_class() -> type:
    """TRL's ``GRPOTrainer`` with :class:`_EpochSeededSampler` (built once, lazily: imports trl)."""
    from trl import GRPOTrainer as TRLTrainer

    class _Trainer(TRLTrainer):  # type: ignore[misc,valid-type]
        def _get_train_sampler(self, dataset: Any = None) -> Any:
            return _EpochSeededSampler(super()._get_train_sampler(dataset), self.args.seed)

    return _Trainer


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
