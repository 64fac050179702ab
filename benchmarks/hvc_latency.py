"""Latency of one GRPO group's hypervolume contributions (the per-step reward cost).

For each backend and history size, times ``hvc_group(history, 16 candidates)`` end to end
(validation, dominance screening, HV(history) once, one HV per non-dominated candidate) and prints
the median and 95th percentile. Two history shapes are measured: ``front`` (every point mutually
non-dominated, on the unit sphere: the worst case for HV) and ``cloud`` (uniform random points,
mostly dominated: what a run's archive looks like). Candidates are drawn so that about half are
non-dominated, which is when a backend call is needed.

Target: group of 16 against a history of 50 in < 1 ms.

Run: `.venv/bin/python benchmarks/hvc_latency.py [--repeats N] [--group G]`.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from rtlforge.pareto.hypervolume import BACKENDS, hvc_group


def front_history(rng: np.random.Generator, n: int) -> np.ndarray:
    """n mutually non-dominated points on the positive unit sphere, scaled around 1."""
    v = np.abs(rng.normal(size=(n, 3)))
    return 1.5 * v / np.linalg.norm(v, axis=1, keepdims=True)


def cloud_history(rng: np.random.Generator, n: int) -> np.ndarray:
    return rng.uniform(0.3, 1.2, size=(n, 3))


def time_group(history: np.ndarray, group: list[np.ndarray], backend: str,
               repeats: int) -> list[float]:
    hvc_group(history, group, backend=backend)  # warm imports and caches
    out = []
    for _ in range(repeats):
        start = time.perf_counter()
        hvc_group(history, group, backend=backend)
        out.append(time.perf_counter() - start)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=300)
    parser.add_argument("--group", type=int, default=16)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    rng = np.random.default_rng(args.seed)
    print(f"hvc_group latency, group of {args.group}, {args.repeats} repeats (ms)")
    print(f"{'backend':<9}{'history':<9}{'shape':<7}{'median':>9}{'p95':>9}{'scored':>8}")
    for size in (0, 5, 50, 500):
        for shape, make in (("front", front_history), ("cloud", cloud_history)):
            history = make(rng, size)
            group = list(rng.uniform(0.4, 1.3, size=(args.group, 3)))
            for backend in BACKENDS:
                try:
                    times = time_group(history, group, backend, args.repeats)
                except ImportError as exc:
                    print(f"{backend:<9}{size:<9}{shape:<7}  unavailable: {exc}")
                    continue
                scored = int(np.count_nonzero(hvc_group(history, group, backend=backend)))
                med = statistics.median(times) * 1e3
                p95 = float(np.quantile(times, 0.95)) * 1e3
                print(f"{backend:<9}{size:<9}{shape:<7}{med:>9.3f}{p95:>9.3f}{scored:>8}")


if __name__ == "__main__":
    main()
