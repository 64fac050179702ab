"""A design's check and its containment go to the gate in one request: the answers (and which
violation wins) must be those of the two requests made apart, and each is memoised alone."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest

from rtlforge.core.errors import SecurityViolation
from rtlforge.core.models import SourceFile
from rtlforge.sandbox.runner import SandboxRunner

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")

TB = (SourceFile(name="tb.v", content="module tb; reg [7:0] errors; top_module dut(); "
                 "initial begin errors = 0; $display(\"Mismatches: %0d\", errors); end "
                 "endmodule\n"),)
CLEAN = "module top_module; endmodule\n"
FORCE = "module top_module; initial force tb.errors = 0; endmodule\n"
SYSTEM = "module top_module; initial $system(\"id\"); initial force tb.errors = 0; endmodule\n"


@pytest.fixture
def runner() -> Iterator[SandboxRunner]:
    with SandboxRunner() as made:
        yield made


def _apart(runner: SandboxRunner, text: str) -> str | None:
    design = [SourceFile(name="d.v", content=text)]
    try:
        runner.gate.check(design, role="design", available=["d.v"])
        runner.gate.contained(design, TB)
    except SecurityViolation as exc:
        return exc.construct
    return None


def _together(runner: SandboxRunner, text: str) -> str | None:
    with runner.workspace() as wd:
        try:
            runner.put(wd, [SourceFile(name="d.v", content=text)], role="design",
                       readable=["d.v"], contain=(TB, (), ((),)))
        except SecurityViolation as exc:
            assert not (wd / "d.v").exists(), "a refused design was written"
            return exc.construct
    return None


@pytest.mark.parametrize("text", [CLEAN, FORCE, SYSTEM])
def test_one_request_answers_as_two(text: str) -> None:
    with SandboxRunner() as apart, SandboxRunner() as together:
        expected = _apart(apart, text)
        assert _together(together, text) == expected
    if text is not CLEAN:
        assert expected is not None  # the oracle refuses both bad designs


def test_the_check_wins_over_containment(runner: SandboxRunner) -> None:
    # SYSTEM fails both; the check comes first, as when they were two requests
    with SandboxRunner() as other:
        check, containment = _apart(other, SYSTEM), _apart(other, FORCE)
    assert check != containment
    assert _together(runner, SYSTEM) == check


def test_each_answer_is_memoised_alone(runner: SandboxRunner) -> None:
    assert _together(runner, FORCE) is not None
    asked = sum(w.requests for w in runner.gate._idle)
    design = [SourceFile(name="d.v", content=FORCE)]
    runner.gate.check(design, role="design", available=["d.v"])  # memo: no round trip
    with pytest.raises(SecurityViolation):
        runner.gate.contained(design, TB)
    assert sum(w.requests for w in runner.gate._idle) == asked
