"""Tool-output parsing: recorded outputs (fast) and the live tools on broken fixtures."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

from rtlforge.core.models import Feedback
from rtlforge.eda.feedback import (
    CATEGORY_HINTS,
    make_feedback,
    parse_iverilog,
    parse_verilator,
    parse_yosys,
    source_context,
)
from rtlforge.sandbox.runner import SandboxRunner
from rtlforge.testing import skip_unless_tools

BROKEN = Path(__file__).parents[1] / "fixtures" / "broken"

Parser = Callable[..., list[Feedback]]


def _cats(items: list[Feedback]) -> set[str]:
    return {fb.category for fb in items}


# ---------------------------------------------------------------- helpers


def test_source_context_marks_line_and_clips_at_edges() -> None:
    text = "\n".join(f"l{i}" for i in range(1, 13))
    ctx = source_context(text, 10)
    assert ctx.splitlines() == ["   8 | l8", "   9 | l9", "> 10 | l10", "  11 | l11",
                                "  12 | l12"]
    assert source_context(text, 1).count("\n") == 2  # lines 1..3
    assert source_context(text, 99) == ""
    assert source_context(text, 0) == ""


def test_make_feedback_context_hint_basename_and_truncation() -> None:
    files = {"design.v": "module m;\nwire x\nendmodule\n"}
    fb = make_feedback("syntax", "x" * 2000, stage="compile", files=files,
                       file="/tmp/run/./design.v", line=2)
    assert fb.file == "design.v" and fb.line == 2
    assert fb.context is not None and "> 2 | wire x" in fb.context
    assert fb.hint == CATEGORY_HINTS["syntax"]
    assert len(fb.message) <= 500 and fb.message.endswith("...")
    assert fb.stage == "compile" and fb.severity == "error"
    unknown = make_feedback("made_up", "m", stage="s", files=files, file="other.v", line=1)
    assert unknown.context is None and unknown.hint == CATEGORY_HINTS["other"]
    assert make_feedback("lint", "m", stage="s", files=files, file="design.v", line=0).line is None


def test_every_category_has_a_hint() -> None:
    for category in ("syntax", "undeclared_identifier", "port_mismatch", "width_mismatch",
                     "multiple_drivers", "latch", "comb_loop", "missing_module", "unsupported",
                     "elaboration", "sim_mismatch", "timeout", "no_verdict", "output_flood",
                     "security", "lint", "other"):
        assert CATEGORY_HINTS[category].endswith(".")


# ---------------------------------------------------------------- recorded tool output

IVERILOG_RECORDED = """\
/tmp/rtlforge-abc/syntax.v:3: syntax error
/tmp/rtlforge-abc/syntax.v:3: error: invalid module item.
./undeclared.v:2: error: Unable to bind wire/reg/memory `bogus_sig' in `top'
./undeclared.v:2: error: Unable to elaborate r-value: (a)&(bogus_sig)
port_name.v:6: error: port ``z'' is not a port of u0.
port_count.v:6: error: Wrong number of ports. Expecting 2, got 3.
missing_module.v:2: error: Unknown module type: no_such_cell
2 error(s) during elaboration.
*** These modules were missing:
        no_such_cell referenced 1 times.
***
md.sv:3: error: y Unable to assign to unresolved wires.
port_width.v:6: warning: Port 1 (a) of child expects 8 bits, got 4.
port_width.v:6:        : Padding 4 high bits of the port.
pw.v:6: warning: implicit definition of wire 'w'.
unsupported.v:6: sorry: break statements not supported.
unsupported_rc0.sv:3: vvp.tgt sorry: Case unique/unique0 qualities are ignored.
Elaboration failed
"""


def test_parse_iverilog_recorded() -> None:
    files = {"syntax.v": "module top(input a, input b, output y);\n  wire t\n  assign t = a & b;\n"}
    items = parse_iverilog(IVERILOG_RECORDED, stage="compile", files=files)
    by_line = [(fb.file, fb.line, fb.category, fb.severity) for fb in items]
    assert ("syntax.v", 3, "syntax", "error") in by_line
    assert ("undeclared.v", 2, "undeclared_identifier", "error") in by_line
    # The follow-up "Unable to elaborate r-value" at the same spot is dropped as redundant.
    assert not any(fb.file == "undeclared.v" and fb.category == "elaboration" for fb in items)
    assert ("port_name.v", 6, "port_mismatch", "error") in by_line
    assert ("port_count.v", 6, "port_mismatch", "error") in by_line
    assert ("missing_module.v", 2, "missing_module", "error") in by_line
    assert ("md.sv", 3, "multiple_drivers", "error") in by_line
    assert ("port_width.v", 6, "width_mismatch", "warning") in by_line
    assert ("pw.v", 6, "undeclared_identifier", "warning") in by_line
    assert ("unsupported.v", 6, "unsupported", "error") in by_line
    # A qualifier Icarus ignores while simulating the design as written: a warning.
    assert ("unsupported_rc0.sv", 3, "unsupported", "warning") in by_line
    # Summaries and the "modules were missing" block add nothing.
    assert sum(fb.category == "missing_module" for fb in items) == 1
    width = next(fb for fb in items if fb.category == "width_mismatch")
    assert "Padding 4 high bits" in width.message  # the note line is folded in
    syntax = next(fb for fb in items if fb.file == "syntax.v")
    assert syntax.context is not None and ">" in syntax.context and syntax.hint


def test_parse_iverilog_ignores_program_output() -> None:
    out = "VCD info: dumpfile x.vcd opened for output.\ntb.v:26: $finish called at 100 (1ps)\n" \
          "===========Your Design Passed===========\n"
    assert parse_iverilog(out, stage="simulate", files={}) == []
    runtime = "WARNING: tb.v:31: $readmemh(ref.txt): Not enough words in the file.\n"
    (item,) = parse_iverilog(runtime, stage="simulate", files={})
    assert item.severity == "warning" and item.file == "tb.v" and item.line == 31


VERILATOR_RECORDED = """\
%Warning-DECLFILENAME: comb_loop.v:1:8: Filename 'comb_loop' does not match MODULE name: 'top'
    1 | module top(input a, output y);
      |        ^~~
                       ... For warning description see https://verilator.org/warn/DECLFILENAME
%Warning-UNOPTFLAT: comb_loop.v:1:28: Signal unoptimizable: Circular combinational logic: 'y'
                    comb_loop.v:3:12:      Example path: ASSIGNW
%Warning-LATCH: latch.v:2:3: Latch inferred for signal 'q' (not all control paths assign)
%Error: missing_module.v:2:3: Cannot find file containing module: 'no_such_cell'
%Warning-MULTIDRIVEN: md.v:1:37: Bits [0:0] of signal 'y' have multiple combinational drivers
%Error-PINNOTFOUND: port_name.v:6:21: Pin not found: 'z'
%Warning-PINMISSING: port_name.v:6:9: Cell has missing pin: 'y'
%Error: syntax.v:3:3: syntax error, unexpected assign, expecting ',' or ';'
%Error: undeclared.v:2:18: Can't find definition of variable: 'bogus_sig'
%Warning-WIDTH: width.v:3:16: Operator ADD expects 8 bits on the RHS, but RHS's VARREF 'b' \
generates 4 bits.
%Warning-WIDTHTRUNC: width.v:4:12: Operator ASSIGNW expects 4 bits on the Assign RHS
%Error-UNSUPPORTED: u.sv:3:5: Unsupported: SystemVerilog 2005 reserved word not implemented
%Error: Exiting due to 4 error(s), 6 warning(s)
"""


def test_parse_verilator_recorded() -> None:
    items = parse_verilator(VERILATOR_RECORDED, stage="lint", files={})
    got = {(fb.file, fb.line, fb.category, fb.severity) for fb in items}
    assert got >= {
        ("comb_loop.v", 1, "lint", "warning"),
        ("comb_loop.v", 1, "comb_loop", "warning"),
        ("latch.v", 2, "latch", "warning"),
        ("missing_module.v", 2, "missing_module", "error"),
        ("md.v", 1, "multiple_drivers", "warning"),
        ("port_name.v", 6, "port_mismatch", "error"),
        ("port_name.v", 6, "port_mismatch", "warning"),
        ("syntax.v", 3, "syntax", "error"),
        ("undeclared.v", 2, "undeclared_identifier", "error"),
        ("width.v", 3, "width_mismatch", "warning"),
        ("width.v", 4, "width_mismatch", "warning"),
        ("u.sv", 3, "unsupported", "error"),
    }
    assert not any("Exiting due to" in fb.message for fb in items)
    assert len(items) == 12  # continuation lines are not findings


YOSYS_RECORDED = """\
3.8. Executing PROC_DLATCH pass (convert process syncs to latches).
Latch inferred for signal `\\top.\\q' from process `\\top.$proc$latch.v:2$1': \
$auto$proc_dlatch.cc:427:proc_dlatch$15
Warning: found logic loop in module top:
    cell $and$comb_loop.v:3$1 ($and)
    cell $not$comb_loop.v:4$2 ($not)
    wire \\x
Warning: multiple conflicting drivers for top.\\q:
    port Q[0] of cell $procdff$3 ($dff)
    port Q[0] of cell $procdff$4 ($dff)
ERROR: Found 2 problems in 'check -assert'.
syntax.v:3: ERROR: syntax error, unexpected TOK_ASSIGN, expecting ',' or '=' or ';' or '['
undeclared.v:2: Warning: Identifier `\\bogus_sig' is implicitly declared.
ERROR: Module `\\no_such_cell' referenced in module `\\top' in cell `\\u0' \
is not part of the design.
ERROR: Module `child' referenced in module `top' in cell `u0' does not have a port named 'z'.
ERROR: Module `child' referenced in module `top' in cell `u0' has only 2 ports, requested port 3.
unsupported.v:0: ERROR: Can't resolve task name `\\break'.
Warnings: 3 unique messages, 3 total
"""


def test_parse_yosys_recorded() -> None:
    files = {"missing_module.v": "module top(input a, output y);\n  no_such_cell u0 (.a(a));\n"
             "endmodule\n"}
    items = parse_yosys(YOSYS_RECORDED, stage="synth", files=files)
    got = [(fb.file, fb.line, fb.category, fb.severity) for fb in items]
    assert ("latch.v", 2, "latch", "warning") in got
    assert ("comb_loop.v", 3, "comb_loop", "warning") in got  # located through the cell name
    assert (None, None, "multiple_drivers", "warning") in got
    assert ("syntax.v", 3, "syntax", "error") in got
    assert ("undeclared.v", 2, "undeclared_identifier", "warning") in got
    # Hierarchy errors carry no position: found by searching the sources we were given.
    assert ("missing_module.v", 2, "missing_module", "error") in got
    assert sum(c == "port_mismatch" for _, _, c, _ in got) == 2
    assert ("unsupported.v", None, "undeclared_identifier", "error") in got  # ":0" is no line
    assert not any("Found 2 problems" in fb.message or "unique messages" in fb.message
                   for fb in items)
    loop = next(fb for fb in items if fb.category == "comb_loop")
    assert "$not$comb_loop.v:4$2" in loop.message  # indented details are kept


def test_parsers_cap_flood() -> None:
    flood = "".join(f"d.v:{i}: error: Unable to bind wire/reg/memory `x{i}' in `t'\n"
                    for i in range(1, 500))
    assert len(parse_iverilog(flood, stage="compile", files={})) == 50


# ---------------------------------------------------------------- live tools on the fixtures

_TOOL_ARGV: dict[str, Callable[[str], list[str]]] = {
    "iverilog": lambda f: ["iverilog", "-Wall", "-g2012", "-o", "out.vvp", f],
    "verilator": lambda f: ["verilator", "--lint-only", "-Wall", "-Wno-DECLFILENAME",
                            "--top-module", "top", f],
    "yosys": lambda f: ["yosys", "-p",
                        f"read_verilog -sv {f}; hierarchy -check -top top; proc; check"],
}
_PARSERS: Mapping[str, Parser] = {
    "iverilog": parse_iverilog, "verilator": parse_verilator, "yosys": parse_yosys,
}

#: (fixture, tool, category the tool's output must be classified as)
LIVE_CASES = [
    ("syntax.v", "iverilog", "syntax"),
    ("syntax.v", "verilator", "syntax"),
    ("syntax.v", "yosys", "syntax"),
    ("undeclared.v", "iverilog", "undeclared_identifier"),
    ("undeclared.v", "verilator", "undeclared_identifier"),
    ("undeclared.v", "yosys", "undeclared_identifier"),
    ("port_name.v", "iverilog", "port_mismatch"),
    ("port_name.v", "verilator", "port_mismatch"),
    ("port_name.v", "yosys", "port_mismatch"),
    ("port_count.v", "iverilog", "port_mismatch"),
    ("port_count.v", "verilator", "port_mismatch"),
    ("port_count.v", "yosys", "port_mismatch"),
    ("port_width.v", "iverilog", "width_mismatch"),
    ("width.v", "verilator", "width_mismatch"),
    ("multidriven.v", "yosys", "multiple_drivers"),
    ("multidriven_assign.v", "verilator", "multiple_drivers"),
    ("multidriven_assign.v", "yosys", "multiple_drivers"),
    ("latch.v", "verilator", "latch"),
    ("latch.v", "yosys", "latch"),
    ("comb_loop.v", "verilator", "comb_loop"),
    ("comb_loop.v", "yosys", "comb_loop"),
    ("missing_module.v", "iverilog", "missing_module"),
    ("missing_module.v", "verilator", "missing_module"),
    ("missing_module.v", "yosys", "missing_module"),
    ("unsupported.v", "iverilog", "unsupported"),
    ("unsupported_rc0.sv", "iverilog", "unsupported"),
    ("unsupported_verilator.sv", "verilator", "unsupported"),
]


@pytest.mark.tools
@pytest.mark.parametrize(("fixture", "tool", "category"), LIVE_CASES,
                         ids=[f"{f}-{t}" for f, t, _ in LIVE_CASES])
def test_live_tool_output_is_classified(fixture: str, tool: str, category: str) -> None:
    skip_unless_tools(tool)
    source = (BROKEN / fixture).read_text()
    runner = SandboxRunner()
    with runner.workspace() as run_dir:
        (run_dir / fixture).write_text(source)
        run = runner.run(_TOOL_ARGV[tool](fixture), run_dir, timeout=60)
    items = _PARSERS[tool](run.output, stage="check", files={fixture: source})
    matching = [fb for fb in items if fb.category == category]
    assert matching, f"{tool} output not classified as {category}: {run.output}"
    located = [fb for fb in matching if fb.line is not None]
    if located:  # where the tool gives a position, it maps back to the fixture with context
        assert located[0].file == fixture and located[0].context


@pytest.mark.tools
def test_icarus_sorry_with_exit_status_zero() -> None:
    """Icarus 11 accepts this file (exit 0) yet prints sorry: the parse must still flag it
    (as warnings: every exit-0 "sorry" found on Icarus 11 is a benign approximation)."""
    skip_unless_tools("iverilog")
    name = "unsupported_rc0.sv"
    runner = SandboxRunner()
    with runner.workspace() as run_dir:
        (run_dir / name).write_text((BROKEN / name).read_text())
        run = runner.run(["iverilog", "-g2012", "-o", "out.vvp", name], run_dir, timeout=60)
    assert run.returncode == 0
    items = parse_iverilog(run.output, stage="compile", files={})
    assert items and all(fb.category == "unsupported" for fb in items)
