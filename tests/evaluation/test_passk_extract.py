"""pass@k against the binomial definition, and Verilog extraction from model text."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rtlforge.core.errors import ExtractionError
from rtlforge.core.extract import extract_verilog
from rtlforge.evaluation.passk import mean_pass_at_k, pass_at_k


@pytest.mark.parametrize(
    ("n", "c", "k", "expected"),
    [(5, 1, 1, 0.2), (10, 3, 5, 1 - 21 / 252), (10, 0, 1, 0.0), (4, 2, 3, 1.0), (1, 1, 1, 1.0)],
)
def test_pass_at_k_hand_computed(n: int, c: int, k: int, expected: float) -> None:
    assert pass_at_k(n, c, k) == pytest.approx(expected)


@given(st.integers(1, 60).flatmap(
    lambda n: st.tuples(st.just(n), st.integers(0, n), st.integers(1, n))))
def test_pass_at_k_matches_binomial_definition(args: tuple[int, int, int]) -> None:
    n, c, k = args
    exact = 1 - math.comb(n - c, k) / math.comb(n, k)
    assert pass_at_k(n, c, k) == pytest.approx(exact, abs=1e-12)


def test_pass_at_k_rejects_impossible_counts() -> None:
    with pytest.raises(ValueError):
        pass_at_k(3, 4, 1)
    with pytest.raises(ValueError):
        pass_at_k(3, 1, 4)


def test_mean_pass_at_k_skips_k_beyond_samples() -> None:
    result = mean_pass_at_k({"a": (5, 1), "b": (5, 5)}, ks=(1, 5, 10))
    assert result[1] == pytest.approx((0.2 + 1.0) / 2)
    assert result[5] == pytest.approx(1.0)
    assert 10 not in result


MOD = "module m(input a, output y);\n  assign y = a;\nendmodule"


@pytest.mark.parametrize(
    "text",
    [
        MOD,
        f"Sure! Here it is:\n```verilog\n{MOD}\n```\nThis passes a through.",
        f"<think>use an assign; module foo is not needed</think>\n<answer>\n{MOD}\n</answer>",
        f"```\n{MOD}\n```",
        f"```systemverilog\n{MOD}\n```\n```python\nprint('module x endmodule')\n```",
    ],
)
def test_extracts_the_module(text: str) -> None:
    assert extract_verilog(text).strip() == MOD


def test_extracts_every_module_in_order() -> None:
    two = MOD + "\n\nmodule top(input a, output y);\n  m u(.a(a), .y(y));\nendmodule"
    out = extract_verilog(f"```verilog\n{two}\n```")
    assert out.index("module m(") < out.index("module top(")


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("I cannot help with that.", "no Verilog module"),
        ("```verilog\nmodule m(input a, output y);\n  assign y =", "truncated"),
        ("", "no Verilog module"),
    ],
)
def test_extraction_failures_are_typed(text: str, reason: str) -> None:
    with pytest.raises(ExtractionError, match=reason):
        extract_verilog(text)


@given(st.text(max_size=400))
def test_extraction_never_crashes(text: str) -> None:
    try:
        out = extract_verilog(text)
    except ExtractionError:
        return
    assert "endmodule" in out
