"""Module names read by the bounded scanner: hand-written Verilog whose answers follow from the
LRM, and the attack corpus's resource attacks."""

from __future__ import annotations

from pathlib import Path

import pytest

from rtlforge.eda import modules
from rtlforge.eda.modules import (
    declared_modules,
    instantiated_modules,
    rename_module,
    scan_modules,
    top_modules,
)

TRICKY = r"""
`define WIDTH 4
// module in_line_comment;
/* module in_block_comment (input a);
   endmodule */
module automatic adder #(parameter N = `WIDTH, parameter M = (2 * N))
  (input [N-1:0] a, b, output [N:0] y);
  assign y = a + b;
endmodule

macromodule wrapper;
  string s = "module in_a_string; endmodule";
  adder #(.N(8)) u_add (.a(8'd1), .b(8'd2), .y());
endmodule

module \weird$name+1 ();
endmodule

`ifdef NEVER_DEFINED
module disabled_branch; endmodule
`endif
"""


def test_declarations_skip_comments_strings_and_disabled_branches() -> None:
    assert declared_modules(TRICKY) == ["adder", "wrapper", "weird$name+1"]


def test_instantiations_and_tops() -> None:
    assert instantiated_modules(TRICKY) == {"adder"}
    assert top_modules([TRICKY]) == ["wrapper", "weird$name+1"]
    # across texts: a module instantiated in another file is not a top
    assert top_modules(["module leaf; endmodule", "module root; leaf l(); endmodule"]) == ["root"]


def test_a_macro_built_declaration_is_not_seen_since_no_macro_is_expanded() -> None:
    """Expanding untrusted macros in the host process is unbounded (see the c5 cases below):
    a declaration only a macro writes is therefore invisible, and cannot be renamed."""
    text = "`define MAKE(n) module n; endmodule\n`MAKE(generated)\nmodule plain; endmodule\n"
    assert declared_modules(text) == ["plain"]
    assert rename_module(text, "generated", "other") is None
    assert rename_module(text, "plain", "other") == text.replace("module plain", "module other")


CORPUS = Path(__file__).resolve().parents[1] / "sandbox" / "attacks" / "corpus"


@pytest.mark.parametrize("case", ["c5_deep_funcmacro_calls", "c5_deep_macro_nesting",
                                  "c5_macro_exponential_used", "c5_macro_defining_macros",
                                  "c5_million_tokens", "c5_deep_parens", "c5_nested_ifdefs"])
def test_resource_attacks_scan_in_the_host_process_without_harm(case: str) -> None:
    """These designs crash pyslang's preprocessor (C stack) or take it past 20 GB when parsed
    in-process; the scanner reads each once, linearly, and still finds the top."""
    (design,) = sorted((CORPUS / case).glob("*.v"))
    scan = scan_modules(design.read_text())
    assert scan.ok and "top_module" in scan.declared


def test_rename_touches_only_the_declaration() -> None:
    text = ("// module adder is described here\nmodule adder(input a, output y);\n"
            "  assign y = a; // adder\nendmodule\nmodule top; adder u(.a(1'b0), .y()); endmodule\n")
    renamed = rename_module(text, "adder", "adder_v2")
    assert renamed == text.replace("module adder(", "module adder_v2(")
    assert rename_module(text, "missing", "x") is None


def test_nested_modules_and_generate_instances() -> None:
    text = """
module outer;
  module inner; endmodule
  generate if (1) begin : g
    leaf #(3) u_leaf ();
  end endgenerate
endmodule
"""
    assert declared_modules(text) == ["outer", "inner"]
    assert "leaf" in instantiated_modules(text)


def test_include_is_never_opened(tmp_path: Path) -> None:
    header = tmp_path / "evil.vh"
    header.write_text("module from_the_disk; endmodule\n")
    text = f'`include "{header}"\nmodule mine; endmodule\n'
    assert declared_modules(text) == ["mine"]


@pytest.mark.parametrize("text", ["", "no verilog at all", "module ;", "module (((((",
                                  "endmodule endmodule", "\x00\xff module"])
def test_broken_text_finds_nothing_and_does_not_raise(text: str) -> None:
    assert declared_modules(text) == []


def test_oversized_text_is_not_parsed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(modules, "MAX_SOURCE_CHARS", 50)
    text = "module big; endmodule" + " " * 100
    scan = scan_modules(text)
    assert not scan.ok and scan.declared == []


def test_parser_failure_is_reported_not_raised(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(text: str) -> None:
        raise RuntimeError("parser crashed")

    monkeypatch.setattr(modules, "_parse", boom)
    scan = scan_modules("module unique_text_for_this_test; endmodule")
    assert not scan.ok and scan.declared == []


def test_scans_are_cached_per_text() -> None:
    text = "module cached_once; endmodule // unique to this test"
    assert scan_modules(text) is scan_modules(text)
