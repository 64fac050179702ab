"""Seeding and RNG state: what makes a run repeatable, and lets a resumed run continue the very
random streams it was saved with (every checkpoint holds them, see :mod:`.checkpoints`).

numpy and torch are imported inside the functions, so importing this module stays light.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

__all__ = ["capture_rng_state", "restore_rng_state", "seed_everything"]


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
