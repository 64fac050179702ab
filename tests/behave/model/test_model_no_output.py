"""A bare `return` in process(): the transaction emits no output record (interpreter and Z3)."""

from __future__ import annotations

import pytest

from rtlforge.behave.base import Failure
from rtlforge.behave.model import ModelError, load_model

GROUPS = '''
from rtlforge.behave.model.dsl import *


class Sum(Record):
    total: UInt[10]
    first: UInt[8]


class Groups(Model):
    """Emit the sum and the first element of every group of four inputs."""

    total: UInt[10]
    first: UInt[8]
    seen: UInt[2]

    def reset(self):
        self.total = 0
        self.first = 0
        self.seen = 0

    def process(self, x: UInt[8]) -> Sum:
        if self.seen == 0:
            self.first = x
        if self.seen == 3:
            out = self.total + x
            self.total = 0
            self.seen = 0
            return Sum(total=out, first=self.first)
        self.total = self.total + x
        self.seen = wrap(self.seen + 1, 2)
        return
'''


def test_bare_return_emits_nothing() -> None:
    sim = load_model(GROUPS, name="groups").instance()
    outs = [sim.process({"x": x}) for x in (1, 2, 3, 4, 255, 255, 255, 255, 7)]
    # groups (1, 2, 3, 4) and (255 x 4): sums 10 and 1020, first elements 1 and 255
    assert outs == [{}, {}, {}, {"total": 10, "first": 1},
                    {}, {}, {}, {"total": 1020, "first": 255}, {}]
    sim.reset()
    assert [sim.process({"x": 9}) for _ in range(4)][-1] == {"total": 36, "first": 9}


def test_an_empty_result_is_a_fresh_mapping() -> None:
    sim = load_model(GROUPS).instance()
    a = sim.process({"x": 1})
    a["total"] = 5  # type: ignore[index]
    assert sim.process({"x": 1}) == {}


def test_none_and_return_in_reset_are_rejected() -> None:
    with pytest.raises(ModelError) as info:
        load_model(GROUPS.replace("        return\n", "        return None\n"))
    assert info.value.construct == "None" and "bare `return`" in info.value.message
    assert info.value.line == GROUPS.splitlines().index("        return") + 1
    with pytest.raises(ModelError, match="does not return"):
        load_model(GROUPS.replace("        self.seen = 0\n\n", "        self.seen = 0\n"
                                  "        return\n\n", 1))


def test_a_missing_return_is_still_an_error() -> None:
    with pytest.raises(ModelError, match="end every path"):
        load_model(GROUPS.replace("        return\n", "        pass\n"))


def test_range_failure_before_a_bare_return_is_a_failure() -> None:
    src = GROUPS.replace("self.total = self.total + x", "self.total = self.total + x * 4")
    sim = load_model(src).instance()
    # total: 255*4 = 1020, then 1020 + 1020 does not fit UInt[10]: a range failure, not {}
    assert sim.process({"x": 255}) == {}
    out = sim.process({"x": 255})
    assert isinstance(out, Failure) and out.kind == "range"


def test_z3_emits_flag() -> None:
    z3 = pytest.importorskip("z3")
    from rtlforge.behave.model import z3enc

    model = load_model(GROUPS, name="groups")
    state = z3enc.state_vars(model)
    enc = z3enc.encode_step(model, state)
    # spec: a record comes out exactly on the fourth input of a group (seen == 3), in every
    # reachable state (three inputs sum to at most 765; from a larger free `total` the output
    # range check fails instead: a range failure, no record)
    solver = z3.Solver()
    solver.add(z3.ULE(state["total"], 765), enc.emits != (state["seen"] == 3))
    assert solver.check() == z3.unsat
    solver = z3.Solver()
    solver.add(state["total"] == 1023, state["seen"] == 3, z3enc.input_vars(model)["x"] == 1,
               enc.emits)  # 1023 + 1 does not fit UInt[10]
    assert solver.check() == z3.unsat
    # where it emits, the outputs are the group's sum and first element
    solver = z3.Solver()
    solver.add(state["seen"] == 3, state["total"] == 30, state["first"] == 4)
    solver.add(z3enc.input_vars(model)["x"] == 5, enc.emits)
    assert solver.check() == z3.sat
    m = solver.model()
    assert m.eval(enc.outputs["total"]).as_long() == 35
    assert m.eval(enc.outputs["first"]).as_long() == 4
    # the emitting branch needs three transactions before it: bounded search finds it at 4
    line = GROUPS.splitlines().index("        if self.seen == 3:") + 1
    goal = next(g for g in model.goals() if g.name == f"process:L{line}:T")
    assert z3enc.solve_for_branch(model, goal, steps=3, timeout_ms=5000).status == "unreachable"
    hit = z3enc.solve_for_branch(model, goal, steps=4, timeout_ms=5000)
    assert hit.status == "hit" and hit.steps == 4


def test_z3_model_that_never_emits() -> None:
    z3 = pytest.importorskip("z3")
    from rtlforge.behave.model import z3enc

    src = '''
class Out(Record):
    y: UInt[4]


class Sink(Model):
    n: UInt[4]

    def reset(self):
        self.n = 0

    def process(self, x: UInt[4]) -> Out:
        self.n = x
        return
'''
    model = load_model(src)
    assert model.instance().process({"x": 3}) == {}
    enc = z3enc.encode_step(model, z3enc.state_vars(model))
    assert z3.is_false(enc.emits)
    solver = z3.Solver()
    solver.add(enc.next_state["n"] != z3enc.input_vars(model)["x"])
    assert solver.check() == z3.unsat  # the state update still happens
