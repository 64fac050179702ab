"""The verdict's class comes from the tools, not from the design's output (issue 22, item 5).

A design shares the simulator's stdout with the testbench. Whatever it prints there (an Icarus
``sorry:``, a Verilator ``%Error:``, a crash message, a fake summary), a correct design still
passes and a wrong one still fails, on Icarus and Verilator, with the gate on and off. The
wrong-design side is the attack corpus (``c4_print_*``); here the correct design, end to end.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from rtlforge.core.models import Candidate, SourceFile, Task, Verdict
from rtlforge.plugins.validators.iverilog import IverilogLint, IverilogSim
from rtlforge.plugins.validators.verilator import VerilatorLint, VerilatorSim
from rtlforge.sandbox.runner import Limits, SandboxRunner
from rtlforge.testing import skip_unless_tools
from rtlforge.validate.cache import MemoryCache
from rtlforge.validate.pipeline import Pipeline

pytestmark = pytest.mark.tools

TB = (Path(__file__).parents[1] / "sandbox" / "attacks" / "corpus" / "_task" / "tb.v").read_text()
#: Each printed on its own line at time 0, then without newlines when the testbench reports.
LOOKALIKES = (
    "design.v:3: sorry: Streaming concatenation not supported.",
    "sorry: break statements not supported.",
    "design.v:2: error: Unable to bind wire/reg/memory `x'",
    "%%Error: design.v:3:5: Unsupported: streaming",
    "%%Error: Verilog $stop",
    "Segmentation fault (core dumped)",
    "FATAL: tb.v:12: simulation stopped",
    "tb.v:24: $finish called at 50000 (1ps)",
    "VCD warning: $dumpvars: Unsupported argument type",
    "Mismatches: 7 in 50 samples",
    "TIMEOUT",
)


def design(assign: str) -> Candidate:
    shown = "\n".join(f'    $display("{text}");' for text in LOOKALIKES)
    glued = "\n".join(f'    $write("{text}");' for text in LOOKALIKES)
    return Candidate(files=(SourceFile(name="design.v", content=(
        "`timescale 1ns/1ps\n"
        "module top_module(input [7:0] a, input [7:0] b, output [8:0] sum);\n"
        f"  assign sum = {assign};\n  initial begin\n{shown}\n    #50;\n{glued}\n  end\n"
        "endmodule\n")),))


@pytest.fixture(scope="module", params=[False, True], ids=["gate", "no-gate"])
def runner(request: pytest.FixtureRequest) -> Iterator[SandboxRunner]:
    skip_unless_tools("iverilog", "vvp", "verilator")
    with SandboxRunner(Limits(timeout_s=60), unsafe_skip_gate=request.param) as r:
        yield r


@pytest.mark.parametrize("toolchain", ["icarus", "verilator"])
def test_printing_a_tools_words_changes_no_verdict(runner: SandboxRunner, toolchain: str) -> None:
    validators = ([IverilogLint(), IverilogSim()] if toolchain == "icarus"
                  else [VerilatorLint(), VerilatorSim()])
    pipeline = Pipeline(validators, runner=runner, timeout=60, cache=MemoryCache(0))
    task = Task(id="adder", spec="8-bit adder", top="top_module",
                testbench=(SourceFile(name="tb.v", content=TB),), testbench_top="tb")
    good = pipeline.validate(task, design("a + b"))
    assert good.verdict is Verdict.PASS, good.model_dump_json()[:800]
    wrong = pipeline.validate(task, design("9'd0"))
    assert wrong.verdict is Verdict.FAIL, wrong.model_dump_json()[:800]
    said = " ".join(f.message for s in wrong.stages for f in s.feedback)
    assert "in 50 samples" in said and "Mismatches: 7 in" not in said  # the testbench's words
