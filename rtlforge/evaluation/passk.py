"""The unbiased pass@k estimator (Chen et al., 2021), as VerilogEval and RTLLM report it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np


def pass_at_k(n: int, c: int, k: int) -> float:
    """Probability that at least one of ``k`` samples drawn from ``n`` (``c`` correct) passes.

    Computed as ``1 - prod_{i=n-c+1}^{n} (1 - k/i)``, which equals ``1 - C(n-c, k)/C(n, k)``
    without the huge binomials.
    """
    if not 0 <= c <= n:
        raise ValueError(f"need 0 <= c <= n, got n={n}, c={c}")
    if k < 1 or k > n:
        raise ValueError(f"k must be in 1..n, got k={k}, n={n}")
    if n - c < k:
        return 1.0
    return float(1.0 - np.prod(1.0 - k / np.arange(n - c + 1, n + 1)))


def mean_pass_at_k(counts: Mapping[str, tuple[int, int]], ks: Iterable[int]) -> dict[int, float]:
    """Mean pass@k over tasks from ``{task: (n, c)}``; a ``k`` larger than some task's ``n`` is
    left out rather than estimated from too few samples."""
    result: dict[int, float] = {}
    for k in ks:
        if counts and all(n >= k for n, _ in counts.values()):
            result[k] = float(np.mean([pass_at_k(n, c, k) for n, c in counts.values()]))
    return result
