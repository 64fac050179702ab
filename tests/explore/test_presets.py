"""The ``paper`` preset of explore: the protocol of the paper's section 5.3, in the Python API
and on the command line, with what a run records about it.

The protocol facts checked here come from the issue (and docs/explore.md): temperature 0.5,
30 trials, 10 iterations, one circuit per iteration, the whole history shown (iteration 10 sees
all 9 earlier circuits, failing ones included) and the ``paper`` template (no "of N").
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import pytest
from click.testing import CliRunner

from rtlforge.cli import cli
from rtlforge.core.hookspecs import Register, hookimpl
from rtlforge.core.interfaces import (
    Generation,
    GenerationRequest,
    Generator,
    PPAEstimator,
    PPAResult,
    SamplingParams,
    Validator,
)
from rtlforge.core.models import Candidate, SourceFile, StageResult, Task, Verdict
from rtlforge.core.plugins import PluginHost
from rtlforge.evaluation.protocol import PAPER
from rtlforge.explore.engine import Explorer, Method
from rtlforge.explore.store import ExploreStore, group_key
from rtlforge.validate.pipeline import Pipeline

ROOT = Path(__file__).resolve().parents[2]
TASKS = ROOT / "examples" / "tasks"
#: iterations whose circuit fails validation (a ``~`` in the source)
FAILING = (3, 6)


def circuit(top: str, k: int) -> str:
    """Iteration k's circuit: PPA (1/k, 1, 1) by its marker; a bug at the FAILING iterations."""
    if k in FAILING:
        return f"module {top}(input a, output y); // iteration {k}\n  assign y = ~a;\nendmodule"
    return (f"module {top}(input a, output y); // iteration {k}\n// ppa {1.0 / k} 1.0 1.0\n"
            "  assign y = a;\nendmodule")


class Scripted(Generator):
    """Answers iteration k with ``circuit(top, k)``; records requests and sampling params."""

    name: ClassVar[str] = "scripted"

    def __init__(self) -> None:
        self.requests: list[GenerationRequest] = []
        self.params: list[SamplingParams] = []

    def generate(self, requests: Sequence[GenerationRequest],
                 params: SamplingParams) -> list[list[Generation]]:
        self.params.append(params)
        self.requests += requests
        return [[Generation(text=circuit(r.task.top, (r.iteration or 0) + 1),  # type: ignore[union-attr]
                            generator=self.name)] * params.n for r in requests]


class MarkerValidator(Validator):
    name: ClassVar[str] = "marker"
    stage: ClassVar[str] = "lint"

    def cache_key(self) -> dict[str, Any]:
        return {"name": self.name}

    def validate(self, ctx: Any) -> StageResult:
        text = "\n".join(f.content for f in ctx.candidate.files)
        return StageResult(name=self.name, verdict=Verdict.FAIL if "~" in text else Verdict.PASS)


class MarkerPPA(PPAEstimator):
    """PPA from a ``// ppa P D A`` comment; anything else (the golden) measures (1, 1, 1)."""

    name: ClassVar[str] = "marker-ppa"

    def estimate(self, candidate: Candidate, top: str, runner: Any, *, clock: str | None = None,
                 period_ns: float | None = None) -> PPAResult:
        found = re.search(r"// ppa (\S+) (\S+) (\S+)", candidate.files[0].content)
        p, d, a = (float(x) for x in found.groups()) if found else (1.0, 1.0, 1.0)
        return PPAResult(area_um2=a, delay_ns=d, power_mw=p, cells=1, liberty="fake")


def buffer_task(tid: str = "buf") -> Task:
    return Task(id=tid, spec=f"Build a buffer `{tid}`.", top=tid,
                golden=(SourceFile(name="golden.v", content=circuit(tid, 1)),))


def assert_full_history(prompt: str, iteration: int) -> None:
    """Iteration ``iteration``'s prompt shows every earlier circuit obtained (the passing ones,
    each with its PPA: Appendix C's "previous circuit i" items), nothing truncated."""
    passed = [k for k in range(1, iteration) if k not in FAILING]
    shown = [int(k) for k in re.findall(r"// iteration (\d+)", prompt)]
    assert shown == passed, shown
    assert prompt.count("### previous circuit ") == len(passed)
    assert f"### previous circuit {len(passed)}\n" in prompt
    assert prompt.count("- PPA: power = ") == len(passed) and "Verification result" not in prompt
    assert not re.search(r"\bof (5|10)\b", prompt)  # no "circuit k of N"


# --------------------------------------------------------------------------------------------
# the Python API
# --------------------------------------------------------------------------------------------


def test_paper_constants_are_the_papers_protocol() -> None:
    assert (PAPER.trials, PAPER.iterations, PAPER.checkpoints) == (30, 10, (1, 5, 10))
    m = PAPER.method
    assert (m.temperature, m.samples, m.history, m.history_limit, m.template) == (
        0.5, 1, "passing-only", None, "paper")  # Appendix C: circuits obtained, with PPA


def test_paper_preset_runs_the_protocol_exactly(tmp_path: Path) -> None:
    gen = Scripted()
    explorer = Explorer([buffer_task()], [Method.from_protocol("paper", gen)], preset="paper",
                        run_dir=tmp_path / "run", pipeline=Pipeline([MarkerValidator()]),
                        estimator=MarkerPPA())
    assert (explorer.trials, explorer.iterations, explorer.checkpoints) == (30, 10, (1, 5, 10))
    result = explorer.run()
    assert result.candidates == 30 * 10
    assert {(p.temperature, p.n) for p in gen.params} == {(0.5, 1)}
    assert len(gen.requests) == 300
    trials = {r.request_id.split("/")[3] for r in gen.requests}  # type: ignore[union-attr]
    assert trials == {f"t{k}" for k in range(1, 31)}
    for request in gen.requests:
        if request.iteration == 9:  # 0-based: the tenth iteration
            assert_full_history(request.prompt, 10)
    protocol = result.summary["protocol"]
    assert protocol["paper_protocol"] is True and protocol["deviations"] == {}
    assert protocol["preset"] == "paper" and protocol["overridden"] == []
    assert protocol["effective"]["methods"]["paper"] == {
        "temperature": 0.5, "samples": 1, "history": "passing-only", "history_limit": None,
        "template": "paper"}
    assert result.summary["run"]["protocol"] == "paper protocol (--preset paper)"
    saved = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert saved["protocol"] == protocol
    union = saved["metrics"]["union_of_first_trials"]
    assert union == {"trials": [1, 5, 10, 15, 20, 25, 30], "iterations": [1, 5, 10]}
    html = (tmp_path / "run" / "report.html").read_text()
    assert "Union of the first N trials (Appendix E.5)" in html and "paper protocol" in html


def test_overrides_win_and_the_run_says_it_is_custom(tmp_path: Path) -> None:
    gen = Scripted()
    method = Method.from_protocol("m", gen, template="pareto", history_limit=4)
    explorer = Explorer([buffer_task()], [method], preset="paper", trials=2, iterations=3,
                        run_dir=tmp_path / "run", pipeline=Pipeline([MarkerValidator()]),
                        estimator=MarkerPPA())
    protocol = explorer.protocol()
    assert protocol["paper_protocol"] is False
    assert protocol["overridden"] == ["iterations", "methods.m.history_limit",
                                      "methods.m.template", "trials"]
    assert protocol["deviations"]["trials"] == {"paper": 30, "run": 2}
    assert method.sampling.temperature == 0.5 and method.history == "passing-only"


def test_without_a_preset_the_record_still_compares_with_the_paper(tmp_path: Path) -> None:
    """Today's API defaults follow the paper where nothing argues against it (temperature 0.5,
    no history limit); trials stay 1, the template `pareto` and the history `all` (failing
    circuits shown with their verdict), each for a reason docs/explore.md gives."""
    explorer = Explorer([buffer_task()], [Method(name="m", generator=Scripted())],
                        run_dir=tmp_path / "run", pipeline=Pipeline([MarkerValidator()]),
                        estimator=MarkerPPA())
    protocol = explorer.protocol()
    assert protocol["preset"] is None and "overridden" not in protocol
    assert sorted(protocol["deviations"]) == ["methods.m.history", "methods.m.template",
                                              "trials"]


# --------------------------------------------------------------------------------------------
# the command line
# --------------------------------------------------------------------------------------------


class _FakesPlugin:
    @hookimpl
    def register_ppa_estimators(self, register: Register) -> None:
        register(MarkerPPA)


@pytest.fixture
def fake_cli(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI with explore's commands, the replay generator, the marker estimator and a
    marker pipeline (no EDA tools needed)."""
    import rtlforge.plugins.generators.replay as gen_replay

    base = PluginHost.default

    def host() -> PluginHost:
        h = base()
        if "replay" not in h.names("generator"):
            h.add_plugin(gen_replay, name="replay")
        if "marker-ppa" not in h.names("ppa_estimator"):
            h.add_plugin(_FakesPlugin(), name="test-fakes")
        return h

    monkeypatch.setattr(PluginHost, "default", staticmethod(host))  # the CLI's host
    monkeypatch.setenv("RTLFORGE_PLUGIN_CACHE", "off")  # no manifest: that host is the CLI's
    monkeypatch.setattr(Pipeline, "build",
                        classmethod(lambda cls, *a, **k: cls([MarkerValidator()])))


def recordings(path: Path, top: str) -> Path:
    path.write_text("".join(json.dumps({"task_id": top, "completion": circuit(top, k),
                                        "iteration": k}) + "\n" for k in range(1, 11)))
    return path


def run_cli(args: list[str]) -> tuple[dict[str, Any], str]:
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout.strip().splitlines()[-1]), result.stderr


def test_cli_dry_run_shows_the_full_paper_protocol(tmp_path: Path, fake_cli: None) -> None:
    out, err = run_cli([
        "explore", "--tasks", str(TASKS), "--task", "mux4", "--generator", "replay",
        "--generator-option", f"path={recordings(tmp_path / 'r.jsonl', 'mux4')}",
        "--preset", "paper", "--run-dir", str(tmp_path / "run"), "--dry-run", "--json"])
    protocol = out["protocol"]
    assert protocol["paper_protocol"] is True and protocol["overridden"] == []
    assert protocol["effective"]["trials"] == 30 and protocol["effective"]["iterations"] == 10
    assert protocol["effective"]["methods"]["replay"] == {
        "temperature": 0.5, "samples": 1, "history": "passing-only", "history_limit": None,
        "template": "paper"}
    assert "## Circuit history\nNo previous circuit." in out["prompts"][0]["prompt"]
    assert "note:" not in err


def test_cli_tiny_paper_run_records_the_protocol_and_the_full_history(
        tmp_path: Path, fake_cli: None) -> None:
    run = tmp_path / "run"
    out, err = run_cli([
        "explore", "--tasks", str(TASKS), "--task", "mux4", "--generator", "replay",
        "--generator-option", f"path={recordings(tmp_path / 'r.jsonl', 'mux4')}",
        "--select", "iteration", "--preset", "paper", "--trials", "2",
        "--ppa-estimator", "marker-ppa", "--no-ast", "--run-dir", str(run), "--json"])
    assert "note: --trials 2 overrides --preset paper (30)" in err
    assert out["candidates"] == 2 * 10 and out["evaluated_groups"] == 20
    protocol = out["protocol"]
    assert protocol["paper_protocol"] is False and protocol["overridden"] == ["trials"]
    assert protocol["deviations"] == {"trials": {"paper": 30, "run": 2}}
    method = protocol["effective"]["methods"]["replay"]
    assert (method["temperature"], method["history"], method["history_limit"]) == (
        0.5, "passing-only", None)
    assert out["run"]["protocol"].startswith("custom (--preset paper)")
    # the prompt iteration 10 was sent: every earlier circuit obtained, with its PPA
    store = ExploreStore.open(run / "archive.sqlite", PluginHost())
    try:
        for trial in (1, 2):
            stored = store.archive.get_meta(
                "explore/generations/" + group_key("replay", "mux4", trial, 10))
            assert stored is not None
            assert_full_history(stored["request"]["prompt"], 10)
    finally:
        store.close()
