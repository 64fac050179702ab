"""Matching policies, and check_model (the same path for an agent's behaviour model)."""

from __future__ import annotations

from pathlib import Path

from rtlforge.behave.base import Failure
from rtlforge.behave.sim.check import check_model, golden_instance
from rtlforge.behave.sim.match import Expected, Observed, match_outputs
from rtlforge.behave.sim.run import parse_log
from rtlforge.behave.sim.stimulus import StimulusConfig
from rtlforge.behave.sim.task import load_behave_task

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "behave"
SMALL = StimulusConfig(sequences=4, transactions=20)


def _e(n: int, **v: int) -> Expected:
    return Expected(transaction=n, values=v)


def _o(c: int, **v: int) -> Observed:
    return Observed(cycle=c, values=v)


def test_policies() -> None:
    exp = [_e(0, id=1, v=10), _e(1, id=2, v=20), _e(2, id=1, v=11)]
    swapped = [_o(5, id=2, v=20), _o(6, id=1, v=10), _o(7, id=1, v=11)]
    assert not all(p.ok for p in match_outputs(exp, swapped, policy="in_order"))
    assert all(p.ok for p in match_outputs(exp, swapped, policy="by_id", id_field="id"))
    assert all(p.ok for p in match_outputs(exp, swapped, policy="multiset"))
    # same id out of order within the id is still wrong under by_id
    bad = [_o(5, id=1, v=11), _o(6, id=2, v=20), _o(7, id=1, v=10)]
    assert not all(p.ok for p in match_outputs(exp, bad, policy="by_id", id_field="id"))
    extra = match_outputs(exp[:1], [_o(1, id=1, v=10), _o(2, id=9, v=9)], policy="multiset")
    assert [p.expected is None for p in extra] == [False, True]


def test_parse_log() -> None:
    log = parse_log("2 R\n5 A 0 0\n7 O out 1f 6 1\n8 S st x3\n9 V out valid_dropped\n"
                    "junk\n10 E\n")
    assert log.resets == (2,) and log.accepts[0].cycle == 5
    assert log.outputs[0].hex == "1f" and log.outputs[0].first == 6
    assert log.samples["st"][8] == "x3" and log.violations[0].kind == "valid_dropped"
    assert log.ended and log.watchdog is None


class _Wraps9:
    """A behaviour model with the 9-bit accumulator bug."""

    def reset(self) -> None:
        self.total, self.seen = 0, 0

    def process(self, inputs):
        self.total = (self.total + inputs["in_data"]) % 512
        self.seen += 1
        if self.seen < 4:
            return {}
        out, self.total, self.seen = {"out_sum": self.total}, 0, 0
        return out


class _Crashes:
    def reset(self) -> None:
        pass

    def process(self, inputs):
        raise ZeroDivisionError


def test_check_model() -> None:
    task = load_behave_task(EXAMPLES / "rv_accum")
    good = check_model(task, golden_instance(task), stimulus=SMALL)
    assert good.verdict == "pass" and good.mismatches == 0
    assert good.coverage.completed == good.coverage.outputs > 0
    bad = check_model(task, _Wraps9(), stimulus=SMALL)
    assert bad.verdict == "fail" and bad.first_failure is not None
    first = bad.first_failure
    assert first.kind == "value" and first.expected["out_sum"] > 511
    assert first.observed["out_sum"] == first.expected["out_sum"] - 512
    assert check_model(task, _Crashes(), stimulus=SMALL).verdict == "error"


def test_failure_is_compared() -> None:
    task = load_behave_task(EXAMPLES / "add8")

    class Refuses:
        def reset(self) -> None:
            pass

        def process(self, inputs):
            return Failure(reason="no") if inputs["a"] == 0 else {"sum": inputs["a"] + inputs["b"]}

    result = check_model(task, Refuses(), stimulus=SMALL)
    assert result.verdict == "fail" and result.first_failure.kind == "failure"


def test_golden_outside_the_dsl_is_not_executed(tmp_path: Path) -> None:
    # A golden is DSL text, checked and never run: Python outside the DSL is a task error
    # (infra_error for the check, naming the file and line), and nothing of it executes.
    (tmp_path / "golden.py").write_text("import os\nraise SystemExit('executed')\n")
    task = load_behave_task(EXAMPLES / "add8").model_copy(update={"directory": tmp_path})
    result = check_model(task, golden_instance(load_behave_task(EXAMPLES / "add8")),
                         stimulus=SMALL)
    assert result.verdict == "infra_error"
    assert "golden.py:1" in result.message and "import" in result.message
