"""The gate judges what each tool sees (issue 22, item 1).

Two lines: the containment check runs under every tool's predefined macros (and the task's own
macro directives), and the testbench's module names carry a per-run tag a design cannot spell.
The macro sets validators declare are compared with what the installed tools really predefine,
so the declarations cannot drift from the tools unnoticed.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from rtlforge.core.errors import SecurityViolation
from rtlforge.core.models import Candidate, SourceFile
from rtlforge.eda import verdicts
from rtlforge.eda.tools import (
    ICARUS_MACROS,
    VERILATOR_MACROS,
    VERILATOR_TIMING_MACROS,
    YOSYS_MACROS,
    command_line_defines,
)
from rtlforge.plugins.validators.cocotb import CocotbValidator
from rtlforge.plugins.validators.iverilog import IverilogLint, IverilogSim
from rtlforge.plugins.validators.verilator import VerilatorLint, VerilatorSim
from rtlforge.plugins.validators.yosys import YosysSynth
from rtlforge.sandbox.security import check_contained

TB = SourceFile(name="tb.v", content="""`timescale 1ns/1ps
module tb;
  integer errors = 0;
  wire [8:0] sum; reg [7:0] a, b;
  top_module dut(.a(a), .b(b), .sum(sum));
  initial begin #5; $display("Mismatches: %0d in 1 samples", errors); $finish; end
endmodule
""")
HEAD = "module top_module(input [7:0] a, input [7:0] b, output [8:0] sum);\n" \
       "  assign sum = 9'd0;\n"


def _design(body: str) -> list[SourceFile]:
    return [SourceFile(name="design.v", content=HEAD + body + "\nendmodule\n")]


ALL_VIEWS = [ICARUS_MACROS, VERILATOR_TIMING_MACROS, YOSYS_MACROS]

HIDDEN = {
    "icarus": "`ifdef __ICARUS__\n  initial #1 force tb.errors = 0;\n`endif",
    "verilator": "`ifdef verilator3\n  initial #1 force tb.errors = 0;\n`endif",
    "not_yosys": "`ifndef YOSYS\n  initial #1 force tb.errors = 0;\n`endif",
    "elsif": "`ifdef NOPE\n  wire w;\n`elsif VERILATOR_TIMING\n  initial #1 force tb.errors = 0;"
             "\n`else\n  wire v;\n`endif",
    "macro_path": "integer mine;\n`ifdef __ICARUS__\n `define T tb.errors\n`else\n `define T mine"
                  "\n`endif\n  initial #1 force `T = 0;",
}


@pytest.mark.parametrize("name", sorted(HIDDEN))
def test_a_reference_in_one_tools_branch_is_refused_under_that_tools_macros(name: str) -> None:
    design = _design(HIDDEN[name])
    if not name.startswith("not_"):  # slang's own view (no macros) sees nothing wrong
        check_contained(design, [TB], predefines=[()])
    with pytest.raises(SecurityViolation, match="refers to 'tb'"):
        check_contained(design, [TB], predefines=ALL_VIEWS)


def test_a_macro_the_testbench_defines_selects_the_designs_branch() -> None:
    tb = SourceFile(name="tb.v", content="`define SELF_CHECK\n" + TB.content)
    design = _design("`ifdef SELF_CHECK\n  initial #1 force tb.errors = 0;\n`endif")
    check_contained(design, [TB], predefines=ALL_VIEWS)  # undefined without the testbench's
    with pytest.raises(SecurityViolation, match="refers to 'tb'"):
        check_contained(design, [tb], predefines=ALL_VIEWS)


def test_a_macro_one_design_file_defines_reaches_the_next() -> None:
    first = SourceFile(name="a.v", content="`define ARMED\n")
    second = _design("`ifdef ARMED\n  initial #1 force tb.errors = 0;\n`endif")
    with pytest.raises(SecurityViolation, match="refers to 'tb'"):
        check_contained([first, *second], [TB], predefines=ALL_VIEWS)


def test_an_inert_branch_and_an_honest_design_pass_under_every_view() -> None:
    check_contained(_design("`ifdef COCOTB_SIM\n  initial #1 force tb.errors = 0;\n`endif"),
                    [TB], predefines=ALL_VIEWS)
    check_contained(_design("`ifdef __ICARUS__\n  wire [8:0] s = a + b;\n`endif"), [TB],
                    predefines=ALL_VIEWS)


# ------------------------------------------------------------------ declared = what tools do

_PROBE_NAMES = ("__ICARUS__", "VERILATOR", "verilator", "verilator3", "VERILATOR_TIMING",
                "SYSTEMVERILOG", "SYNTHESIS", "YOSYS", "COCOTB_SIM", "FORMAL", "SV_COV_START",
                "coverage_block_off")


def _probe(tmp: Path) -> Path:
    lines = ["module probe;"]
    lines += [f"`ifdef {n}\n  wire d_{n.strip('_')};\n`endif" for n in _PROBE_NAMES]
    path = tmp / "probe.v"
    path.write_text("\n".join([*lines, "endmodule", ""]))
    return path


def _names(macros: tuple[str, ...]) -> set[str]:
    return {m.split("=", 1)[0].strip("_") for m in macros if m.split("=", 1)[0] in _PROBE_NAMES}


def _seen(output: str) -> set[str]:
    return set(re.findall(r"\bd_(\w+)", output))


@pytest.mark.tools
def test_declared_macros_are_what_the_tools_predefine(tmp_path: Path) -> None:
    for tool in ("iverilog", "verilator", "yosys"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed")
    probe = _probe(tmp_path)

    def run(*argv: str) -> str:
        return subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=60,
                              check=True).stdout

    assert _seen(run("iverilog", "-g2012", "-E", "-o", "-", str(probe))) == \
        _names(IverilogSim().predefined_macros()) == _names(IverilogLint().predefined_macros())
    assert _seen(run("verilator", "-E", "--timing", str(probe))) == \
        _names(VerilatorSim().predefined_macros()) == _names(VerilatorLint().predefined_macros())
    assert _seen(run("verilator", "-E", str(probe))) == _names(VERILATOR_MACROS)
    assert _seen(run("yosys", "-p", f"read_verilog -sv {probe}; select -list w:d_*")) == \
        _names(YosysSynth().predefined_macros())
    dumped = run("verilator", "-E", "--timing", "--dump-defines", str(probe))
    assert {line.split(" ", 2)[1] for line in dumped.splitlines() if line.startswith("`define")} \
        == {m.split("=", 1)[0] for m in VERILATOR_TIMING_MACROS}


def test_validators_add_the_defines_they_pass() -> None:
    assert command_line_defines(["-DA", "-D", "B=2", "+define+C+D=x", "--timing"]) == \
        ("A=1", "B=2", "C=1", "D=x")
    assert "ARMED=1" in VerilatorSim(extra_args=("-DARMED",)).predefined_macros()
    assert "VERILATOR_TIMING=1" not in VerilatorSim(extra_args=("--no-timing",)).predefined_macros()
    cocotb = CocotbValidator(simulator="icarus", build_args=("-DX=3",))
    assert cocotb.predefined_macros() == (*ICARUS_MACROS, "X=3")
    assert "VERILATOR_TIMING=1" not in CocotbValidator(simulator="verilator").predefined_macros()


# ------------------------------------------------------------------ structural: renamed names


def test_testbench_modules_are_renamed_everywhere_the_testbench_names_them() -> None:
    tb = ("module tb;\n  helper h();\n  top_module dut(.tb_port(x));\n"
          "  initial begin $dumpvars(0, tb); $root.tb.h.v = 1; $display(\"tb %m\"); end\n"
          "  // tb in a comment\nendmodule\nmodule helper; reg v; endmodule\n"
          "module \\esc ; endmodule\n")
    renames = verdicts.testbench_renames([tb], "00ff", keep={"top_module"})
    assert renames == {"tb": "tb__rtlf00ff", "helper": "helper__rtlf00ff",
                       "esc": "esc__rtlf00ff"}
    out = verdicts.rename_testbench(tb, renames)
    assert "module tb__rtlf00ff;" in out and "helper__rtlf00ff h();" in out
    assert "$dumpvars(0, tb__rtlf00ff)" in out and "$root.tb__rtlf00ff.h.v" in out
    assert '"tb %m"' in out and "// tb in a comment" in out and ".tb_port(x)" in out
    assert "top_module dut" in out and "module \\esc__rtlf00ff ;" in out


def test_names_declared_in_the_compilation_unit_scope_are_renamed_and_uses_are_not() -> None:
    # What IEEE 1800 puts in $unit: declarations outside every module. Names only used there
    # (a package's, a support module's parameter in an expression) must keep their spelling.
    tb = ("`define BUMP(x) x = x + 1;\n"
          'import "DPI-C" function int c_add(input int a, b);\n'
          "typedef logic [3:0] nib_t;\n"
          "typedef enum logic [1:0] {IDLE, RUN = 2'd2, STOP} st_t;\n"
          "typedef struct packed { logic lo; logic hi; } pair_t;\n"
          "parameter W = 8;\n"
          "parameter W2 = W + SUPPORT_W, W3 = f(A, B);\n"
          "localparam int unsigned DEPTH = 4;\n"
          "integer unit_errors = 0, count;\n"
          "logic [7:0] mem [0:3], other;\n"
          "function automatic int twice(input int v); int local_v; return 2*v; endfunction\n"
          "virtual class Base; int member; pure virtual function void f();\n"
          "  virtual function void g(); endfunction endclass\n"
          "task report; $display(unit_errors); endtask\n"
          "import pkg::*;\n"
          "pkg::thing_t value;\n"
          "module tb; integer inner; pair_t p; virtual interface bus_if vif;\n"
          "  top_module dut(.a(p.lo)); assert property (@(posedge clk) inner == 0);\n"
          "  initial `BUMP(unit_errors) endmodule\n"
          "integer after_tb;\n")
    renames = verdicts.testbench_renames([tb], "ab", keep={"top_module"})
    assert sorted(renames) == sorted([
        "c_add", "nib_t", "IDLE", "RUN", "STOP", "st_t", "pair_t", "W", "W2", "W3", "DEPTH",
        "unit_errors", "count", "mem", "other", "twice", "Base", "report", "value", "tb",
        "after_tb"])
    out = verdicts.rename_testbench(tb, renames)
    assert "integer unit_errors__rtlfab = 0, count__rtlfab;" in out
    assert "$display(unit_errors__rtlfab)" in out and "`BUMP(unit_errors__rtlfab)" in out
    assert "W__rtlfab + SUPPORT_W" in out and "f(A, B)" in out and "import pkg::*;" in out
    assert "logic lo; logic hi;" in out and "p.lo" in out and "int local_v;" in out
    assert "int member;" in out and "virtual interface bus_if vif;" in out


def test_a_name_the_testbench_also_uses_after_a_dot_is_left_alone() -> None:
    tb = "module tb; stim stim_i(); top_module dut(.stim(x)); endmodule\nmodule stim; endmodule\n"
    assert verdicts.testbench_renames([tb], "ab", keep={"top_module"}) == {"tb": "tb__rtlfab"}


def test_a_renamed_testbench_still_judges_and_the_author_never_sees_the_tag(tmp_path: Path
                                                                           ) -> None:
    pytest.importorskip("pyslang")
    if shutil.which("iverilog") is None or shutil.which("bwrap") is None:
        pytest.skip("iverilog/bwrap not installed")
    from rtlforge.sandbox.runner import SandboxRunner
    from rtlforge.tasks.loader import load_task
    from rtlforge.validate.cache import MemoryCache
    from rtlforge.validate.pipeline import Pipeline

    root = Path(__file__).resolve().parents[2]
    task = load_task(root / "examples" / "tasks" / "add8_carry")
    golden = (root / "examples" / "tasks" / "add8_carry" / "golden.v").read_text()
    with SandboxRunner(unsafe_skip_gate=True) as runner:
        pipeline = Pipeline.build(cache=MemoryCache(0), runner=runner)
        assert pipeline.validate(task, Candidate(files=(
            SourceFile(name="d.v", content=golden),))).passed
        wrong = golden.replace("assign cout = carry[8];", "assign cout = ~carry[8];")
        assert wrong != golden
        forged = wrong.replace("endmodule", "initial #2 force tb.expected = 0;\nendmodule")
        report = pipeline.validate(task, Candidate(files=(SourceFile(name="d.v", content=forged),)))
        assert not report.passed  # with the gate off, the renaming alone stops the forgery
        assert "__rtlf" not in report.model_dump_json()
        # %m prints the per-run path; the author reads the task's names
        chatty = golden.replace("endmodule", "initial $display(\"where: %m\");\nendmodule")
        report = pipeline.validate(task, Candidate(files=(SourceFile(name="d.v", content=chatty),)))
        assert report.passed
        assert "where: tb.dut" in report.stages[-1].log
        assert "__rtlf" not in report.model_dump_json()


@pytest.mark.parametrize("sim", ["icarus", "verilator"])
def test_a_testbench_with_unit_scope_declarations_still_judges_when_renamed(sim: str) -> None:
    # The corpus' $unit-counter testbench: a right adder passes in both simulators, the wrong
    # one that forces the counter no longer compiles (gate off: the rename alone stops it).
    tool = "iverilog" if sim == "icarus" else "verilator"
    if shutil.which(tool) is None or shutil.which("bwrap") is None:
        pytest.skip(f"{tool}/bwrap not installed")
    from rtlforge.core.models import Task, Verdict
    from rtlforge.sandbox.runner import SandboxRunner
    from rtlforge.validate.cache import MemoryCache
    from rtlforge.validate.pipeline import Pipeline

    case = Path(__file__).parent / "attacks" / "corpus" / "c4_unit_scope_counter"
    task = Task(id="unit_counter", spec="8-bit adder", top="top_module",
                testbench=(SourceFile(name="tb.v", content=(case / "tb.v").read_text()),))
    right = ("module top_module(input [7:0] a, input [7:0] b, output [8:0] sum);\n"
             "  assign sum = a + b;\nendmodule\n")
    validator = IverilogSim() if sim == "icarus" else VerilatorSim()
    with SandboxRunner(unsafe_skip_gate=True) as runner:
        pipeline = Pipeline(validators=[validator], cache=MemoryCache(0), runner=runner)
        passed = pipeline.validate(task, Candidate.from_source(right))
        assert passed.passed, passed.summary()
        forged = pipeline.validate(task, Candidate.from_source((case / "design.v").read_text()))
        assert forged.verdict is not Verdict.PASS
        assert "__rtlf" not in forged.model_dump_json()
