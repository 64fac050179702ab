"""Generated testbenches: extraction into a task, the sanity checks, the final-judge rule, and
one real run (Icarus) showing the auto pass rule reads the status lines the template asks for."""

from __future__ import annotations

import pytest

from rtlforge.agents.testbench import (
    GENERATED_FILE,
    ORIGIN_KEY,
    RealTestbenchError,
    TestbenchError,
    check_generated_testbench,
    final_judge,
    generated_testbench_task,
)
from rtlforge.core.errors import ConfigError, DesignError
from rtlforge.core.models import Candidate, Port, SourceFile, Task, Verdict
from rtlforge.plugins.validators.iverilog import IverilogLint, IverilogSim
from rtlforge.testing import requires_tools
from rtlforge.validate.pipeline import Pipeline

PORTS = (Port(name="clk", direction="input"), Port(name="rst", direction="input"),
         Port(name="en", direction="input"), Port(name="q", direction="output", width=4))
TASK = Task(id="cnt4", spec="A 4-bit counter: synchronous active-high reset, counts when en.",
            top="cnt4", ports=PORTS)
COUNTER = """module cnt4(input clk, input rst, input en, output reg [3:0] q);
  always @(posedge clk) if (rst) q <= 4'd0; else if (en) q <= q + 4'd1;
endmodule
"""

# A testbench in the form the template asks for, written for these tests.
GOOD_TB = """`timescale 1ns/1ps
module tb;
  reg clk = 1'b0, rst = 1'b1, en = 1'b0;
  wire [3:0] q;
  reg [3:0] model;
  integer mismatches = 0, samples = 0, i;
  cnt4 dut(.clk(clk), .rst(rst), .en(en), .q(q));
  always #5 clk = ~clk;
  initial begin #5000; $display("TIMEOUT"); $finish; end
  task check(input integer test);
    begin
      samples = samples + 1;
      if (q !== model) begin
        mismatches = mismatches + 1;
        $display("FAIL test=%0d time=%0t: rst=%0d en=%0d gives q=%0d, expected=%0d",
                 test, $time, rst, en, q, model);
      end
    end
  endtask
  always @(posedge clk) model <= rst ? 4'd0 : (en ? model + 4'd1 : model);
  initial begin
    // Scenario 1: reset holds the count at zero
    @(negedge clk); @(negedge clk); check(1);
    // Scenario 2: release reset, count enabled
    rst = 1'b0; en = 1'b1;
    for (i = 0; i < 5; i = i + 1) begin @(negedge clk); check(2); end
    // Scenario 3: hold with en low
    en = 1'b0; @(negedge clk); check(3); @(negedge clk); check(3);
    // Scenario 4: wrap around past 15
    en = 1'b1; for (i = 0; i < 14; i = i + 1) begin @(negedge clk); check(4); end
    // Scenario 5: reset in the middle of counting
    rst = 1'b1; @(negedge clk); check(5); rst = 1'b0; @(negedge clk); check(5);
    $display("Mismatches: %0d in %0d samples", mismatches, samples);
    if (mismatches == 0) $display("TEST PASSED"); else $display("TEST FAILED");
    $finish;
  end
endmodule
"""


def answer(*blocks: str) -> str:
    return "Here is the testbench.\n" + "".join(f"```verilog\n{b}```\n" for b in blocks)


def test_a_generated_testbench_becomes_the_tasks_judge_and_is_marked() -> None:
    task = generated_testbench_task(TASK, answer(GOOD_TB))
    assert task.metadata[ORIGIN_KEY] == "generated"
    assert task.testbench_top == "tb" and task.pass_rule.kind == "auto"
    (bench,) = task.testbench
    assert bench.name == GENERATED_FILE and bench.content.startswith("`timescale 1ns/1ps")
    assert final_judge(task) == "generated"


def test_a_design_written_alongside_is_dropped_keeping_the_timescale() -> None:
    task = generated_testbench_task(TASK, answer(COUNTER + GOOD_TB))
    content = task.testbench[0].content
    assert "module cnt4" not in content and content.startswith("`timescale 1ns/1ps\nmodule tb")


@pytest.mark.parametrize("text", [
    "I cannot write that testbench.",
    answer(COUNTER),
    answer("module helper(input a, output y); assign y = a; endmodule\n"),
])
def test_an_answer_without_a_testbench_is_a_typed_design_error(text: str) -> None:
    with pytest.raises(TestbenchError) as caught:
        generated_testbench_task(TASK, text)
    assert isinstance(caught.value, DesignError)


def test_a_real_testbench_is_never_replaced() -> None:
    real = TASK.model_copy(update={"testbench": (SourceFile(name="tb.v", content=GOOD_TB),)})
    assert final_judge(real) == "real"
    with pytest.raises(RealTestbenchError) as caught:
        generated_testbench_task(real, answer(GOOD_TB))
    assert isinstance(caught.value, ConfigError)
    assert final_judge(TASK) == "generated"  # nothing real to judge it: a generated one must


def test_the_good_testbench_passes_every_check() -> None:
    found = check_generated_testbench(TASK, GOOD_TB)
    assert found.problems == ()
    assert found.ok and found.scenarios == 5 and (found.clock, found.reset) == ("clk", "rst")


@pytest.mark.parametrize(("edit", "problem"), [
    (("always #5 clk", "always #4 clk"), "the clock period is 8 ns"),
    (("always #5 clk = ~clk;", ""), "no clock"),
    (("`timescale 1ns/1ps\n", ""), "no `timescale"),
    (("rst = 1'b1", "rst = 1'b0"), "no reset sequence"),
    (('$display("TEST FAILED")', '$display("done")'), "no status line 'TEST FAILED'"),
    (("Mismatches: %0d in %0d samples", "errors=%0d/%0d"), "no summary line"),
    (("cnt4 dut(", "cnt5 dut("), "does not instantiate `cnt4`"),
])
def test_each_missing_ingredient_is_named(edit: tuple[str, str], problem: str) -> None:
    found = check_generated_testbench(TASK, GOOD_TB.replace(*edit))
    assert not found.ok
    assert any(problem in p for p in found.problems), found.problems


def test_scenarios_are_counted_by_label_or_else_by_check_site() -> None:
    fewer = GOOD_TB.replace("// Scenario 4", "// more").replace("// Scenario 5", "// more")
    found = check_generated_testbench(TASK, fewer)
    assert found.scenarios == 3 and any("only 3 scenario(s)" in p for p in found.problems)
    unlabelled = GOOD_TB.replace("// Scenario", "// Part")
    found = check_generated_testbench(TASK, unlabelled)
    # calls check(1), (2), (3), (3), (4), (5), (5) and the one `if (q !== model)`
    assert found.scenarios == 8 and found.ok
    bare = ("`timescale 1ns/1ps\nmodule tb; reg clk=0, rst=1; always #5 clk=~clk;\n"
            "cnt4 dut(.clk(clk), .rst(rst));\ninitial begin rst = 0; check(1); check(2); "
            '$display("Mismatches: %0d in %0d samples", 0, 2); $display("TEST PASSED"); '
            '$display("TEST FAILED"); $finish; end\nendmodule\n')
    found = check_generated_testbench(TASK, bare)
    assert found.scenarios == 2 and any("only 2 scenario(s)" in p for p in found.problems)


def test_a_renamed_clock_and_active_low_reset_are_followed_through_connections() -> None:
    task = TASK.model_copy(update={"ports": (
        Port(name="clk", direction="input"), Port(name="rst_n", direction="input"),
        Port(name="q", direction="output", width=4))})
    no_second_reset = GOOD_TB.replace("rst = 1'b1; @(negedge clk); check(5);", "")
    tb = (no_second_reset.replace("rst", "tb_rst_n").replace(".tb_rst_n(", ".rst_n(")
          .replace("clk", "tclk").replace(".tclk(", ".clk("))
    found = check_generated_testbench(task, tb)
    assert (found.clock, found.reset) == ("tclk", "tb_rst_n")
    # active low: the tb drives it 1 first, then 0, so it never asserts and then releases
    assert any("drive `tb_rst_n` low" in p for p in found.problems)


@pytest.mark.tools
@requires_tools("iverilog", "vvp")
def test_the_status_lines_are_read_by_the_auto_pass_rule() -> None:
    task = generated_testbench_task(TASK, answer(GOOD_TB))
    pipeline = Pipeline([IverilogLint(), IverilogSim()])
    good = pipeline.validate(task, Candidate.from_source(COUNTER))
    assert good.verdict is Verdict.PASS
    bad = pipeline.validate(task, Candidate.from_source(COUNTER.replace("4'd1", "4'd2")))
    assert bad.verdict is Verdict.FAIL
    checks = [m for s in bad.stages for f in s.feedback for m in f.mismatches]
    assert checks[0].signal == "q" and checks[0].cycle == 2  # test=2: the first counting step
