"""Goal-guided stimulus: Z3 sequences for the goals random stimulus misses, fed back into the
check (reference-directed on B*, self-directed on B̂), with refusal, budget and replay rules."""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from rtlforge.behave.sim.golden import golden_model, load_task_model
from rtlforge.behave.sim.guided import (
    PAPER_SCORING,
    GuidedConfig,
    guided_check_model,
    guided_check_rtl,
    model_goals_hit,
)
from rtlforge.behave.sim.stimulus import StimulusConfig, generate_stimulus
from rtlforge.behave.sim.task import load_behave_task
from rtlforge.core.models import Candidate, SourceFile
from rtlforge.sandbox.runner import SandboxRunner
from rtlforge.testing.fake_runner import FakeRunner, ScriptedRun

pytest.importorskip("z3")

SMALL = StimulusConfig(sequences=5, transactions=40)

LOCK = Path(__file__).resolve().parents[3] / "examples" / "behave" / "magic_lock"
# 0x1234 arms the lock, 0xBEEF right after opens it: one random 16-bit code in 65536 arms it,
# so random stimulus of a few hundred transactions essentially never opens it.
LOCK_GOLDEN = (LOCK / "golden.py").read_text()
LOCK_RTL = (LOCK / "golden.v").read_text()
LOCK_STUCK = (LOCK / "wrong_stuck.v").read_text()  # never opens: wrong only when armed + 0xBEEF


def _task_with_golden(directory: Path, golden: str):
    shutil.copytree(LOCK, directory, dirs_exist_ok=True)
    (directory / "golden.py").write_text(golden)
    return load_behave_task(directory)


@pytest.fixture(scope="module")
def lock_task():
    return load_behave_task(LOCK)


def _lines(source: str) -> dict[str, int]:
    """Line numbers of the golden's two `if`s, counted from the source text."""
    lines = source.splitlines()
    arm = next(n for n, t in enumerate(lines, 1) if "if code == 0x1234" in t)
    opn = next(n for n, t in enumerate(lines, 1) if "elif self.armed" in t)
    return {"arm": arm, "open": opn}


def test_baseline_misses_the_magic_branches(lock_task) -> None:
    gold = golden_model(lock_task)
    hit, fails, _ = model_goals_hit(lock_task, gold, generate_stimulus(lock_task, SMALL))
    ln = _lines(LOCK_GOLDEN)
    names = {g.name for g in gold.goals() if (g.site, g.outcome) in hit}
    assert f"process:L{ln['arm']}:T" not in names and f"process:L{ln['open']}:T" not in names
    assert f"process:L{ln['arm']}:F" in names and not fails


@pytest.fixture(scope="module")
def runner() -> Iterator[SandboxRunner]:
    with SandboxRunner() as r:
        yield r


def _rtl(text: str) -> Candidate:
    return Candidate(files=(SourceFile(name="lock.v", content=text),))


@pytest.mark.tools
@pytest.mark.requires_tools("iverilog", "vvp")
def test_guided_search_kills_the_mutant_the_baseline_misses(lock_task, runner) -> None:
    out = guided_check_rtl(lock_task, _rtl(LOCK_STUCK), stimulus=SMALL, runner=runner,
                           config=GuidedConfig(budget_s=10.0))
    assert out.baseline.verdict == "pass"  # random stimulus never opens the lock
    assert out.result.verdict == "fail"
    first = out.result.first_failure
    assert first is not None and first.inputs == {"code": 0xBEEF}
    assert first.expected == {"open": True, "armed": True}
    ln = _lines(LOCK_GOLDEN)
    status = {q.goal: (q.status, q.steps) for q in out.search.queries}
    # hand-derived: arming takes one transaction (0x1234), opening two (0x1234, 0xBEEF)
    assert status[f"process:L{ln['arm']}:T"] == ("hit", 1)
    assert status[f"process:L{ln['open']}:T"] == ("hit", 2)
    seqs = {s.goal: [v["code"] for v in s.inputs] for s in out.search.sequences}
    assert seqs[f"process:L{ln['open']}:T"][:2] == [0x1234, 0xBEEF]
    assert seqs[f"process:L{ln['arm']}:T"][0] == 0x1234
    counts = out.by_kind["golden.branch"]
    assert (counts.total, counts.baseline_hit, counts.hit, counts.sequences_added) == (4, 2, 4, 2)
    assert out.goals is not None and out.goals.unresolved == () and len(out.goals.hit) == 4


@pytest.mark.tools
@pytest.mark.requires_tools("iverilog", "vvp")
def test_guided_search_keeps_a_correct_design_passing(lock_task, runner) -> None:
    out = guided_check_rtl(lock_task, _rtl(LOCK_RTL), stimulus=SMALL, runner=runner,
                           config=GuidedConfig(budget_s=10.0))
    assert out.baseline.verdict == out.result.verdict == "pass", out.result.message
    assert len(out.search.sequences) == 2
    # the directed transactions were run: two sequences of 2 and 3 plus tails of 2
    assert out.result.coverage.transactions == out.baseline.coverage.transactions + 3 + 4


# B̂ with a backdoor: 0x0BAD also arms it. B*'s goals never lead there; B̂'s own do.
BACKDOOR = LOCK_GOLDEN.replace("""        if code == 0x1234:
            self.armed = True
""", """        if code == 0x1234:
            self.armed = True
        elif code == 0x0BAD:
            self.armed = True
""")


def test_self_directed_search_finds_a_models_own_wrong_branch(lock_task) -> None:
    model = load_task_model(lock_task, BACKDOOR, name="backdoor")
    out = guided_check_model(lock_task, model, stimulus=SMALL,
                             config=GuidedConfig(budget_s=10.0))
    assert out.baseline.verdict == "pass"
    assert out.result.verdict == "fail"
    first = out.result.first_failure
    assert first is not None and first.expected == {"open": False, "armed": False}
    assert first.observed == {"open": False, "armed": True}  # armed by 0x0BAD a step before
    own = [q for q in out.search.queries if q.source == "artifact"]
    backdoor_line = next(n for n, t in enumerate(BACKDOOR.splitlines(), 1)
                         if "elif code == 0x0BAD" in t)
    assert any(q.goal == f"process:L{backdoor_line}:T" and q.status == "hit" for q in own)
    assert out.by_kind["artifact.branch"].sequences_added >= 1


def test_model_equal_to_the_golden_passes_guided(lock_task) -> None:
    model = load_task_model(lock_task, LOCK_GOLDEN, name="same")
    out = guided_check_model(lock_task, model, stimulus=SMALL,
                             config=GuidedConfig(budget_s=10.0))
    assert out.baseline.verdict == out.result.verdict == "pass"
    assert out.by_kind["golden.branch"].hit == 4
    # B̂'s goals were all hit by the reference-directed sequences: nothing left to solve
    assert not [q for q in out.search.queries if q.source == "artifact"]


DIV_TOML = """
id = "sdiv"
top = "sdiv"
golden = "golden.py"
clock = "clk"
reset = { signal = "rst" }

[[interfaces]]
name = "in"
direction = "input"
protocol = "per_cycle"
endpoints = [{ name = "x", type = "sint8" }]

[[interfaces]]
name = "out"
direction = "output"
protocol = "per_cycle"
endpoints = [{ name = "q", type = "sint8" }]
"""

# signed floor division is outside the Z3 encoding; x == 77 is a goal random stimulus may miss
DIV_GOLDEN = """
from rtlforge.behave.model.dsl import *


class Q(Record):
    q: SInt[8]


class SDiv(Model):
    n: UInt[1]

    def reset(self):
        self.n = 0

    def process(self, x: SInt[8]) -> Q:
        if x == 77:
            return Q(q=0)
        return Q(q=x // 3)
"""


def test_unsupported_model_refuses_and_keeps_the_verdict(tmp_path: Path) -> None:
    (tmp_path / "behave.toml").write_text(DIV_TOML)
    (tmp_path / "golden.py").write_text(DIV_GOLDEN)
    task = load_behave_task(tmp_path)
    wrong = load_task_model(task, DIV_GOLDEN.replace("return Q(q=0)", "return Q(q=1)"),
                            name="wrong")
    stim = StimulusConfig(sequences=1, transactions=10, edge_sweep=False)
    out = guided_check_model(task, wrong, stimulus=stim, config=GuidedConfig(budget_s=10.0))
    assert out.search.solver == "unsupported" and "not supported" in out.search.refused
    assert out.search.sequences == ()
    assert out.result == out.baseline  # the concrete verdict is untouched
    assert all(q.status == "unsupported" for q in out.search.queries)



def test_fail_sites_are_goals(tmp_path: Path) -> None:
    """A golden `fail()` reached by a solver sequence is reported as a hit fail goal."""
    golden = LOCK_GOLDEN.replace("""        else:
            self.armed = False
""", """        elif code == 0xDEAD:
            fail("the spec forbids 0xDEAD")
        else:
            self.armed = False
""")
    task = _task_with_golden(tmp_path, golden)
    model = load_task_model(task, golden, name="same")
    out = guided_check_model(task, model, stimulus=SMALL, config=GuidedConfig(budget_s=10.0))
    line = next(n for n, t in enumerate(golden.splitlines(), 1) if "fail(" in t)
    q = next(q for q in out.search.queries if q.goal == f"fail:L{line}")
    assert q.kind == "fail" and q.status == "hit" and q.steps == 1
    seq = next(s for s in out.search.sequences if s.goal == q.goal)
    assert [v["code"] for v in seq.inputs] == [0xDEAD]
    assert out.by_kind["golden.fail"].hit == 1
    assert out.result.verdict == "pass"  # both models declare the failure


def test_tiny_budget_is_respected(lock_task) -> None:
    model = load_task_model(lock_task, BACKDOOR, name="backdoor")
    start = time.monotonic()
    out = guided_check_model(lock_task, model, stimulus=SMALL,
                             config=GuidedConfig(budget_s=0.001, timeout_ms=250))
    assert time.monotonic() - start < 2.0
    assert out.search.elapsed_s < 0.5
    assert {q.status for q in out.search.queries} <= {"skipped", "timeout"}
    assert out.result == out.baseline and out.result.verdict == "pass"


def test_the_papers_scoring_budget() -> None:
    """BEHAVE Appendix D.2 (as issue 25 quotes it): 1,200 s per artifact, of which up to 600 s
    of goal-guided search. Our default stays fast (2 s of search, no artifact cap)."""
    assert (PAPER_SCORING.artifact_budget_s, PAPER_SCORING.budget_s) == (1200.0, 600.0)
    assert PAPER_SCORING.steps == GuidedConfig().steps == 4  # the paper's bound is not quoted
    assert (GuidedConfig().budget_s, GuidedConfig().artifact_budget_s) == (2.0, None)


def test_a_spent_artifact_budget_is_a_timeout_without_a_run(lock_task) -> None:
    """The artifact's budget bounds every simulation: with none of it left, the check is an
    (unresolved) timeout and no tool runs."""
    fake = FakeRunner()  # any tool run would fail the test (unscripted)
    out = guided_check_rtl(lock_task, _rtl(LOCK_RTL), stimulus=SMALL, runner=fake,
                           config=GuidedConfig(budget_s=1.0, artifact_budget_s=1e-9))
    assert out.result.verdict == "timeout" and fake.calls == []
    assert "scoring budget of 1e-09 s ran out" in out.result.message


def test_a_simulation_gets_at_most_the_artifact_budget_left(lock_task) -> None:
    """A 50 s artifact budget caps each run below its own 120 s timeout; a run that times out
    says which budget it had."""
    slow = FakeRunner({"iverilog": ScriptedRun(), "vvp": ScriptedRun(timed_out=True)})
    out = guided_check_rtl(lock_task, _rtl(LOCK_RTL), stimulus=SMALL, runner=slow,
                           timeout_s=120.0,
                           config=GuidedConfig(budget_s=1.0, artifact_budget_s=50.0))
    assert out.result.verdict == "timeout"
    assert [c.tool for c in slow.calls] == ["iverilog", "vvp"]
    assert all(c.timeout is not None and c.timeout <= 50.0 for c in slow.calls)
    assert "of the artifact's 50 s scoring budget" in out.result.message


def test_searches_on_several_threads_take_turns(lock_task) -> None:
    """Z3's default context is not thread-safe: eight searches at once on threads (a reward's
    worker pool) crashed the interpreter (SIGSEGV) or stopped with "Context mismatch" before
    the searches took turns. Each must now search as it would alone."""
    from concurrent.futures import ThreadPoolExecutor

    models = [load_task_model(lock_task, BACKDOOR, name=f"m{n}") for n in range(8)]
    with ThreadPoolExecutor(max_workers=8) as pool:
        outs = list(pool.map(lambda m: guided_check_model(
            lock_task, m, stimulus=SMALL, config=GuidedConfig(budget_s=60.0)), models))
    assert {o.search.solver for o in outs} == {"z3"}
    assert {o.result.verdict for o in outs} == {"fail"}  # every search found the backdoor


def test_zero_budget_turns_the_search_off(lock_task) -> None:
    model = load_task_model(lock_task, BACKDOOR, name="backdoor")
    out = guided_check_model(lock_task, model, stimulus=SMALL, config=GuidedConfig(budget_s=0))
    assert out.search.solver == "off" and out.search.queries == ()
    assert out.result == out.baseline


COMB_TOML = """
id = "magic"
top = "magic"
golden = "golden.py"

[[interfaces]]
name = "in"
direction = "input"
protocol = "combinational"
endpoints = [{ name = "a", type = "uint16" }]

[[interfaces]]
name = "out"
direction = "output"
protocol = "combinational"
endpoints = [{ name = "y", type = "bool" }]
"""

COMB_GOLDEN = """
from rtlforge.behave.model.dsl import *


class Out(Record):
    y: Bool


class Magic(Model):
    def reset(self):
        pass

    def process(self, a: UInt[16]) -> Out:
        if a == 0xC0DE:
            return Out(y=True)
        return Out(y=False)
"""


@pytest.mark.tools
@pytest.mark.requires_tools("iverilog", "vvp")
def test_stateless_task_without_reset_gets_directed_transactions(tmp_path: Path,
                                                                  runner) -> None:
    (tmp_path / "behave.toml").write_text(COMB_TOML)
    (tmp_path / "golden.py").write_text(COMB_GOLDEN)
    task = load_behave_task(tmp_path)
    wrong = Candidate(files=(SourceFile(name="magic.v", content=(
        "module magic(input [15:0] a, output y);\n  assign y = 1'b0;\nendmodule\n")),))
    out = guided_check_rtl(task, wrong, stimulus=SMALL, runner=runner,
                           config=GuidedConfig(budget_s=10.0))
    assert out.baseline.verdict == "pass" and out.result.verdict == "fail"
    assert out.result.first_failure is not None
    assert out.result.first_failure.inputs == {"a": 0xC0DE}


def test_stateful_task_without_reset_refuses(tmp_path: Path) -> None:
    (tmp_path / "behave.toml").write_text(COMB_TOML.replace('"combinational"', '"per_cycle"')
                                          .replace('golden = "golden.py"',
                                                   'golden = "golden.py"\nclock = "clk"'))
    stateful = COMB_GOLDEN.replace("    def reset(self):\n        pass",
                                   "    n: UInt[1]\n\n    def reset(self):\n        self.n = 0")
    (tmp_path / "golden.py").write_text(stateful)
    task = load_behave_task(tmp_path)
    model = load_task_model(task, stateful, name="same")
    out = guided_check_model(task, model, stimulus=SMALL, config=GuidedConfig(budget_s=10.0))
    assert out.search.solver == "off" and "no reset" in out.search.refused
    assert out.result == out.baseline


def test_an_answer_that_does_not_replay_is_discarded(lock_task, monkeypatch) -> None:
    """The replay is the gate: if the interpreter never reports the goal, no answer counts."""
    from rtlforge.behave.model.interp import Instance

    monkeypatch.setattr(Instance, "hit_goals", lambda self: set())
    model = load_task_model(lock_task, LOCK_GOLDEN, name="same")
    out = guided_check_model(lock_task, model, stimulus=SMALL,
                             config=GuidedConfig(budget_s=10.0))
    statuses = {q.status for q in out.search.queries if q.kind == "branch"}
    assert statuses == {"discarded"} and out.search.sequences == ()
    assert out.result == out.baseline


RV = Path(__file__).resolve().parents[3] / "examples" / "behave" / "rv_accum"


@pytest.mark.tools
@pytest.mark.requires_tools("iverilog", "vvp")
@pytest.mark.parametrize("design", ["golden.v", "slow.v"])
def test_directed_sequences_on_ready_valid_keep_valid_designs_passing(tmp_path: Path, runner,
                                                                     design: str) -> None:
    """A golden with a branch that changes nothing observable (the third input being 0xAB):
    its sequence (three inputs, drained and reset like any sequence) must not upset a design
    with another latency."""
    golden = (RV / "golden.py").read_text().replace(
        "        self.total = self.total + in_data\n",
        "        if self.seen == 2 and in_data == 0xAB:\n"
        "            self.total = self.total + 0xAB\n"
        "        else:\n"
        "            self.total = self.total + in_data\n")
    shutil.copytree(RV, tmp_path, dirs_exist_ok=True)
    (tmp_path / "golden.py").write_text(golden)
    task = load_behave_task(tmp_path)
    out = guided_check_rtl(task, Candidate.from_file(RV / design), runner=runner,
                           stimulus=StimulusConfig(sequences=3, transactions=20),
                           config=GuidedConfig(budget_s=10.0))
    q = next(q for q in out.search.queries if q.goal.endswith(":T") and q.status == "hit")
    assert q.steps == 3  # hand-derived: seen == 2 only before the third input after reset
    assert out.baseline.verdict == out.result.verdict == "pass", out.result.message
    assert out.result.coverage.transactions > out.baseline.coverage.transactions


def test_a_solver_crash_stops_the_search_and_keeps_the_verdict(lock_task, monkeypatch) -> None:
    from rtlforge.behave.model import z3enc

    def boom(*args, **kwargs):
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(z3enc, "encode_step", boom)
    model = load_task_model(lock_task, BACKDOOR, name="backdoor")
    out = guided_check_model(lock_task, model, stimulus=SMALL,
                             config=GuidedConfig(budget_s=10.0))
    assert out.search.solver == "error" and "RecursionError" in out.search.refused
    assert {q.status for q in out.search.queries} == {"error"}
    assert out.result == out.baseline and out.result.verdict == "pass"
