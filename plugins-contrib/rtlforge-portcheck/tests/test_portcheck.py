"""The portcheck validator in process, tested with the fixtures of rtlforge's pytest plugin.

Copy this file with the package: it shows the two ways to test a validator, on a context built
for it (``validation_context``) and registered in an isolated host (``plugin_host``).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

from rtlforge.core.models import StageResult, Task, Verdict
from rtlforge.core.plugins import PluginHost
from rtlforge.testing import FakeRunner, make_candidate, make_task

# Installed rtlforge loads the plugin through its pytest11 entry point; naming it here as well
# lets these tests run where rtlforge is only on the path.
pytest_plugins = ["rtlforge.testing.pytest_plugin"]

SRC = Path(__file__).resolve().parents[1] / "src"
TASK = make_task("top", task_id="ports", spec="a register",
                 ports=["input clk", "input [7:0] a", "output [3:0] q"])
Check = Callable[..., StageResult]


@pytest.fixture(scope="module")
def portcheck() -> ModuleType:
    """The plugin module from the source next to these tests (the rtlforge repository runs
    them in CI without installing this package)."""
    sys.path.insert(0, str(SRC))
    try:
        return importlib.import_module("rtlforge_portcheck")
    finally:
        sys.path.remove(str(SRC))


@pytest.fixture
def check(portcheck: ModuleType, validation_context: Callable[..., object],
          fake_runner: FakeRunner) -> Check:
    """``check(files, task=TASK)``: PortCheck's result on a candidate made of ``files``."""

    def run(files: dict[str, str], task: Task = TASK) -> StageResult:
        result = portcheck.PortCheck().validate(validation_context(task, make_candidate(files)))
        assert fake_runner.calls == []  # pure Python: pyslang parses, no tool runs
        return result

    return run


@pytest.fixture
def rtlforge_plugins(portcheck: ModuleType) -> list[object]:
    return [("portcheck", portcheck)]


@pytest.mark.parametrize("source", [
    "module top(input clk, input [7:0] a, output reg [3:0] q);\nendmodule\n",
    "module top #(parameter W = 8) (input wire clk, input [W-1:0] a,\n"
    "  output logic [3:0] q);\nendmodule\n",
    "module top(clk, a, q);\n  input clk;\n  input [7:0] a;\n  output [3:0] q;\nendmodule\n",
    "module sub(input x); endmodule\n"
    "module top(input clk, input [7:0] a, output [3:0] q);\n  sub u(.x(clk));\nendmodule\n",
    # A body error is the linter's business: the interface is still right.
    "module top(input clk, input [7:0] a, output [3:0] q);\n  assign q = ;\nendmodule\n",
])
def test_portcheck_passes_matching_ports(check: Check, source: str) -> None:
    result = check({"design.v": source})
    assert result.verdict is Verdict.PASS, result.feedback
    assert result.feedback == ()
    assert result.name == "portcheck"


@pytest.mark.parametrize(("source", "line", "needles"), [
    ("module top(input clk,\n  input [7:0] a);\nendmodule\n", 1, ["missing", "'q'"]),
    ("module top(input clk,\n  input [3:0] a,\n  output [3:0] q);\nendmodule\n", 2,
     ["'a'", "4 bit", "requires 8"]),
    ("module top(input clk,\n  output [7:0] a,\n  output [3:0] q);\nendmodule\n", 2,
     ["'a'", "output", "requires input"]),
    ("module top(input clk, input [7:0] a, output [3:0] q,\n  input extra);\nendmodule\n", 2,
     ["'extra'", "does not declare"]),
])
def test_portcheck_reports_mismatch(check: Check, source: str, line: int,
                                    needles: list[str]) -> None:
    result = check({"design.v": source})
    assert result.verdict is Verdict.FAIL
    (fb,) = result.feedback
    assert fb.category == "port_mismatch"
    assert fb.file == "design.v"
    assert fb.line == line
    assert fb.stage == "portcheck"
    for needle in needles:
        assert needle in fb.message


def test_portcheck_reports_every_mismatch(check: Check) -> None:
    result = check({
        "design.v": "module top(input clk, input [3:0] a, output q, output z);\nendmodule\n",
    })
    assert result.verdict is Verdict.FAIL
    messages = [fb.message for fb in result.feedback]
    assert len(messages) == 3
    assert any("'a'" in m and "requires 8" in m for m in messages)
    assert any("'q'" in m and "requires 4" in m for m in messages)
    assert any("'z'" in m for m in messages)


def test_portcheck_missing_top_module(check: Check) -> None:
    result = check({"design.v": "module other(input x);\nendmodule\n"})
    assert result.verdict is Verdict.FAIL
    (fb,) = result.feedback
    assert fb.category == "port_mismatch"
    assert "'top'" in fb.message


@pytest.mark.parametrize("source", [
    "module top(input clk, input [7:0] a, output [3:0] q;\nendmodule\n",
    "this is not verilog\n",
])
def test_portcheck_unparseable_header_is_an_error(check: Check, source: str) -> None:
    result = check({"design.v": source})
    assert result.verdict is Verdict.ERROR
    (fb,) = result.feedback
    assert fb.category == "syntax"
    assert fb.file == "design.v"
    assert fb.line == 1


def test_portcheck_follows_includes(check: Check) -> None:
    result = check({
        "defs.vh": "`define W 8\n",
        "top.sv": '`include "defs.vh"\nmodule top(input logic clk, input logic [`W-1:0] a,\n'
                  "  output logic [3:0] q);\nendmodule\n",
    })
    assert result.verdict is Verdict.PASS, result.feedback


def test_portcheck_applies_only_to_tasks_with_ports(portcheck: ModuleType) -> None:
    validator = portcheck.PortCheck()
    assert validator.applies(TASK)
    assert not validator.applies(Task(id="no-ports", spec="s", top="top"))
    assert validator.stage == "lint"
    assert validator.tool_names() == ()


def test_portcheck_registers_through_its_hook(portcheck: ModuleType,
                                              plugin_host: PluginHost) -> None:
    assert plugin_host.failures == {}
    assert plugin_host.get("validator", "portcheck") is portcheck.PortCheck
