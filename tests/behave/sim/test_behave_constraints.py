"""Input constraints (`[[constraints]]`): the task format refuses bad or unsatisfiable rules
with a typed error; every stimulus (sweep, random, continuous, directed) obeys the rules;
the independent checker finds hand-made violations; Z3's directed sequences obey them too."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rtlforge.behave.model import load_model
from rtlforge.behave.sim.constraints import (
    apply_constraints,
    constraint_violations,
    sweep_repeats,
)
from rtlforge.behave.sim.guided import (
    DirectedSequence,
    GuidedConfig,
    QueryOutcome,
    _obeying,
    directed_search,
)
from rtlforge.behave.sim.stimulus import StimulusConfig, Transaction, edge_cases, generate_stimulus
from rtlforge.behave.sim.task import BehaveTask, BehaveTaskError, gate_wait, parse_behave_task

TASK = '''
id = "t"
top = "t"
golden = "golden.py"
clock = "clk"

[reset]
signal = "rst"

[[interfaces]]
name = "cfg"
direction = "input"
protocol = "static"
endpoints = [{{ name = "mode", type = "uint2" }}]

[[interfaces]]
name = "in"
direction = "input"
protocol = "per_cycle"
endpoints = [{{ name = "x", type = "uint4" }}, {{ name = "g", type = "bool" }},
             {{ name = "h", type = "uint2" }}, {{ name = "v", type = "uint3[2]" }},
             {{ name = "free", type = "uint8" }}]

[[interfaces]]
name = "out"
direction = "output"
protocol = "per_cycle"
endpoints = [{{ name = "q", type = "uint4" }}]
{constraints}
'''


def _task(constraints: str) -> BehaveTask:
    return parse_behave_task(TASK.format(constraints=constraints))


def _txns(rows: list[dict], resets: tuple[int, ...] = (0,)) -> list[Transaction]:
    base = {"mode": 0, "x": 0, "g": False, "h": 0, "v": (0, 0), "free": 0}
    return [Transaction(inputs={**base, **row}, reset=n in resets) for n, row in enumerate(rows)]


# ------------------------------------------------------------------------------ the format


def test_a_valid_rule_set_loads() -> None:
    task = _task('''
[[constraints]]
endpoint = "g"
hold = [2, 5]

[[constraints]]
endpoint = "x"
hold = [4, 10]
stable_while = "g"
settle = 1
''')
    x = task.constraint_of("x")
    assert x is not None and x.hold == (4, 10) and x.stable_while == "g" and x.settle == 1
    # the gate's shortest run (2), then 1 settle: the most x waits once it is due
    assert gate_wait(task, x) == 3
    assert task.constraint_of("free") is None


@pytest.mark.parametrize(("rules", "field", "words"), [
    ('endpoint = "nope"\nhold = [1, 2]', "constraints[0].endpoint", "not an input endpoint"),
    ('endpoint = "q"\nhold = [1, 2]', "constraints[0].endpoint", "not an input endpoint"),
    ('endpoint = "mode"\nhold = [1, 2]', "constraints[0].endpoint", "configuration"),
    ('endpoint = "x"', "constraints[0]", "a hold, a stable_while, or both"),
    ('endpoint = "x"\nhold = [0, 2]', "constraints[0].hold", "1 <= min <= max"),
    ('endpoint = "x"\nhold = [5, 3]', "constraints[0].hold", "1 <= min <= max"),
    ('endpoint = "x"\nhold = [1, 2, 3]', "constraints[0].hold", "at most 2"),
    ('endpoint = "x"\nhold = [1, 200000]', "constraints[0].hold", "max <= 100000"),
    ('endpoint = "x"\nhold = [1, 2]\nsettle = 2', "constraints[0].settle", "stable_while"),
    ('endpoint = "x"\nstable_while = "x"', "constraints[0].stable_while", "itself"),
    ('endpoint = "x"\nstable_while = "v"', "constraints[0].stable_while", "array"),
    ('endpoint = "x"\nstable_while = "mode"', "constraints[0].stable_while",
     "not an input endpoint"),
    ('endpoint = "x"\nsettle = -1\nstable_while = "g"', "constraints[0].settle", "greater"),
])
def test_bad_rules_are_typed_errors_naming_the_field(rules: str, field: str, words: str) -> None:
    with pytest.raises(BehaveTaskError) as info:
        _task(f"\n[[constraints]]\n{rules}\n")
    assert info.value.field == field
    assert words in str(info.value)


def test_an_endpoint_constrained_twice_is_refused() -> None:
    with pytest.raises(BehaveTaskError, match="constrained twice") as info:
        _task('\n[[constraints]]\nendpoint = "x"\nhold = [1, 2]\n'
              '\n[[constraints]]\nendpoint = "x"\nstable_while = "g"\n')
    assert info.value.field == "constraints[1].endpoint"


def test_chains_and_loops_of_gates_are_refused() -> None:
    chain = ('\n[[constraints]]\nendpoint = "x"\nstable_while = "g"\n'
             '\n[[constraints]]\nendpoint = "g"\nstable_while = "h"\n')
    loop = ('\n[[constraints]]\nendpoint = "g"\nstable_while = "h"\n'
            '\n[[constraints]]\nendpoint = "h"\nstable_while = "g"\n')
    for rules in (chain, loop):
        with pytest.raises(BehaveTaskError, match="chains of stable_while"):
            _task(rules)


def test_a_gate_that_cannot_stay_low_long_enough_is_unsatisfiable() -> None:
    # x needs g low for settle + 1 = 4 transactions in a row; g holds a value at most 3
    with pytest.raises(BehaveTaskError, match="unsatisfiable") as info:
        _task('\n[[constraints]]\nendpoint = "g"\nhold = [1, 3]\n'
              '\n[[constraints]]\nendpoint = "x"\nstable_while = "g"\nsettle = 3\n')
    assert info.value.field == "constraints[1].settle"


def test_a_hold_too_short_for_the_gates_wait_is_unsatisfiable() -> None:
    # due after 4, x may wait g's shortest run (2) + settle (1) = 3 more: max must be >= 7
    rules = ('\n[[constraints]]\nendpoint = "g"\nhold = [2, 5]\n'
             '\n[[constraints]]\nendpoint = "x"\nhold = [4, {hi}]\nstable_while = "g"\n'
             'settle = 1\n')
    with pytest.raises(BehaveTaskError, match="make max at least 7") as info:
        _task(rules.format(hi=6))
    assert info.value.field == "constraints[1].hold"
    assert _task(rules.format(hi=7)).constraint_of("x") is not None


def test_a_sweep_made_huge_by_long_holds_is_refused() -> None:
    # uint8 has 17 edge values; each proposed for 100000 transactions: 1.7 M, over 2 M with x
    with pytest.raises(BehaveTaskError, match="edge sweep alone") as info:
        _task('\n[[constraints]]\nendpoint = "free"\nhold = [1, 100000]\n'
              '\n[[constraints]]\nendpoint = "x"\nhold = [1, 100000]\n')
    assert info.value.field == "constraints"


# ------------------------------------------------------------------------------ generator


def test_a_fixed_hold_takes_the_proposal_at_each_run_start() -> None:
    task = _task('\n[[constraints]]\nendpoint = "x"\nhold = [2, 2]\n')
    out = apply_constraints(task, _txns([{"x": k, "free": k} for k in range(1, 9)]), seed=0)
    assert [t.inputs["x"] for t in out] == [1, 1, 3, 3, 5, 5, 7, 7]
    assert [t.inputs["free"] for t in out] == list(range(1, 9))  # unconstrained: untouched


def test_a_run_always_changes_value_even_when_the_proposal_repeats() -> None:
    task = _task('\n[[constraints]]\nendpoint = "x"\nhold = [2, 2]\n')
    xs = [t.inputs["x"] for t in apply_constraints(task, _txns([{"x": 5}] * 8), seed=3)]
    assert xs[0] == xs[1] == 5
    runs = [xs[k:k + 2] for k in range(0, 8, 2)]
    assert all(a == b for a, b in runs)  # runs of exactly two
    assert all(runs[k][0] != runs[k + 1][0] for k in range(3))  # each unlike the one before


def test_a_gated_endpoint_waits_for_its_gate_and_steers_it_low() -> None:
    # settle 1: x may change only where g was 0 in this and the previous transaction.
    # t1: x is due (proposal 1), g is steered to 0 at once (no hold), but has been 0 only
    # once; t2: g still 0 (twice): x takes the proposal; x stays due every transaction
    # after, so g stays 0 although it proposes 1 at t4 and t5.
    task = _task('\n[[constraints]]\nendpoint = "x"\nstable_while = "g"\nsettle = 1\n')
    gs = [1, 0, 0, 0, 1, 1, 0, 0]
    out = apply_constraints(task, _txns([{"x": k, "g": bool(g)} for k, g in enumerate(gs)]), 0)
    assert [t.inputs["x"] for t in out] == [0, 0, 2, 3, 4, 5, 6, 7]
    assert [t.inputs["g"] for t in out] == [True] + [False] * 7


def test_a_reset_starts_every_run_afresh() -> None:
    task = _task('\n[[constraints]]\nendpoint = "x"\nhold = [3, 3]\n')
    out = apply_constraints(task, _txns([{"x": k} for k in range(1, 8)], resets=(0, 2)), 0)
    # the first run is cut by the reset at t2, which starts a run with its own proposal
    assert [t.inputs["x"] for t in out] == [1, 1, 3, 3, 3, 6, 6]
    assert constraint_violations(task, out) == []


def test_the_checker_finds_each_kind_of_violation() -> None:
    task = _task('\n[[constraints]]\nendpoint = "g"\nhold = [2, 3]\n'
                 '\n[[constraints]]\nendpoint = "x"\nstable_while = "g"\nsettle = 1\n')
    rows = [{"g": True, "x": 0}, {"g": True, "x": 0},
            {"g": False, "x": 0}, {"g": False, "x": 0}, {"g": False, "x": 0},
            {"g": False, "x": 0},  # g low for 4 > 3: hold_max where the 4th begins (t5)
            {"g": True, "x": 0},  # g high for 1 < 2: hold_min where it ends (t7)
            {"g": False, "x": 0},
            {"g": False, "x": 1},  # x changes with g low at t7 and t8: fine
            {"g": True, "x": 2}]   # x changes while g is high: stable_while at t9
    found = [(v.transaction, v.endpoint, v.rule) for v in constraint_violations(task, _txns(rows))]
    assert found == [(5, "g", "hold_max"), (7, "g", "hold_min"), (9, "x", "stable_while")]


def test_the_checker_counts_settle_within_the_segment() -> None:
    task = _task('\n[[constraints]]\nendpoint = "x"\nstable_while = "g"\nsettle = 2\n')
    # g is 0 throughout; a change needs it 0 in 3 transactions of the segment (the change's
    # and the 2 before): x changing 1 transaction after a reset is too early, 4 after is not
    xs = [1, 2, 2, 2, 5, 5, 5, 6]
    rows = [{"x": x} for x in xs]
    found = [(v.transaction, v.rule) for v in constraint_violations(task, _txns(rows, (0, 3)))]
    assert found == [(1, "stable_while"), (4, "stable_while")]


GATED = '''
[[constraints]]
endpoint = "x"
hold = [{x_lo}, {x_hi}]
stable_while = "{gate}"
settle = {settle}

[[constraints]]
endpoint = "v"
stable_while = "{gate}"

[[constraints]]
endpoint = "free"
hold = [{f_lo}, {f_hi}]
'''


@st.composite
def _rule_sets(draw: st.DrawFn) -> tuple[BehaveTask, str]:
    """A gate (g or h, with or without a hold of its own) for x (hold) and v (no hold), and an
    independent hold on free, all drawn within what the loader accepts."""
    gate = draw(st.sampled_from(["g", "h"]))
    settle = draw(st.integers(0, 3))
    gate_hold = draw(st.none() | st.integers(1, 4))
    text = ""
    if gate_hold is not None:
        hi = draw(st.integers(max(gate_hold, settle + 1), 8))
        text = f'\n[[constraints]]\nendpoint = "{gate}"\nhold = [{gate_hold}, {hi}]\n'
    wait = (gate_hold or 1) + settle
    x_lo = draw(st.integers(1, 6))
    f_lo = draw(st.integers(1, 4))
    text += GATED.format(gate=gate, settle=settle, x_lo=x_lo,
                         x_hi=draw(st.integers(x_lo + wait, x_lo + wait + 6)),
                         f_lo=f_lo, f_hi=draw(st.integers(f_lo, 6)))
    return _task(text), gate


_values = st.fixed_dictionaries({
    "x": st.integers(0, 15), "g": st.booleans(), "h": st.integers(0, 3),
    "v": st.tuples(st.integers(0, 7), st.integers(0, 7)), "free": st.integers(0, 255)})


@settings(max_examples=150, deadline=None)
@given(rules=_rule_sets(), rows=st.lists(_values, min_size=1, max_size=120),
       resets=st.sets(st.integers(0, 119), max_size=6), seed=st.integers(0, 2**16))
def test_every_constrained_sequence_obeys_every_rule(rules, rows, resets, seed) -> None:
    task, gate = rules
    txns = _txns(rows, resets=tuple(resets | {0}))
    out = apply_constraints(task, txns, seed)
    assert constraint_violations(task, out) == []
    assert [t.reset for t in out] == [t.reset for t in txns]
    untouched = ({"g", "h"} - {gate}).pop()  # neither constrained nor a gate
    assert [t.inputs[untouched] for t in out] == [t.inputs[untouched] for t in txns]


SYNC_LIKE = '''
[[constraints]]
endpoint = "g"
hold = [3, 12]

[[constraints]]
endpoint = "x"
hold = [10, 30]
stable_while = "g"
settle = 3
'''


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_generated_stimulus_obeys_the_rules_and_sweeps_every_edge_value(seed: int) -> None:
    task = _task(SYNC_LIKE)
    stim = generate_stimulus(task, StimulusConfig(seed=seed, sequences=20, transactions=80))
    assert constraint_violations(task, stim.transactions) == []
    sweep = [t.inputs["x"] for t in stim.transactions if t.sequence == 0]
    assert set(edge_cases(task.data_input.endpoints[0].type)) <= set(sweep)
    assert any(t.inputs["g"] for t in stim.transactions) and not all(
        t.inputs["g"] for t in stim.transactions)


def test_sweep_repeats_cover_a_whole_run_and_the_wait() -> None:
    task = _task(SYNC_LIKE)
    assert sweep_repeats(task, "x") == 30 + 3 + 3  # longest run + the gate's min + settle
    assert sweep_repeats(task, "g") == 12
    assert sweep_repeats(task, "free") == 1


# ------------------------------------------------------------------------------ directed

# the goal: the second transaction after reset onwards sees x change
CHANGE = '''
from rtlforge.behave.model.dsl import *


class Out(Record):
    q: UInt[4]


class Change(Model):
    started: Bool
    last: UInt[4]

    def reset(self):
        self.started = False
        self.last = 0

    def process(self, mode: UInt[2], x: UInt[4], g: Bool, h: UInt[2], v: Array[UInt[3], 2],
                free: UInt[8]) -> Out:
        q = 0
        if self.started:
            if x != self.last:
                q = 1
        self.started = True
        self.last = x
        return Out(q=q)
'''


def _search(task: BehaveTask, steps: int) -> tuple[QueryOutcome, list[DirectedSequence]]:
    pytest.importorskip("z3")
    import time

    model = load_model(CHANGE)
    outcomes, found, refused = directed_search(
        task, model, source="golden", branches_hit=set(), fails_hit=set(),
        config=GuidedConfig(steps=steps, budget_s=20), deadline=time.monotonic() + 20)
    assert refused == ""
    hit = next(q for q in outcomes if q.goal == "process:L21:T")
    return hit, [s for s in found if s.goal == hit.goal]


def test_z3_finds_a_change_at_once_without_constraints() -> None:
    hit, _ = _search(_task(""), steps=4)
    assert (hit.status, hit.steps) == ("hit", 2)


def test_z3_sequences_obey_the_hold_and_the_gate() -> None:
    # x holds 3 at least and changes only after g was 0 twice: the earliest change is the
    # fourth transaction (index 3), with g low in the third and fourth
    task = _task('\n[[constraints]]\nendpoint = "x"\nhold = [3, 6]\nstable_while = "g"\n'
                 'settle = 1\n')
    short, _ = _search(task, steps=3)
    assert short.status == "unreachable"
    hit, found = _search(task, steps=5)
    assert (hit.status, hit.steps) == ("hit", 4)
    inputs = found[0].inputs
    assert inputs[3]["x"] != inputs[2]["x"] and not inputs[2]["g"] and not inputs[3]["g"]
    txns = [Transaction(inputs=dict(v), reset=k == 0) for k, v in enumerate(inputs)]
    assert constraint_violations(task, txns) == []


def test_a_directed_sequence_breaking_a_rule_is_dropped_and_marked() -> None:
    task = _task('\n[[constraints]]\nendpoint = "x"\nhold = [3, 6]\n')
    good = DirectedSequence(goal="a", kind="branch", source="golden",
                            inputs=tuple({"x": 1, "g": False, "h": 0, "v": (0, 0), "free": 0,
                                          "mode": 0} for _ in range(4)))
    bad = good.model_copy(update={"goal": "b", "inputs": (
        *good.inputs[:1], {**good.inputs[1], "x": 2})})  # x changed after 1 transaction
    outcomes = [QueryOutcome(goal=g, kind="branch", source="golden", status="hit")
                for g in ("a", "b")]
    stim = generate_stimulus(task, StimulusConfig(sequences=1, transactions=10))
    kept, marked = _obeying(task, stim, [good, bad], outcomes)
    assert kept == [good]
    assert [q.status for q in marked] == ["hit", "outside_constraints"]
    assert "fewer than 3" in marked[1].reason
