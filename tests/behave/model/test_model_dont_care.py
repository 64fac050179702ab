"""`ANY` (don't care) as a field value of process()'s record: lowering, interpreter, Z3."""

from __future__ import annotations

import importlib.util

import pytest

from rtlforge.behave.base import DONT_CARE, is_dont_care
from rtlforge.behave.model import ModelError, load_model

# a register that shows what was loaded; after a cycle without `load` its content is not
# specified (a design may drive anything there), while `loaded` always is
HOLD = '''
from rtlforge.behave.model.dsl import *


class Out(Record):
    data: UInt[8]
    loaded: Bool


class Hold(Model):
    data: UInt[8]
    known: Bool

    def reset(self):
        self.data = 0
        self.known = False

    def process(self, load: Bool, d: UInt[8]) -> Out:
        shown = self.data
        known = self.known
        self.known = load
        if load:
            self.data = d
        if known:
            return Out(data=shown, loaded=True)
        return Out(data=ANY, loaded=False)
'''


def test_any_is_a_dont_care_value_in_the_interpreter() -> None:
    sim = load_model(HOLD).instance()
    # by hand: nothing loaded yet -> ANY; the cycle after load(7) shows 7; then ANY again
    assert sim.process({"load": True, "d": 7}) == {"data": DONT_CARE, "loaded": False}
    out = sim.process({"load": False, "d": 9})
    assert out == {"data": 7, "loaded": True} and not is_dont_care(out["data"])
    again = sim.process({"load": False, "d": 9})
    assert is_dont_care(again["data"]) and again["loaded"] is False
    assert repr(again["data"]) == "ANY"


@pytest.mark.parametrize(("body", "where"), [
    ("x = ANY\n        return Out(data=0, loaded=False)", "any"),   # not a field value
    ("return Out(data=ANY + 1, loaded=False)", "any"),               # in an expression
    ("ANY = 3\n        return Out(data=0, loaded=False)", "name"),  # rebinding the name
])
def test_any_elsewhere_is_rejected(body: str, where: str) -> None:
    source = HOLD.split("    def process")[0] + (
        "    def process(self, load: Bool, d: UInt[8]) -> Out:\n        " + body + "\n")
    with pytest.raises(ModelError) as info:
        load_model(source)
    assert info.value.construct == where


def test_any_cannot_be_a_constant() -> None:
    with pytest.raises(ModelError, match="don't-care"):
        load_model("ANY = 1\n" + HOLD)


@pytest.mark.skipif(importlib.util.find_spec("z3") is None, reason="z3-solver not installed")
def test_z3_cares_is_where_the_output_is_specified() -> None:
    import z3

    from rtlforge.behave.model import z3enc

    model = load_model(HOLD)
    state = z3enc.state_vars(model)
    step = z3enc.encode_step(model, state)
    solver = z3.Solver()
    # `data` is specified exactly when the state says it is known; `loaded` always
    solver.add(step.cares["data"] != state["known"])
    assert solver.check() == z3.unsat
    assert z3.simplify(step.cares["loaded"]).eq(z3.BoolVal(True))
    # where it is specified it is the held value (no constraint from the ANY path)
    solver = z3.Solver()
    solver.add(state["known"], step.outputs["data"] != state["data"])
    assert solver.check() == z3.unsat


@pytest.mark.skipif(importlib.util.find_spec("z3") is None, reason="z3-solver not installed")
def test_without_any_cares_equals_emits() -> None:
    import z3

    from rtlforge.behave.model import z3enc

    source = HOLD.replace("return Out(data=ANY, loaded=False)",
                          "return Out(data=0, loaded=False)")
    model = load_model(source)
    step = z3enc.encode_step(model, z3enc.state_vars(model))
    for name in ("data", "loaded"):
        solver = z3.Solver()
        solver.add(step.cares[name] != step.emits)
        assert solver.check() == z3.unsat
