"""Third-party plugins selected from the CLI by name, with options typed by their models."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import pytest
from click.testing import CliRunner

from rtlforge import hookimpl
from rtlforge.cli import cli
from rtlforge.core.interfaces import Reward, ValidationContext, Validator
from rtlforge.core.models import Feedback, StageResult, Verdict
from rtlforge.core.plugins import PluginHost

ROOT = Path(__file__).resolve().parents[2]
TASKS = ROOT / "examples" / "tasks"
RECORDED = ROOT / "examples" / "explore" / "recorded.jsonl"
GOOD = "module and2(input a, input b, output y);\n  assign y = a & b;\nendmodule\n"


@dataclass(frozen=True)
class LineLimit(Validator):
    """Refuses designs longer than ``max_lines``; runs before lint, so it needs no tool."""

    name: ClassVar[str] = "line-limit"
    order: ClassVar[int] = 50
    max_lines: int = 100

    def validate(self, ctx: ValidationContext) -> StageResult:
        lines = sum(f.content.count("\n") for f in ctx.candidate.files)
        if lines <= self.max_lines:
            return StageResult(name=self.name, verdict=Verdict.PASS)
        return StageResult(name=self.name, verdict=Verdict.FAIL, feedback=(Feedback(
            category="style", message=f"{lines} lines, limit {self.max_lines}",
            stage=self.name),))


class LengthScore(Reward):
    """A reward that is not an RTLReward: no tasks, no pipeline, one option of its own."""

    name: ClassVar[str] = "length-score"

    def __init__(self, scale: float = 1.0) -> None:
        self.scale = scale

    def score(self, prompts: Sequence[str], completions: Sequence[str],
              **columns: Sequence[Any]) -> list[float | None]:
        return [self.scale * len(c) for c in completions]


class ThirdParty:
    @hookimpl
    def register_validators(self, register: Any) -> None:
        register(LineLimit)

    @hookimpl
    def register_rewards(self, register: Any) -> None:
        register(LengthScore)


@pytest.fixture
def host() -> PluginHost:
    """The installed plugins (built-ins) plus the third-party one, as every command sees it."""
    host = PluginHost()
    assert host.add_plugin(ThirdParty(), name="thirdparty")
    return host


def _run(host: PluginHost, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args), obj=host)
    return result.exit_code, result.output


def _design(tmp_path: Path, text: str = GOOD) -> str:
    path = tmp_path / "and2.v"
    path.write_text(text)
    return str(path)


# ------------------------------------------------------------------------------ validate


def test_validate_runs_a_selected_validator_with_its_options(host: PluginHost,
                                                              tmp_path: Path) -> None:
    design = _design(tmp_path)  # 3 lines
    for option in ("max_lines=2", "line-limit.max_lines=2", "max-lines=2"):
        code, out = _run(host, "validate", design, "--validator", "line-limit",
                         "--validator-option", option, "--json")
        data = json.loads(out)
        assert code == 1, out
        assert [s["name"] for s in data["stages"]] == ["security", "line-limit"]
        assert data["feedback"][0]["message"] == "3 lines, limit 2"


def test_validate_unknown_validator_is_a_usage_error_with_a_guess(host: PluginHost,
                                                                  tmp_path: Path) -> None:
    code, out = _run(host, "validate", _design(tmp_path), "--validator", "line-limt")
    assert code == 2
    assert "no validator named 'line-limt' is registered; did you mean 'line-limit'?" in out


@pytest.mark.parametrize(("option", "expected"), [
    ("max_lines=many", "option 'max_lines': Input should be a valid integer"),
    ("max_rows=3", "unknown option 'max_rows' (options: max_lines)"),
    ("other.max_lines=3", "'other' is not selected (selected: line-limit)"),
    ("max_lines", "expected KEY=VALUE"),
])
def test_validate_bad_validator_options_exit_2_naming_them(
        host: PluginHost, tmp_path: Path, option: str, expected: str) -> None:
    code, out = _run(host, "validate", _design(tmp_path), "--validator", "line-limit",
                     "--validator-option", option)
    assert code == 2 and expected in out, out


def test_an_option_without_a_name_is_ambiguous_with_two_validators(host: PluginHost,
                                                                   tmp_path: Path) -> None:
    code, out = _run(host, "validate", _design(tmp_path), "--validator", "line-limit",
                     "--validator", "yosys-synth", "--validator-option", "max_lines=3")
    assert code == 2 and "expected NAME.KEY=VALUE" in out


# ------------------------------------------------------------------------------ eval


def _samples(tmp_path: Path) -> tuple[Path, list[str]]:
    golden = (TASKS / "mux4").glob("golden*.v")
    source = next(iter(sorted(golden))).read_text()
    completions = [f"```verilog\n{source}```\n", "no code here"]
    path = tmp_path / "samples.jsonl"
    path.write_text("".join(json.dumps({"task_id": "mux4", "completion": c}) + "\n"
                            for c in completions))
    return path, completions


@pytest.mark.tools
def test_eval_scores_a_third_party_reward_and_runs_a_selected_validator(
        host: PluginHost, tmp_path: Path) -> None:
    samples, completions = _samples(tmp_path)
    out = tmp_path / "res.jsonl"
    code, text = _run(host, "eval", str(samples), "--tasks", str(TASKS / "mux4"), "--out", str(out),
                      "--validator", "line-limit", "--validator-option", "max_lines=1000",
                      "--reward", "length-score", "--reward-option", "length-score.scale=2",
                      "--reward", "testbench", "--json")
    assert code == 0, text
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert [x["rewards"]["length-score"] for x in lines] == [2.0 * len(c) for c in completions]
    # the built-in testbench reward got this run's tasks and pipeline: 1 passes, no code is 0
    assert [x["rewards"]["testbench"] for x in lines] == [1.0, 0.0]
    assert "line-limit" in [s["name"] for s in lines[0]["stages"]]
    summary = json.loads(text.strip().splitlines()[-1])
    assert summary["rewards"]["length-score"]["scored"] == 2


@pytest.mark.parametrize(("args", "expected"), [
    (["--reward", "length-scor"], "did you mean 'length-score'?"),
    (["--reward", "length-score", "--reward-option", "scale=big"],
     "option 'scale': Input should be a valid number"),
    (["--reward", "testbench", "--reward-option", "nonsense=1"], "unknown option 'nonsense'"),
    (["--validator", "line-limit", "--validator-option", "max_lines=x"],
     "option 'max_lines': Input should be a valid integer"),
    (["--ppa", "--estimator-option", "period_ns=fast"],
     "option 'period_ns': Input should be a valid"),
    (["--estimator", "yosys-stta"], "did you mean 'yosys-sta'?"),
])
def test_eval_checks_plugins_and_options_before_any_work(
        host: PluginHost, tmp_path: Path, args: list[str], expected: str) -> None:
    samples, _ = _samples(tmp_path)
    out = tmp_path / "res.jsonl"
    code, text = _run(host, "eval", str(samples), "--tasks", str(TASKS / "mux4"), "--out", str(out),
                      *args)
    assert code == 2 and expected in text, text
    assert not out.exists()


# ------------------------------------------------------------------------------ explore


def _explore(host: PluginHost, tmp_path: Path, *args: str) -> tuple[int, str]:
    return _run(host, "explore", "--tasks", str(TASKS), "--task", "add8_carry", "--generator",
                "replay", "--generator-option", f"path={RECORDED}", "--iterations", "1",
                "--ppa-estimator", "none", "--no-ast", "--run-dir", str(tmp_path / "r"),
                "--json", *args)


def test_explore_runs_a_selected_validator_with_its_options(host: PluginHost,
                                                            tmp_path: Path) -> None:
    code, out = _explore(host, tmp_path, "--validator", "line-limit", "--validator-option",
                         "max_lines=1")
    assert code == 0, out
    summary = json.loads(out.strip().splitlines()[-1])
    (method,) = summary["methods"].values()
    assert method["verdicts"] == {"fail": method["samples"]} and method["samples"] >= 1
    candidate = json.loads((tmp_path / "r" / "candidates.jsonl").read_text().splitlines()[0])
    assert candidate["feedback"][0]["stage"] == "line-limit"
    assert candidate["message"].endswith("lines, limit 1")


@pytest.mark.parametrize(("args", "expected"), [
    (["--validator", "line-limit", "--validator-option", "max_lines=x"],
     "option 'max_lines': Input should be a valid integer"),
    (["--validator", "line-limt"], "did you mean 'line-limit'?"),
    (["--ppa-estimator", "yosys-sta", "--estimator-option", "persistent=maybe"],
     "option 'persistent': Input should be a valid boolean"),
])
def test_explore_checks_plugin_options_even_on_a_dry_run(
        host: PluginHost, tmp_path: Path, args: list[str], expected: str) -> None:
    code, out = _explore(host, tmp_path, "--dry-run", *args)
    assert code == 2 and expected in out, out
    assert not (tmp_path / "r").exists()
