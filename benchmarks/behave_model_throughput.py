"""Throughput of the behaviour-model interpreter (transactions per second, one core).

Runs the example models of docs/behave-models.md on seeded random inputs through
``Instance.process`` (input validation, the closures, the output dict: what BEHAVE-Sim pays per
transaction) and prints the best of ``--repeats`` runs. Target (issue 13): >= 1e5
transactions/s for small models.

Run: `.venv/bin/python benchmarks/behave_model_throughput.py [--transactions N] [--repeats R]`.
"""

from __future__ import annotations

import argparse
import random
import re
import time
from pathlib import Path

from rtlforge.behave.model import BehaviorModel, load_model
from rtlforge.behave.types import ArrayType, ScalarType, Value

DOCS = Path(__file__).resolve().parent.parent / "docs" / "behave-models.md"


def doc_models() -> dict[str, str]:
    """The ``# model: NAME`` python blocks of the docs, by name."""
    text = DOCS.read_text()
    blocks = re.findall(r"```python\n(# model: (\w+)\n.*?)```", text, flags=re.S)
    return {name: source for source, name in blocks}


def random_value(rng: random.Random, port: ScalarType | ArrayType) -> Value:
    if isinstance(port, ArrayType):
        return tuple(random_value(rng, port.element) for _ in range(port.length))
    if port.kind == "bool":
        return rng.random() < 0.5
    return rng.randint(port.lo, port.hi)


def stimulus(model: BehaviorModel, n: int, seed: int) -> list[dict[str, Value]]:
    rng = random.Random(seed)
    ports = model.inputs
    return [{name: random_value(rng, port) for name, port in ports.items()} for _ in range(n)]


def measure(model: BehaviorModel, inputs: list[dict[str, Value]], repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        inst = model.instance()
        process, reset = inst.process, inst.reset
        t0 = time.perf_counter()
        for x in inputs:
            if not isinstance(process(x), dict):
                reset()  # a declared failure (e.g. FIFO overflow): start again, as the sim does
        best = min(best, time.perf_counter() - t0)
    return len(inputs) / best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transactions", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"{'model':<22}{'IR ops':>8}{'transactions/s':>18}")
    for name, source in doc_models().items():
        model = load_model(source, name=name)
        rate = measure(model, stimulus(model, args.transactions, seed=1), args.repeats)
        print(f"{name:<22}{model.ir.process.ops:>8}{rate:>18,.0f}")


if __name__ == "__main__":
    main()
