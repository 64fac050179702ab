"""The Z3 encoding and goal-directed input search (z3-solver is optional: these skip without
it, except the one checking the error a missing z3 gives)."""

from __future__ import annotations

import builtins
import importlib.util
import random
import re
from pathlib import Path
from typing import Any

import pytest

from rtlforge.behave.model import BehaviorModel, load_model, z3enc
from rtlforge.behave.types import ArrayType, ScalarType

DOCS = Path(__file__).resolve().parents[3] / "docs" / "behave-models.md"

LOCK = """\
class Out(Record):
    y: UInt[16]
    unlocked: Bool

class Lock(Model):
    armed: Bool

    def reset(self):
        self.armed = False

    def process(self, key: UInt[16]) -> Out:
        if key == 0xBEEF:
            self.armed = True
            return Out(y=1, unlocked=False)
        if self.armed and key == 0x1234:
            return Out(y=2, unlocked=True)
        if key > 70000:
            return Out(y=3, unlocked=False)
        return Out(y=wrap(key + 1, 16), unlocked=False)
"""
# Goals: site 0 (key == 0xBEEF), site 1 (armed and key == 0x1234), site 2 (never true).

needs_z3 = pytest.mark.skipif(
    importlib.util.find_spec("z3") is None,
    reason="z3 (PyPI z3-solver, an optional dependency) is not installed")


def doc_models() -> dict[str, BehaviorModel]:
    blocks = re.findall(r"```python\n(# model: (\w+)\n.*?)```", DOCS.read_text(), flags=re.S)
    return {name: load_model(source, name=name) for source, name in blocks}


@needs_z3
def test_a_branch_needing_one_16_bit_value_is_solved_and_replayed() -> None:
    model = load_model(LOCK)
    result = z3enc.solve_for_branch(model, (0, True), timeout_ms=5000)
    assert result.status == "hit", result.reason
    assert result.inputs == [{"key": 0xBEEF}]
    replay = model.instance()  # the replay again, independently of solve_for_branch
    replay.process(result.inputs[0])
    assert (0, True) in replay.hit_goals()
    assert len(result.query_ms) == 1


@needs_z3
def test_a_goal_two_transactions_deep_needs_a_sequence() -> None:
    model = load_model(LOCK)
    one = z3enc.solve_for_branch(model, (1, True), steps=1, timeout_ms=5000)
    assert one.status == "unreachable"  # from reset, `armed` is False
    three = z3enc.solve_for_branch(model, (1, True), steps=3, timeout_ms=5000)
    assert three.status == "hit", three.reason
    assert three.inputs == [{"key": 0xBEEF}, {"key": 0x1234}]
    assert len(three.query_ms) == 2  # shortest first: length 1 was unsat
    armed = z3enc.solve_for_branch(model, (1, True), state={"armed": True}, timeout_ms=5000)
    assert armed.status == "hit" and armed.inputs == [{"key": 0x1234}]


@needs_z3
def test_an_unsatisfiable_goal_is_bounded_unreachable() -> None:
    model = load_model(LOCK)
    result = z3enc.solve_for_branch(model, "process:L17:T", steps=2, timeout_ms=5000)
    assert result.status == "unreachable" and result.steps == 2
    assert "at most 2" in result.reason
    assert z3enc.solve_for_branch(model, "process:L17:F", timeout_ms=5000).status == "hit"


@needs_z3
def test_an_answer_that_does_not_replay_is_discarded(monkeypatch: pytest.MonkeyPatch) -> None:
    # Corrupt the solver's answer on the way out: the replay must catch it.
    monkeypatch.setattr(z3enc, "_value_of", lambda z3, m, term, port: 0)
    result = z3enc.solve_for_branch(load_model(LOCK), (0, True), timeout_ms=5000)
    assert result.status == "discarded"
    assert result.inputs == [{"key": 0}]
    assert "replayed" in result.reason


SIGNED_DIV = """\
class Out(Record):
    q: SInt[9]

class M(Model):
    s: Bool

    def reset(self):
        self.s = False

    def process(self, a: SInt[8], b: SInt[8]) -> Out:
        if b == 0:
            return Out(q=0)
        return Out(q=a // b)
"""


@needs_z3
def test_unsupported_constructs_refuse_symbolically_but_run_concretely() -> None:
    model = load_model(SIGNED_DIV)
    with pytest.raises(z3enc.Unsupported) as info:
        z3enc.encode_step(model, z3enc.state_vars(model))
    assert info.value.line == 13
    result = z3enc.solve_for_branch(model, (0, False), timeout_ms=5000)
    assert result.status == "unsupported" and "line 13" in result.reason
    assert model.instance().process({"a": -7, "b": 2}) == {"q": -4}  # floor division


def _concrete(z3: Any, port: ScalarType | ArrayType, value: Any) -> Any:
    if isinstance(port, ArrayType):
        return [_concrete(z3, port.element, v) for v in value]
    if port.kind == "bool":
        return z3.BoolVal(value)
    return z3.BitVecVal(value & ((1 << port.width) - 1), port.width)


def _read(z3: Any, port: ScalarType | ArrayType, term: Any) -> Any:
    if isinstance(port, ArrayType):
        return tuple(_read(z3, port.element, t) for t in term)
    v = z3.simplify(term)
    if port.kind == "bool":
        return z3.is_true(v)
    return v.as_signed_long() if port.kind == "sint" else v.as_long()


def _random_value(rng: random.Random, port: ScalarType | ArrayType) -> Any:
    if isinstance(port, ArrayType):
        return tuple(_random_value(rng, port.element) for _ in range(port.length))
    if port.kind == "bool":
        return rng.random() < 0.5
    return rng.choice([port.lo, port.hi, 0, rng.randint(port.lo, port.hi)])


@needs_z3
@pytest.mark.parametrize("name", ["accumulator", "saturating_counter", "sequence_detector",
                                  "fifo4", "sorter4"])
def test_the_encoding_agrees_with_the_interpreter(name: str) -> None:
    """Differential check: on concrete states and inputs the encoded outputs, next state and
    failure flag equal what the interpreter computes."""
    import z3

    model = doc_models()[name]
    rng = random.Random(7)
    inst = model.instance()
    ports_in, ports_state, ports_out = model.inputs, model.state_fields, model.outputs
    for _ in range(12):
        inputs = {n: _random_value(rng, p) for n, p in ports_in.items()}
        start = inst.state()
        enc = z3enc.encode_step(
            model, {n: _concrete(z3, ports_state[n], v) for n, v in start.items()},
            {n: _concrete(z3, ports_in[n], v) for n, v in inputs.items()})
        out = inst.process(inputs)
        failed = z3.is_true(z3.simplify(enc.failed))
        assert failed == (not isinstance(out, dict)), (start, inputs, out)
        if failed:
            inst.reset()
            continue
        assert {n: _read(z3, p, enc.outputs[n]) for n, p in ports_out.items()} == out
        assert {n: _read(z3, p, enc.next_state[n]) for n, p in ports_state.items()} \
            == inst.state()


@needs_z3
def test_every_goal_of_the_examples_is_resolved() -> None:
    for name, model in doc_models().items():
        for goal in model.goals():
            result = z3enc.solve_for_branch(model, goal, steps=5, timeout_ms=5000)
            assert result.status in ("hit", "unreachable"), (name, goal, result)
            if name != "sorter4":
                assert result.status == "hit", (name, goal)


def test_a_missing_z3_gives_a_typed_error_that_says_what_to_install(
        monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = builtins.__import__

    def no_z3(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "z3" or name.startswith("z3."):
            raise ImportError("No module named 'z3'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_z3)
    model = load_model(LOCK)
    with pytest.raises(z3enc.Z3Unavailable) as info:
        z3enc.solve_for_branch(model, (0, True))
    assert "z3-solver" in str(info.value)
    assert model.instance().process({"key": 5}) == {"y": 6, "unlocked": False}


@needs_z3
def test_a_very_large_process_is_refused_symbolically() -> None:
    body = "\n".join(["class Out(Record):", "    y: UInt[16]", "", "class M(Model):",
                      "    s: Bool", "", "    def reset(self):", "        self.s = False", "",
                      "    def process(self, x: UInt[8]) -> Out:", "        acc = 0",
                      "        for i in range(1000):", "            for j in range(4):",
                      "                acc = wrap(acc + x, 16)", "        return Out(y=acc)"])
    model = load_model(body)
    assert model.instance().process({"x": 1}) == {"y": 4000}
    with pytest.raises(z3enc.Unsupported, match="IR operations"):
        z3enc.encode_step(model, z3enc.state_vars(model))
