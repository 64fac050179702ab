"""Tests for the static security check on untrusted Verilog (rtlforge.sandbox.security)."""

from __future__ import annotations

import contextlib
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rtlforge.core.errors import SecurityViolation
from rtlforge.core.models import SourceFile
from rtlforge.sandbox.security import check_sources

ATTACKS = Path(__file__).parent / "attacks"
RTLLM = Path(__file__).resolve().parents[3] / "shared" / "benchmarks" / "rtllm"


def _check(src: str, role: str = "design", available: tuple[str, ...] = (),
           name: str = "design.v") -> None:
    check_sources([SourceFile(name=name, content=src)], role=role,  # type: ignore[arg-type]
                  available=available)


# fixture file -> (role, construct, line)
ATTACK_CASES = {
    "system_task.v": ("design", "$system", 6),
    "dpi_system.v": ("design", 'import "DPI-C"', 3),
    "dpi_export.v": ("design", 'export "DPI-C"', 4),
    "verilator_c.v": ("design", "$c", 6),
    "systemc_block.v": ("design", "`systemc_imp_header", 4),
    "verilator_config.v": ("design", "`verilator_config", 5),
    "include_etc_passwd.v": ("design", "`include", 4),
    "include_dotdot.v": ("design", "`include", 2),
    "include_via_macro.v": ("design", "`include", 5),
    "include_in_macro_body.v": ("design", "`include", 2),
    "include_pasted_directive.v": ("design", "`inc", 4),
    "fopen_abs_design.v": ("design", "$fopen", 7),
    "fwrite_abs_testbench.v": ("testbench", "$fopen", 5),
    "fopen_variable_testbench.v": ("testbench", "$fopen", 7),
    "dumpfile_abs.v": ("testbench", "$dumpfile", 6),
    "readmemh_abs.v": ("design", "$readmemh", 5),
    "readmemh_variable_path.v": ("design", "$readmemh", 8),
    "readmemh_macro_path.v": ("design", "$readmemh", 6),
    "readmemh_not_provided.v": ("design", "$readmemh", 5),
    "macro_pasted_system.v": ("design", "$system", 7),
    "dollar_pasted_system.v": ("design", "$system", 7),
    "ifdef_verilator_system.v": ("design", "$system", 5),
}


def test_every_fixture_has_a_case() -> None:
    assert {p.name for p in ATTACKS.glob("*.v")} == set(ATTACK_CASES)


@pytest.mark.parametrize("fixture", sorted(ATTACK_CASES))
def test_attack_is_refused(fixture: str) -> None:
    role, construct, line = ATTACK_CASES[fixture]
    text = (ATTACKS / fixture).read_text()
    with pytest.raises(SecurityViolation) as info:
        check_sources([SourceFile(name=fixture, content=text)], role=role,  # type: ignore[arg-type]
                      available=(fixture, "mem.hex"))
    err = info.value
    assert (err.construct, err.line, err.file) == (construct, line, fixture)
    assert err.source_line == text.splitlines()[line - 1]


def test_attack_in_second_file_reports_that_file() -> None:
    good = SourceFile(name="top.v", content="module top; sub u(); endmodule\n")
    bad = SourceFile(name="sub.v", content="module sub;\ninitial $system(\"ls\");\nendmodule\n")
    with pytest.raises(SecurityViolation) as info:
        check_sources([good, bad], role="design")
    assert (info.value.file, info.value.line) == ("sub.v", 2)


def test_macro_defined_in_included_header_is_expanded() -> None:
    header = SourceFile(name="defs.vh", content="`define RUN(x) $sys``x\n")
    design = SourceFile(name="design.v", content=(
        '`include "defs.vh"\nmodule m;\ninitial `RUN(tem)("ls");\nendmodule\n'))
    with pytest.raises(SecurityViolation) as info:
        check_sources([design, header], role="design", available=("design.v", "defs.vh"))
    assert info.value.file == "design.v"
    assert info.value.construct in ("$sys", "$system")


@pytest.mark.parametrize("src, construct", [
    ("`define D $\nmodule m; initial `D``system(\"ls\"); endmodule\n", "$"),
    ('`define I(x) `x "/etc/passwd"\nmodule m; endmodule\n', "`x"),
    ('`define K(p) `include p\nmodule m; endmodule\n', "`include"),
    ('`include <secret.vh>\nmodule m; endmodule\n', "`include"),
    ("`uselib file=/etc/passwd\nmodule m; endmodule\n", "`uselib"),
    ("module m; initial $fopenw(\"x\"); endmodule\n", "$fopenw"),
    ("module m; integer i; initial i = $stacktrace; endmodule\n", "$stacktrace"),
    ("module m;\0 initial $display(1); endmodule\n", "NUL"),
])
def test_other_constructs_are_refused(src: str, construct: str) -> None:
    with pytest.raises(SecurityViolation) as info:
        _check(src)
    assert info.value.construct == construct


def test_macro_bomb_is_refused_quickly() -> None:
    lines = ["`define A0 x"] + [f"`define A{i} `A{i - 1} `A{i - 1}" for i in range(1, 40)]
    src = "\n".join([*lines, "module m; wire `A39; endmodule", ""])
    start = time.perf_counter()
    with pytest.raises(SecurityViolation) as info:
        _check(src)
    # expanding 2**39 copies never finishes; refusing takes milliseconds (10 s: a loaded box)
    assert time.perf_counter() - start < 10.0
    assert info.value.construct == "`A39"


# ------------------------------------------------------------------------------------ benign

FSM = """\
// Moore FSM with a typedef enum, always_ff and a case statement.
module seq_detect (input logic clk, rst_n, din, output logic found);
  typedef enum logic [1:0] {IDLE, S1, S10, S101} state_t;
  state_t state, next;
  always_ff @(posedge clk or negedge rst_n)
    if (!rst_n) state <= IDLE; else state <= next;
  always_comb begin
    next = state;
    unique case (state)
      IDLE: next = din ? S1 : IDLE;
      S1: next = din ? S1 : S10;
      S10: next = din ? S101 : IDLE;
      S101: next = din ? S1 : S10;
    endcase
  end
  assign found = (state == S101);
  initial $display("fsm %m ready at %0t", $time);
endmodule
"""

MEMORY = """\
`timescale 1ns/1ps
`define WIDTH 8
module rom #(parameter int DEPTH = 16, parameter string INIT = "rom.hex")
  (input wire [$clog2(DEPTH)-1:0] addr, output wire [`WIDTH-1:0] data);
  reg [`WIDTH-1:0] mem [0:DEPTH-1];
  assign data = mem[addr];
  initial $readmemh("rom.hex", mem);
  initial if ($bits(data) != `WIDTH) $error("width");
endmodule
"""

GENERATE = """\
module adder_tree #(parameter N = 4, W = 8) (input [N*W-1:0] in, output [W+$clog2(N)-1:0] sum);
  genvar i;
  wire [W+$clog2(N)-1:0] partial [0:N];
  assign partial[0] = '0;
  generate for (i = 0; i < N; i = i + 1) begin : g
    assign partial[i+1] = partial[i] + in[i*W +: W];
  end endgenerate
  assign sum = partial[N];
  // $system("rm -rf /") in a comment is harmless
  initial $display("$system(\\"ls\\") in a string is harmless; q[$] %d", $signed(-1));
endmodule
"""

TESTBENCH = """\
`timescale 1ns/1ps
`define TESTFILE "vectors.dat"
module tb;
  reg clk = 0; integer fd, out, i, r; reg [7:0] v; int q[$];
  always #5 clk = ~clk;
  initial begin
    $dumpfile("tb.vcd"); $dumpvars(0, tb);
    fd = $fopen(`TESTFILE, "r");
    out = $fopen("results.txt", "w");
    for (i = 0; i < 4; i = i + 1) begin r = $fscanf(fd, "%h\\n", v); $fdisplay(out, "%h", v); end
    q.push_back(1); if (q[$] != 1) $fatal(1, "queue");
    $fclose(fd); $fclose(out);
    $display("===========Your Design Passed===========");
    $finish;
  end
endmodule
"""


@pytest.mark.parametrize("src, role, available", [
    (FSM, "design", ()),
    (MEMORY, "design", ("rom.hex",)),
    (GENERATE, "design", ()),
    (TESTBENCH, "testbench", ("vectors.dat",)),
    ("module m; wire [3:0] a; assign a = ; endmodule\n", "design", ()),  # syntax error only
    ("", "design", ()),
    ('`include "defs.vh"\nmodule m; endmodule\n', "design", ("defs.vh",)),
])
def test_benign_sources_pass(src: str, role: str, available: tuple[str, ...]) -> None:
    assert _check(src, role=role, available=available) is None


def test_fopen_for_reading_needs_a_provided_file() -> None:
    src = 'module tb; integer f; initial f = $fopen("vectors.dat", "r"); endmodule\n'
    _check(src, role="testbench", available=("vectors.dat",))
    with pytest.raises(SecurityViolation):
        _check(src, role="testbench")


def test_a_long_clean_design_passes_repeatedly() -> None:
    """The check is pure: the same 100+ line design passes every time. How fast it is, is
    measured by benchmarks/validation_throughput.py (gate ms per candidate), not asserted here:
    a timed assertion fails on a loaded machine and proves nothing on an idle one."""
    src = "\n".join([FSM, GENERATE, MEMORY] * 3)
    assert src.count("\n") >= 100
    for _ in range(5):
        _check(src, available=("rom.hex",))


# ------------------------------------------------------------------------------------ fuzzing

_VERILOG_BITS = st.sampled_from([
    "`define", "`include", "`ifdef", "`endif", "``", "`\"", "$", "$display", "$system", "(",
    ")", "[", "]", ",", ";", "\n", "\\\n", "/*", "*/", "//", '"', "module", "endmodule",
    "import", '"DPI-C"', "`X", " ", "x", "$readmemh", '"a.hex"', "{", "}", "\\", "'",
])


def _outcome(src: str) -> None:
    with contextlib.suppress(SecurityViolation):
        _check(src, available=("a.hex",))


@settings(max_examples=150, deadline=500, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=400))
def test_random_text_never_crashes(src: str) -> None:
    _outcome(src)


@settings(max_examples=150, deadline=500, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_VERILOG_BITS, max_size=80))
def test_random_token_soup_never_crashes(parts: list[str]) -> None:
    _outcome(" ".join(parts))


@settings(max_examples=150, deadline=500, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, len(MEMORY)), st.integers(0, 20), st.text(max_size=20))
def test_mutated_module_never_crashes(pos: int, cut: int, insert: str) -> None:
    _outcome(MEMORY[:pos] + insert + MEMORY[pos + cut:])


# ------------------------------------------------------------------------------------ RTLLM


def _rtllm_cases() -> list[tuple[Path, str]]:
    if not RTLLM.is_dir():
        return []
    cases = [(p, "design") for p in RTLLM.rglob("verified_*.v")]
    cases += [(p, "testbench") for p in RTLLM.rglob("testbench.v")]
    return sorted(c for c in cases if not any(part.startswith("_") for part in c[0].parts))


@pytest.mark.shared
@pytest.mark.skipif(not RTLLM.is_dir(), reason=f"RTLLM benchmark not found at {RTLLM}")
def test_rtllm_reference_sources_pass() -> None:
    failures = []
    for path, role in _rtllm_cases():
        available = tuple(p.name for p in path.parent.iterdir() if p.is_file())
        source = SourceFile(name=path.name, content=path.read_text(errors="replace"))
        try:
            check_sources([source], role=role, available=available)  # type: ignore[arg-type]
        except SecurityViolation as exc:
            failures.append(f"{path}: {exc}")
    assert _rtllm_cases()
    assert not failures, "\n".join(failures)


# --------------------------------------------------------------------------------------------
# containment with compiled support files
# --------------------------------------------------------------------------------------------


def test_containment_accepts_a_task_with_a_compiled_support_module() -> None:
    """A .sv support file used to crash slang ("same source manager"), which the gate reported
    as an infrastructure error for every candidate of such a task."""
    from rtlforge.sandbox.security import check_contained

    tb = SourceFile(name="tb.sv", content=(
        "module tb; wire y; helper h(.y(y)); top t(.y(y)); endmodule\n"))
    helper = SourceFile(name="helper.sv",
                        content="module helper(output y); assign y = 1; endmodule\n")

    def design(body: str) -> SourceFile:
        return SourceFile(name="d.sv", content=f"module top(output y); {body} endmodule\n")

    own, uses_support = design("assign y = 1'b1;"), design("helper h(.y(y));")
    reaches_in = design("assign y = tb.y;")
    check_contained([own], [tb], [helper])
    check_contained([uses_support], [tb], [helper])  # support modules are the design's to use
    with pytest.raises(SecurityViolation, match="tb"):
        check_contained([reaches_in], [tb], [helper])
