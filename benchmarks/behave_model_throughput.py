"""Throughput of the behaviour-model interpreter (transactions per second, one core), and with
``--z3`` the distribution of Z3 goal-query times.

Runs the example models of docs/behave-models.md on seeded random inputs through
``Instance.process`` (input validation, the closures, the output dict: what BEHAVE-Sim pays per
transaction) and prints the best of ``--repeats`` runs. Target (issue 13): >= 1e5
transactions/s for small models. ``--z3`` then calls ``solve_for_branch`` (up to 5 transactions)
on every branch goal of those models plus two locks that need exact 16-bit keys (one key; three
keys in a row) and prints per-query times, single-step (sequence length 1) and multi-step
(length >= 2) separately. Needs z3-solver.

Run: `.venv/bin/python benchmarks/behave_model_throughput.py [--transactions N] [--repeats R]
[--z3]`.
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


LOCKS = {
    "lock1": """
class Out(Record):
    open: Bool

class Lock(Model):
    s: Bool

    def reset(self):
        self.s = False

    def process(self, key: UInt[16]) -> Out:
        if key == 0xBEEF:
            return Out(open=True)
        return Out(open=False)
""",
    "lock3": """
class Out(Record):
    open: Bool

class Lock(Model):
    stage: UInt[2]

    def reset(self):
        self.stage = 0

    def process(self, key: UInt[16]) -> Out:
        if self.stage == 0 and key == 0x1357:
            self.stage = 1
        elif self.stage == 1 and key == wrap(0x1357 * 3, 16):
            self.stage = 2
        elif self.stage == 2 and key == 0xC0DE:
            return Out(open=True)
        else:
            self.stage = 0
        return Out(open=False)
""",
}


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def z3_queries() -> None:
    from rtlforge.behave.model.z3enc import solve_for_branch

    models = {name: load_model(src, name=name) for name, src in doc_models().items()}
    models.update({name: load_model(src, name=name) for name, src in LOCKS.items()})
    single: list[float] = []
    multi: list[float] = []
    goals: list[tuple[str, str, str, int, float]] = []
    for name, model in models.items():
        for goal in model.goals():
            result = solve_for_branch(model, goal, steps=5, timeout_ms=10_000)
            single.append(result.query_ms[0])
            multi.extend(result.query_ms[1:])
            goals.append((name, goal.name, result.status, result.steps, sum(result.query_ms)))
    print(f"\n{'model':<22}{'goal':<18}{'status':<13}{'steps':>6}{'total ms':>10}")
    for row in goals:
        print(f"{row[0]:<22}{row[1]:<18}{row[2]:<13}{row[3]:>6}{row[4]:>10.1f}")
    for label, values in (("single-step", single), ("multi-step", multi)):
        if values:
            print(f"{label} queries: n={len(values)} median={percentile(values, 0.5):.1f} ms "
                  f"p90={percentile(values, 0.9):.1f} ms max={max(values):.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transactions", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--z3", action="store_true", help="also time Z3 goal queries")
    args = parser.parse_args()
    print(f"{'model':<22}{'IR ops':>8}{'transactions/s':>18}")
    for name, source in doc_models().items():
        model = load_model(source, name=name)
        rate = measure(model, stimulus(model, args.transactions, seed=1), args.repeats)
        print(f"{name:<22}{model.ir.process.ops:>8}{rate:>18,.0f}")
    if args.z3:
        z3_queries()


if __name__ == "__main__":
    main()
