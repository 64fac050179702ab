"""The BEHAVE task format: the bundled examples load; bad files give typed errors with the
field and line."""

from __future__ import annotations

from pathlib import Path

import pytest

from rtlforge.behave.sim.protocols import Protocol
from rtlforge.behave.sim.task import BehaveTaskError, load_behave_task, parse_behave_task
from rtlforge.behave.types import ScalarType
from rtlforge.core.errors import TaskFormatError

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "behave"

GOOD = """\
id = "t"
top = "t"
golden = "golden.py"
clock = "clk"

[[interfaces]]
name = "in"
direction = "input"
protocol = "ready_valid"
pins = { valid = "iv", ready = "ir" }
endpoints = [{ name = "d", type = "sint6" }]

[[interfaces]]
name = "out"
direction = "output"
protocol = "valid_only"
pins = { valid = "ov" }
endpoints = [{ name = "q", type = "uint7" }]
"""


def test_examples_load() -> None:
    rv = load_behave_task(EXAMPLES / "rv_accum")
    assert rv.data_input.protocol is Protocol.READY_VALID
    assert rv.data_input.pins == {"valid": "in_valid", "ready": "in_ready"}
    assert (rv.latency.min, rv.latency.max) == (1, 4)
    assert rv.reset is not None and rv.reset.active == "low"
    assert "groups of four" in rv.spec
    counter = load_behave_task(EXAMPLES / "counter_cfg")
    assert [e.name for e in counter.input_endpoints] == ["limit", "en"]  # config + data
    assert load_behave_task(EXAMPLES / "add8").combinational


def test_short_type_text() -> None:
    task = parse_behave_task(GOOD)
    assert task.data_input.endpoints[0].type == ScalarType(kind="sint", width=6)


@pytest.mark.parametrize(("old", "new", "field", "line"), [
    ('protocol = "valid_only"', 'protocol = "sometimes"', "interfaces[1].protocol", 16),
    ('type = "sint6"', 'type = "int6"', "interfaces[0].endpoints[0].type", 11),
    ('pins = { valid = "ov" }', "pins = {}", "interfaces[1].pins", 17),
    ('pins = { valid = "ov" }', 'pins = { valid = "ov", ready = "or" }',
     "interfaces[1].pins.ready", 17),
    ('name = "q"', 'name = "d"', "interfaces[1].endpoints[0].name", 18),
    ('clock = "clk"', "", "clock", None),
])
def test_bad_fields_are_named(old: str, new: str, field: str, line: int | None) -> None:
    text = GOOD.replace(old, new)
    with pytest.raises(BehaveTaskError) as info:
        parse_behave_task(text)
    assert info.value.field == field
    if line is not None:
        assert info.value.line == line
    assert isinstance(info.value, TaskFormatError)


def test_bad_toml_has_line() -> None:
    with pytest.raises(BehaveTaskError) as info:
        parse_behave_task(GOOD + "\n[oops\n")
    assert info.value.line == 20  # GOOD is 18 lines, then a blank one


def test_missing_golden_file(tmp_path: Path) -> None:
    (tmp_path / "behave.toml").write_text(GOOD)
    with pytest.raises(BehaveTaskError, match="golden") as info:
        load_behave_task(tmp_path)
    assert info.value.field == "golden"


CLOCK_ONLY = """\
id = "ring"
top = "ring"
golden = "golden.py"
clock = "clk"

[[interfaces]]
name = "in"
direction = "input"
protocol = "per_cycle"
endpoints = []

[[interfaces]]
name = "out"
direction = "output"
protocol = "per_cycle"
endpoints = [{ name = "q", type = "uint4" }]
"""


def test_a_design_with_only_a_clock_has_an_empty_per_cycle_input() -> None:
    task = parse_behave_task(CLOCK_ONLY)
    assert task.data_input.endpoints == () and task.input_endpoints == ()


@pytest.mark.parametrize(("old", "new", "field"), [
    ('endpoints = [{ name = "q", type = "uint4" }]', "endpoints = []", "interfaces[1].endpoints"),
    ('protocol = "per_cycle"\nendpoints = []',
     'protocol = "valid_only"\npins = { valid = "v" }\nendpoints = []', "interfaces[0].endpoints"),
])
def test_only_a_per_cycle_input_may_carry_no_endpoint(old: str, new: str, field: str) -> None:
    with pytest.raises(BehaveTaskError) as info:
        parse_behave_task(CLOCK_ONLY.replace(old, new, 1))
    assert info.value.field == field
