"""Bounded parsing and matching of untrusted text (rtlforge.core.untrusted).

Oracles: Python's own parsers and recursion limit (a document nested past it crashes them), and
RE2's documented syntax (no backreferences or lookaround); timings are ratios or generous
bounds on work a backtracking engine cannot finish in a lifetime.
"""

from __future__ import annotations

import json
import time
import tomllib
from pathlib import Path

import pytest

from rtlforge.core.errors import TaskFormatError, UnboundedRegexError
from rtlforge.core.untrusted import (
    MAX_DEPTH,
    JSONLimitError,
    TOMLLimitError,
    compile_regex,
    load_json,
    load_toml,
    nesting_depth,
)
from rtlforge.tasks.samples import load_samples


def nested(depth: int) -> str:
    return "[" * depth + "1" + "]" * depth


def test_deep_json_is_a_typed_error_where_the_parser_would_crash() -> None:
    with pytest.raises(RecursionError):  # the oracle: Python's parser on its own
        json.loads(nested(100_000))
    with pytest.raises(JSONLimitError, match="deeper than 64") as info:
        load_json(nested(100_000))
    assert isinstance(info.value, json.JSONDecodeError)  # existing handlers keep catching it
    assert load_json(nested(MAX_DEPTH)) == json.loads(nested(MAX_DEPTH))
    with pytest.raises(JSONLimitError):
        load_json(nested(MAX_DEPTH + 1))


def test_brackets_inside_strings_do_not_count() -> None:
    text = json.dumps({"completion": "[" * 500 + "{" * 500, "x": ['\\"[', "]"]})
    assert load_json(text) == json.loads(text)
    assert load_json(text.encode()) == json.loads(text)


def test_size_bound_and_bad_json() -> None:
    with pytest.raises(JSONLimitError, match="over the 10"):
        load_json("[" + "1," * 20 + "1]", max_chars=10)
    with pytest.raises(json.JSONDecodeError):
        load_json('{"a": ')


def test_scan_is_linear_on_unterminated_strings() -> None:
    """A possessive string token: an unterminated string ends the scan instead of being
    retried at every later quote (quadratic). 10x the text may cost ~10x, not ~100x."""
    def seconds(n: int) -> float:
        text = '["' + '\\"' * n + "[" * 70
        start = time.perf_counter()
        with pytest.raises(json.JSONDecodeError):
            load_json(text)
        return time.perf_counter() - start

    seconds(1000)
    small = min(seconds(20_000) for _ in range(3))
    large = min(seconds(200_000) for _ in range(2))
    assert large < 40 * small + 0.05


@pytest.mark.parametrize("text", [
    "a = " + nested(5000),
    "a = " + "{b = " * 3000 + "1" + "}" * 3000,
    "[" + ".".join(["k"] * 200) + "]",
    "a." * 200 + "b = 1",
])
def test_deep_toml_is_a_typed_error(text: str) -> None:
    with pytest.raises(TOMLLimitError, match="deeper than 64") as info:
        load_toml(text)
    assert isinstance(info.value, tomllib.TOMLDecodeError)


def test_ordinary_toml_loads_as_tomllib_does() -> None:
    text = '[a.b]\nc = [[1], [2]]\nd = { e = "[[[[" }\n'
    assert load_toml(text) == tomllib.loads(text)
    assert nesting_depth({"a": [[1]]}) == 3 and nesting_depth(1) == 0


def test_samples_file_with_a_deep_line_is_a_task_format_error(tmp_path: Path) -> None:
    path = tmp_path / "samples.jsonl"
    path.write_text(json.dumps({"task_id": "t", "completion": "x"}) + "\n"
                    + '{"task_id": "t", "completion": "x", "extra": ' + nested(50_000) + "}\n")
    with pytest.raises(TaskFormatError, match=r"samples.jsonl:2: .*deeper than 64"):
        load_samples(path)


def test_task_file_with_deep_metadata_is_a_task_format_error(tmp_path: Path) -> None:
    from rtlforge.tasks.loader import load_task

    (tmp_path / "task.toml").write_text(
        'id = "t"\ntop = "t"\nspec = "s"\n[metadata]\nx = ' + nested(900) + "\n")
    with pytest.raises(TaskFormatError, match="deeper than 64"):
        load_task(tmp_path)


# ------------------------------------------------------------------------------ regexes


def test_catastrophic_pattern_runs_in_linear_time() -> None:
    """``^(a+)+$`` on 'a'*N + '!' takes 2^N steps with backtracking; RE2 is linear."""
    regex = compile_regex(r"^(a+)+$")
    start = time.perf_counter()
    assert regex.search("a" * 100_000 + "!") is None
    assert regex.search("a" * 100) is not None
    assert time.perf_counter() - start < 5.0


@pytest.mark.parametrize("pattern", [r"(a)\1", r"a(?=b)", r"(?<!x)a", r"a\Z", r"(?>a+)", "(",
                                     "a" * 5000])
def test_patterns_re2_cannot_run_are_refused_with_a_reason(pattern: str) -> None:
    with pytest.raises(UnboundedRegexError) as info:
        compile_regex(pattern)
    assert "RE2" in str(info.value) or "limit" in str(info.value)


def test_ignore_case_and_the_usual_task_patterns() -> None:
    assert compile_regex("all ok", ignore_case=True).search("ALL OK") is not None
    assert compile_regex("all ok").search("ALL OK") is None
    rule = compile_regex(r"^Mismatches: 0 in [1-9]\d* samples$")
    assert rule.search("Mismatches: 0 in 50 samples") is not None
    assert rule.search("Mismatches: 0 in 50 samples!") is None


def test_task_with_a_backreference_is_refused_when_it_loads(tmp_path: Path) -> None:
    from rtlforge.tasks.loader import load_task

    (tmp_path / "task.toml").write_text(
        'id = "t"\ntop = "t"\nspec = "s"\n[pass_rule]\nkind = "regex"\n'
        "pass_regex = '^(ok)\\1$'\n")
    with pytest.raises(TaskFormatError, match=r"pass_regex.*linear-time engine \(RE2\)"):
        load_task(tmp_path)
