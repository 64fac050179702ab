"""Mutation operators on hand-written snippets; every expected mutant text is written by hand."""

from __future__ import annotations

from rtlforge.behave.mutate import OPERATORS, mutants, parses, sample_mutants

ADDER = """module m(input [3:0] a, b, output [3:0] y);
  assign y = a + b; // a - b
endmodule
"""

REGISTER = """module r(input clk, input [7:0] d, output reg [7:0] q, output reg f);
  always @(posedge clk) begin
    q <= d;
    f <= d <= 8'h0F;
  end
endmodule
"""

STRINGS = """module s(input a, output y);
  initial $display("a & b");
  assign y = a & 1'b1; /* a & b */
endmodule
"""

BRANCHES = """module c(input s, input a, b, output reg y, output z);
  always @* if (s) y = a; else y = b;
  assign z = s ? a : b;
endmodule
"""


def _by_id(text: str) -> dict[str, str]:
    return {m.id: m.source for m in mutants(text)}


def test_adder_mutants_are_exactly_the_operator_swap_and_the_stuck_outputs() -> None:
    # The dimensions [3:0] are declarations (not logic) and the comment is trivia.
    assert _by_id(ADDER) == {
        "stuck_at_0@2:14": ADDER.replace("y = a + b;", "y = 0;"),
        "stuck_at_1@2:14": ADDER.replace("y = a + b;", "y = ~0;"),
        "op_swap@2:16": ADDER.replace("a + b;", "a - b;"),
    }
    swap = next(m for m in mutants(ADDER) if m.operator == "op_swap")
    assert (swap.line, swap.column, swap.original, swap.replacement) == (2, 16, "+", "-")
    assert swap.description == "+ -> -"


def test_nonblocking_assignment_is_never_turned_into_a_comparison() -> None:
    got = _by_id(REGISTER)
    comparison = "f <= d <= 8'h0F;"
    assert got == {
        "op_swap@4:12": REGISTER.replace(comparison, "f <= d >= 8'h0F;"),
        "cmp_off_by_one@4:12": REGISTER.replace(comparison, "f <= d < 8'h0F;"),
        "const_inc@4:15": REGISTER.replace(comparison, "f <= d <= 8'h10;"),
        # -1 and a flipped bit 0 give the same text: kept once
        "const_dec@4:15": REGISTER.replace(comparison, "f <= d <= 8'h0E;"),
        "const_flip_msb@4:15": REGISTER.replace(comparison, "f <= d <= 8'h8F;"),
    }
    # the two assignment operators (q <= d, f <= ...) stay as they are in every mutant
    for source in got.values():
        assert "    q <= d;\n" in source and "    f <= d " in source


def test_comments_and_strings_are_untouched() -> None:
    got = _by_id(STRINGS)
    assert got == {
        "stuck_at_0@3:14": STRINGS.replace("y = a & 1'b1;", "y = 0;"),
        "stuck_at_1@3:14": STRINGS.replace("y = a & 1'b1;", "y = ~0;"),
        "op_swap@3:16": STRINGS.replace("a & 1'b1;", "a | 1'b1;"),
        "const_inc@3:18": STRINGS.replace("a & 1'b1;", "a & 1'b0;"),  # wraps at 1 bit
    }
    for source in got.values():
        assert '$display("a & b");' in source and "/* a & b */" in source


def test_conditions_branches_and_ternary_arms() -> None:
    got = _by_id(BRANCHES)
    assert got == {
        "cond_invert@2:17": BRANCHES.replace("if (s) y = a;", "if (!(s)) y = a;"),
        "branch_swap@2:20": BRANCHES.replace("y = a; else y = b;", "y = b; else y = a;"),
        "stuck_at_0@3:14": BRANCHES.replace("z = s ? a : b;", "z = 0;"),
        "stuck_at_1@3:14": BRANCHES.replace("z = s ? a : b;", "z = ~0;"),
        "ternary_swap@3:18": BRANCHES.replace("s ? a : b", "s ? b : a"),
    }


def test_unsized_and_sized_constants() -> None:
    text = "module k(input [7:0] a, output [7:0] y);\n  assign y = a + 8'hff + 0;\nendmodule\n"
    consts = {m.id: m.replacement for m in mutants(text) if m.operator.startswith("const")}
    # 8'hff: +1 wraps to 00, -1 is fe (bit 0 flipped too: dropped), bit 7 gives 7f; digit case
    # and count are kept. The unsized 0 has no -1 and no bit width.
    assert consts == {"const_inc@2:18": "8'h00", "const_dec@2:18": "8'hfe",
                      "const_flip_msb@2:18": "8'h7f", "const_inc@2:26": "1"}


def test_mutants_are_deterministic_unique_and_parse() -> None:
    texts = (ADDER, REGISTER, STRINGS, BRANCHES)
    for text in texts:
        first, second = mutants(text), mutants(text)
        assert first == second
        assert len({m.id for m in first}) == len(first)
        assert len({m.digest for m in first}) == len(first)
        for m in first:
            assert m.operator in OPERATORS
            assert m.source == text[:m.start] + m.replacement + text[m.end:]
            assert parses(m.source)


def test_parses_reports_syntax_errors() -> None:
    assert parses("module x(input a, output y);\n  assign y = a;\nendmodule\n")
    assert not parses("module x(input a, output y);\n  assign y = a +;\nendmodule\n")


def test_sample_is_seeded_capped_and_in_source_order() -> None:
    found = mutants(REGISTER + ADDER + BRANCHES)
    one = sample_mutants(found, 6, seed="design")
    assert len(one) == 6
    assert one == sample_mutants(found, 6, seed="design")
    assert [m.start for m in one] == sorted(m.start for m in one)
    assert sample_mutants(found, 100, seed="design") == found


def test_stuck_at_only_drives_outputs_declared_either_way() -> None:
    text = ("module n(a, y, z);\n  input a;\n  output y;\n  output [1:0] z, u;\n  wire w;\n"
            "  assign y = a;\n  assign z[0] = a;\n  assign w = a;\nendmodule\n")
    stuck = {m.id: m.description for m in mutants(text) if m.operator.startswith("stuck")}
    # w is a wire, not an output: it is never tied off
    assert stuck == {
        "stuck_at_0@6:14": "output y stuck at 0",
        "stuck_at_1@6:14": "output y stuck at 1 (all ones)",
        "stuck_at_0@7:17": "output z stuck at 0",
        "stuck_at_1@7:17": "output z stuck at 1 (all ones)",
    }
    ansi = "module p(input a, output y, v);\n  assign v = a;\nendmodule\n"
    assert {m.id for m in mutants(ansi)} == {"stuck_at_0@2:14", "stuck_at_1@2:14"}
