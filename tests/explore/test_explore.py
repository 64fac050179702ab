"""The explore engine: records, HVC, archive, report, resume after SIGKILL, overlap, CLI."""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import pytest
from click.testing import CliRunner

from rtlforge.cli import cli
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
from rtlforge.explore.engine import (
    ExploreEvent,
    Explorer,
    Method,
    RunSettingsMismatch,
    format_request_id,
    parse_request_id,
)
from rtlforge.explore.store import ExploreStore
from rtlforge.validate.pipeline import Pipeline

ROOT = Path(__file__).resolve().parents[2]
TASKS = ROOT / "examples" / "tasks"
RECORDED = ROOT / "examples" / "explore" / "recorded.jsonl"


# --------------------------------------------------------------------------------------------
# fakes: a scripted generator, a validator and an estimator that read markers in the source
# --------------------------------------------------------------------------------------------


def design(top: str, ppa: tuple[float, float, float] | None = None, bug: bool = False) -> str:
    mark = f" // ppa {ppa[0]} {ppa[1]} {ppa[2]}" if ppa else ""
    return f"module {top}(input a, output y);{mark}\n  assign y = {'~' if bug else ''}a;\nendmodule"


class ScriptedGenerator(Generator):
    """Answers iteration k of a task with ``script[task][k - 1]`` (a list of completions)."""

    name: ClassVar[str] = "scripted"

    def __init__(self, script: dict[str, list[list[str]]], delay: float = 0.0) -> None:
        self.script, self.delay = script, delay
        self.calls: list[tuple[float, float, list[str]]] = []
        self.requests: list[GenerationRequest] = []

    def generate(self, requests: Sequence[GenerationRequest],
                 params: SamplingParams) -> list[list[Generation]]:
        start = time.monotonic()
        time.sleep(self.delay)
        out = []
        for req in requests:
            self.requests.append(req)
            assert req.task is not None and req.iteration is not None
            texts = self.script[req.task.id][req.iteration][: params.n]
            out.append([Generation(text=t, generator=self.name) for t in texts])
        self.calls.append((start, time.monotonic(), [r.request_id or "" for r in requests]))
        return out


class MarkerValidator(Validator):
    """Fails a design containing ``~`` (the scripted bug); optionally slow."""

    name: ClassVar[str] = "marker"
    stage: ClassVar[str] = "lint"

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay

    def cache_key(self) -> dict[str, Any]:
        return {"name": self.name}

    def validate(self, ctx: Any) -> StageResult:
        time.sleep(self.delay)
        text = "\n".join(f.content for f in ctx.candidate.files)
        if "~" in text:
            return StageResult(name=self.name, verdict=Verdict.FAIL)
        return StageResult(name=self.name, verdict=Verdict.PASS)


class MarkerPPA(PPAEstimator):
    """PPA from a ``// ppa P D A`` comment; designs without one (the golden) measure (1, 1, 1)."""

    name: ClassVar[str] = "marker-ppa"

    def estimate(self, candidate: Candidate, top: str, runner: Any, *, clock: str | None = None,
                 period_ns: float | None = None) -> PPAResult:
        found = re.search(r"// ppa (\S+) (\S+) (\S+)", candidate.files[0].content)
        p, d, a = (float(x) for x in found.groups()) if found else (1.0, 1.0, 1.0)
        return PPAResult(area_um2=a, delay_ns=d, power_mw=p, cells=1, liberty="fake")


def make_task(tid: str) -> Task:
    return Task(id=tid, spec=f"Build a buffer `{tid}`.", top=tid,
                golden=(SourceFile(name="golden.v", content=design(tid)),))


def build_explorer(run_dir: Path, *, tasks: int = 2, iterations: int = 3, n: int = 2,
                   gen_delay: float = 0.0, val_delay: float = 0.0, **kwargs: Any
                   ) -> tuple[Explorer, ScriptedGenerator]:
    """Iteration k of every task: sample 0 has PPA (1/k, 1, 1); sample 1 is a duplicate of
    iteration 1 (k > 1, dominated) or a bug (k = 1)."""
    ids = [f"t{i}" for i in range(tasks)]
    script = {tid: [[design(tid, (1.0 / k, 1.0, 1.0)),
                     design(tid, bug=True) if k == 1 else design(tid, (1.0, 1.0, 1.0))]
                    for k in range(1, iterations + 1)] for tid in ids}
    gen = ScriptedGenerator(script, delay=gen_delay)
    explorer = Explorer(
        [make_task(t) for t in ids],
        [Method(name="seq", generator=gen, sampling=SamplingParams(n=n),
                history="passing-only")],
        iterations=iterations, run_dir=run_dir,
        **{"pipeline": Pipeline([MarkerValidator(val_delay)]), "estimator": MarkerPPA(),
           **kwargs})
    return explorer, gen


# --------------------------------------------------------------------------------------------
# engine
# --------------------------------------------------------------------------------------------


def test_request_ids_round_trip() -> None:
    rid = format_request_id("m", "a/b", 2, 7)
    assert parse_request_id(rid) == ("m", "a/b", 2, 7)
    assert parse_request_id("other") is None and parse_request_id(None) is None


def test_explorer_records_hvc_archive_and_report(tmp_path: Path) -> None:
    events: list[ExploreEvent] = []
    explorer, gen = build_explorer(tmp_path / "run", on_event=events.append)
    result = explorer.run()
    assert result.candidates == 2 * 3 * 2 and result.evaluated == 6 and result.resumed == 0

    with _store(tmp_path / "run") as store:
        recs = [r.to_json_dict() for r in store.records()]
        front = store.archive.front("t0")
    by = {(r["task"], r["iteration"], r["sample"]): r for r in recs}
    # iteration k: objectives (k, 1, 1), each adding a unit slab; sample 1 is a bug, then a
    # duplicate of iteration 1 (weakly dominated: exactly 0)
    assert by[("t0", 1, 0)]["hvc"] == pytest.approx(1.0)
    assert by[("t0", 1, 1)]["verdict"] == "fail" and by[("t0", 1, 1)]["hvc"] is None
    assert by[("t0", 2, 0)]["hvc"] == pytest.approx(1.0)  # (2,1,1) over (1,1,1)
    assert by[("t0", 2, 1)]["hvc"] == 0.0  # dominated sibling
    assert by[("t0", 3, 0)]["objectives"] == pytest.approx([3.0, 1.0, 1.0], rel=1e-6)
    assert "// ppa 1.0 1.0 1.0" in by[("t0", 1, 0)]["source"]
    assert by[("t0", 1, 1)]["feedback"] == [] and by[("t0", 1, 1)]["report"]["verdict"] == "fail"
    assert len(front) == 1 and front[0].record["iteration"] == 3

    # the prompt of iteration 2 showed iteration 1's passing circuit with its PPA only
    second = next(r for r in gen.requests if r.request_id == format_request_id("seq", "t0", 1, 2))
    assert "### Circuit 1 (iteration 1)" in second.prompt and "~a" not in second.prompt
    assert "PPA: power = 1 mW, delay = 1 ns, area = 1 um^2" in second.prompt
    assert "### Circuit 2" not in second.prompt  # iteration 1's sibling was the bug
    kinds = [e.kind for e in events]
    assert kinds[0] == "start" and kinds[-1] == "finish" and kinds.count("evaluate_end") == 6

    run = tmp_path / "run"
    summary = json.loads((run / "summary.json").read_text())
    assert summary["samples"] == 12 and summary["methods"]["seq"]["passed"] == 10
    assert summary["metrics"]["methods"]["seq"]["rhv"]["3"] == pytest.approx(1.0)
    assert set(summary["checkpoints"]["seq"]) == {"rhv@1"}  # 5 and 10 beyond 3 iterations
    assert summary["progress"]["seq"]["1"]["passed"] == 2
    lines = (run / "records.jsonl").read_text().splitlines()
    assert len(lines) == 12 and json.loads(lines[0])["golden"] == {
        "power": 1.0, "delay": 1.0, "area": 1.0}
    assert len((run / "candidates.jsonl").read_text().splitlines()) == 12
    html = (run / "report.html").read_text()
    assert html.startswith("<!DOCTYPE html>") and "<svg" in html and "Pareto metrics" in html


class _store:
    """ExploreStore as a context manager (closes its connections)."""

    def __init__(self, run: Path) -> None:
        self.store = ExploreStore.open(run / "archive.sqlite", PluginHost())

    def __enter__(self) -> ExploreStore:
        return self.store

    def __exit__(self, *exc: object) -> None:
        self.store.close()


def test_history_policy_all_shows_failures(tmp_path: Path) -> None:
    explorer, gen = build_explorer(tmp_path / "run", tasks=1, iterations=2)
    explorer.methods["seq"] = Method(name="seq", generator=gen, history="all",
                                     sampling=SamplingParams(n=2))
    explorer.run()
    second = next(r for r in gen.requests if r.iteration == 1)
    assert "Result: fail" in second.prompt and "~a" in second.prompt


def test_rerun_of_a_finished_run_evaluates_nothing(tmp_path: Path) -> None:
    explorer, _ = build_explorer(tmp_path / "run", tasks=1, iterations=2)
    explorer.run()
    again, gen = build_explorer(tmp_path / "run", tasks=1, iterations=2)
    result = again.run()
    assert result.evaluated == 0 and result.resumed == 2 and gen.calls == []
    assert result.candidates == 4


def test_dry_run_prints_first_prompts_without_generating(tmp_path: Path) -> None:
    explorer, gen = build_explorer(tmp_path / "run")
    requests = explorer.dry_run()
    assert len(requests) == 2 and gen.calls == []
    assert all("No previous circuit." in r.prompt for r in requests)
    assert not (tmp_path / "run").exists()


def test_generation_overlaps_evaluation(tmp_path: Path) -> None:
    events: list[ExploreEvent] = []
    explorer, gen = build_explorer(tmp_path / "run", tasks=2, iterations=2, n=1, gen_delay=0.2,
                                   val_delay=0.4, batch_size=1, on_event=events.append)
    explorer.run()
    evals: dict[tuple[Any, ...], list[float]] = {}
    for e in events:
        if e.kind in ("evaluate_start", "evaluate_end"):
            evals.setdefault((e.task, e.iteration), []).append(e.time)
    overlapped = [
        (start, key) for start, _, rids in gen.calls for key, (t0, t1) in evals.items()
        if t0 < start < t1 and all(parse_request_id(r)[1] != key[0] for r in rids)  # type: ignore[index]
    ]
    assert overlapped, f"no generation started during another cell's evaluation: {gen.calls}"


def test_failing_generator_stops_the_run_and_resume_finishes(tmp_path: Path) -> None:
    explorer, gen = build_explorer(tmp_path / "run", tasks=1, iterations=3, n=1)
    real = gen.generate
    calls = [0]

    def flaky(requests: Sequence[GenerationRequest], params: SamplingParams
              ) -> list[list[Generation]]:
        calls[0] += 1
        if calls[0] == 2:
            raise RuntimeError("server went away")
        return real(requests, params)

    gen.generate = flaky  # type: ignore[method-assign]
    with pytest.raises(RuntimeError, match="went away"):
        explorer.run()
    again, _ = build_explorer(tmp_path / "run", tasks=1, iterations=3, n=1)
    result = again.run()
    assert result.resumed == 1 and result.evaluated == 2 and result.candidates == 3


class FlakyInfraValidator(MarkerValidator):
    """The marker validator, but its tool is broken (infra_error) while ``broken`` is set."""

    def __init__(self, broken: bool) -> None:
        super().__init__()
        self.broken = broken

    def validate(self, ctx: Any) -> StageResult:
        if self.broken and ctx.candidate.files[0].content.count("1.0 1.0 1.0") == 0:
            return StageResult(name=self.name, verdict=Verdict.INFRA_ERROR)
        return super().validate(ctx)


def test_an_infra_error_is_never_a_final_result_a_rerun_evaluates_it_again(
        tmp_path: Path) -> None:
    """A group hit by a broken tool is not stored and stops its cell; once the tool is fixed,
    rerunning the run directory evaluates that group again (from its stored generations)."""
    def explorer(broken: bool) -> tuple[Explorer, ScriptedGenerator]:
        return build_explorer(tmp_path / "run", tasks=1, iterations=3, n=1,
                              pipeline=Pipeline([FlakyInfraValidator(broken)]))

    first, _ = explorer(broken=True)
    result = first.run()
    assert result.evaluated == 1 and result.candidates == 1  # iteration 1 only
    [(cell, why)] = result.held.items()
    assert cell.startswith("seq/t0/") and why.startswith("iteration 2: sample 0")
    again, gen = explorer(broken=False)
    result = again.run()
    assert result.resumed == 1 and result.evaluated == 2 and result.held == {}
    assert result.candidates == 3
    with _store(tmp_path / "run") as store:
        assert [r.verdict for r in store.records()] == [Verdict.PASS] * 3
    assert [parse_request_id(r)[3] for _, _, rids in gen.calls for r in rids] == [3]  # type: ignore[index]


_RESUME_SCRIPT = """
import sys, pathlib
sys.path.insert(0, {tests!r})
from test_explore import build_explorer
explorer, _ = build_explorer(pathlib.Path({run!r}), tasks=3, iterations=6, n=2,
                             gen_delay=0.05, val_delay=0.03, batch_size=1)
explorer.run()
"""


def _count(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(db, timeout=5) as conn:
            return int(conn.execute("SELECT COUNT(*) FROM entries").fetchone()[0])
    except sqlite3.OperationalError:
        return 0


@pytest.mark.slow
def test_resume_after_sigkill_loses_nothing_and_repeats_nothing(tmp_path: Path) -> None:
    run = tmp_path / "run"
    script = tmp_path / "job.py"
    script.write_text(_RESUME_SCRIPT.format(tests=str(ROOT / "tests" / "explore"), run=str(run)))
    db = run / "archive.sqlite"
    proc = subprocess.Popen([sys.executable, str(script)], cwd=ROOT)
    deadline = time.monotonic() + 60
    while _count(db) < 8 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.02)
    assert proc.poll() is None, "the run finished before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    partial = _count(db)
    assert 0 < partial < 3 * 6 * 2
    subprocess.run([sys.executable, str(script)], cwd=ROOT, check=True, timeout=120)
    with sqlite3.connect(db) as conn:
        rows = [json.loads(r[0])["record"] for r in conn.execute("SELECT entry FROM entries")]
    with _store(run) as store:
        groups = len(store.completed_groups())
    keys = [(r["method"], r["task"], r["trial"], r["iteration"], r["sample"]) for r in rows]
    assert len(keys) == 3 * 6 * 2 == len(set(keys))
    assert groups == 3 * 6
    summary = json.loads((run / "summary.json").read_text())
    assert summary["samples"] == 36


# --------------------------------------------------------------------------------------------
# the bundled demo and the CLI (real tools)
# --------------------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def _plugins(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI sees the replay generator even when the installed entry points predate it
    (an editable install made before it was declared)."""
    import rtlforge.plugins.generators.replay as gen_replay

    base = PluginHost.default

    def host() -> PluginHost:
        h = base()
        if "replay" not in h.names("generator"):
            h.add_plugin(gen_replay, name="replay")
        return h

    monkeypatch.setattr(PluginHost, "default", staticmethod(host))  # the CLI's host
    monkeypatch.setenv("RTLFORGE_PLUGIN_CACHE", "off")  # no manifest: that host is the CLI's


def _json_out(result: Any) -> dict[str, Any]:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_cli_generate_json_contract() -> None:
    runner = CliRunner()
    out = _json_out(runner.invoke(cli, [
        "generate", "--generator", "replay", "--generator-option", f"path={RECORDED}",
        "--task", str(TASKS / "add8_carry"), "-n", "2", "--json"]))
    assert len(out["candidates"]) == 2
    assert all(c["generator"] == "replay" and "module add8_carry" in c["source"]
               for c in out["candidates"])


def test_cli_generate_declines_with_an_empty_list(tmp_path: Path) -> None:
    spec = tmp_path / "prob.txt"
    spec.write_text("Implement the module below.\n\nmodule TopModule(input a, output y);\n")
    out = _json_out(CliRunner().invoke(cli, [
        "generate", "--generator", "replay", "--generator-option", f"path={RECORDED}",
        "--spec", str(spec), "--json"]))
    assert out == {"candidates": []}


def test_cli_explore_dry_run_json(tmp_path: Path) -> None:
    out = _json_out(CliRunner().invoke(cli, [
        "explore", "--tasks", str(TASKS), "--task", "add8_carry", "--generator", "replay",
        "--generator-option", f"path={RECORDED}", "--run-dir", str(tmp_path / "r"),
        "--dry-run", "--json"]))
    assert len(out["prompts"]) == 1 and "No previous circuit." in out["prompts"][0]["prompt"]
    assert "<think>" in out["prompts"][0]["system"] and not (tmp_path / "r").exists()


@pytest.mark.tools
@pytest.mark.slow
def test_cli_explore_demo_json_contract(tmp_path: Path) -> None:
    out = _json_out(CliRunner().invoke(cli, [
        "explore", "--tasks", str(TASKS), "--task", "add8_carry", "--task", "seq_det_1011",
        "--method", "pareto=replay:pareto", "--method", "spec=replay:spec",
        "--generator-option", f"path={RECORDED}", "--select", "method,iteration",
        "--iterations", "4", "--checkpoints", "1,4", "--no-ast",
        "--run-dir", str(tmp_path / "demo"), "--json"]))
    assert out["candidates"] == 16 and out["evaluated_groups"] == 16
    assert set(out["checkpoints"]) == {"pareto", "spec"}
    pareto, spec = out["checkpoints"]["pareto"], out["checkpoints"]["spec"]
    assert pareto["rhv@4"] > spec["rhv@4"] and pareto["rhv@4"] == pytest.approx(1.0)
    assert out["methods"]["pareto"]["verdicts"] == {"error": 1, "pass": 7}
    assert Path(out["files"]["report.html"]).is_file()


def test_recorded_demo_file_is_well_formed() -> None:
    lines = [json.loads(x) for x in RECORDED.read_text().splitlines()]
    keys = {(x["method"], x["task_id"], x["trial"], x["iteration"]) for x in lines}
    assert len(keys) == len(lines) and {x["method"] for x in lines} == {"pareto", "spec"}


def test_event_callback_is_serialised(tmp_path: Path) -> None:
    inside = [0]
    peak = [0]
    lock = threading.Lock()

    def slow(_: ExploreEvent) -> None:
        with lock:
            inside[0] += 1
            peak[0] = max(peak[0], inside[0])
        time.sleep(0.005)
        with lock:
            inside[0] -= 1

    explorer, _ = build_explorer(tmp_path / "run", tasks=3, iterations=2, on_event=slow)
    explorer.run()
    assert peak[0] == 1


@pytest.mark.tools
@pytest.mark.slow
def test_readme_python_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = (ROOT / "README.md").read_text()
    code = text.split("```python\n", 1)[1].split("```", 1)[0]
    assert "Explorer(" in code and text.index("```python") < text.index("## Set-up")
    monkeypatch.chdir(ROOT)
    code = code.replace('"runs/readme"', repr(str(tmp_path / "readme")))
    scope: dict[str, Any] = {}
    exec(compile(code, "README.md", "exec"), scope)
    result = scope["result"]
    assert result.summary["metrics"]["methods"]["pareto"]["rhv"]["4"] == pytest.approx(1.0)
    assert result.paths["report.html"].is_file()


def test_repeated_generator_options_collect_into_a_list() -> None:
    from rtlforge.cmdline import coerce_option_strings, option_pairs
    from rtlforge.core.options import options_model

    class Typed:  # a generator's constructor declares what the text values become
        def __init__(self, *, path: list[str], n: int = 1, flag: bool = False) -> None: ...

    raw = option_pairs(("path=a.jsonl", "path=b", "path=c", "n=2", "flag=true"),
                       "--generator-option")
    opts = coerce_option_strings(options_model(Typed), raw, what="generator")
    assert opts == {"path": ["a.jsonl", "b", "c"], "n": 2, "flag": True}


# --------------------------------------------------------------------------------------------
# reusing a run directory: resume only with the same settings, --extend, --overwrite
# --------------------------------------------------------------------------------------------


def _mismatch(explorer: Explorer) -> str:
    with pytest.raises(RunSettingsMismatch) as info:
        explorer.run()
    return str(info.value)


@pytest.mark.parametrize(("change", "named"), [
    ({"template": "spec"}, "methods.seq.template: \"pareto\" (stored) vs \"spec\" (now)"),
    ({"history": "all"}, "methods.seq.history: \"passing-only\" (stored) vs \"all\" (now)"),
    ({"temperature": 0.9}, "methods.seq.sampling.temperature: 0.5 (stored) vs 0.9 (now)"),
    ({"tasks": 1}, "tasks.t1: "),
    ({"iterations": 2}, "iterations: 3 (stored) vs 2 (now)"),
    ({"iterations": 4}, "iterations: 3 (stored) vs 4 (now)"),
    ({"estimator": None}, "estimator.name: \"marker-ppa\" (stored) vs (absent) (now)"),
    ({"generator_options": {"model": "b"}},
     "methods.seq.generator_options.model: \"a\" (stored) vs \"b\" (now)"),
])
def test_reusing_a_run_dir_with_other_settings_is_refused(
        tmp_path: Path, change: dict[str, Any], named: str) -> None:
    """The stored results were made under the first settings: another setting is refused, and
    the message names it with both values (the run directory is left as it was)."""
    def make(**over: Any) -> Explorer:
        explorer, gen = build_explorer(tmp_path / "run", tasks=over.pop("tasks", 2),
                                       iterations=over.pop("iterations", 3),
                                       **({"estimator": over.pop("estimator")}
                                          if "estimator" in over else {}))
        method = explorer.methods["seq"]
        explorer.methods["seq"] = Method(
            name="seq", generator=gen, template=over.pop("template", "pareto"),
            history=over.pop("history", "passing-only"),
            sampling=SamplingParams(n=2, temperature=over.pop("temperature", 0.5)),
            generator_options=over.pop("generator_options", {"model": "a"}))
        assert method.sampling.n == 2 and not over
        return explorer

    make().run()
    before = (tmp_path / "run" / "summary.json").read_text()
    message = _mismatch(make(**change))
    assert named in message and "--overwrite" in message
    assert (tmp_path / "run" / "summary.json").read_text() == before
    assert make().run().resumed == 6  # the original settings still resume it


def test_extend_adds_iterations_and_trials_and_counts_right(tmp_path: Path) -> None:
    def make(iterations: int, trials: int, **kw: Any) -> tuple[Explorer, ScriptedGenerator]:
        explorer, gen = build_explorer(tmp_path / "run", tasks=1, iterations=iterations,
                                       trials=trials, **kw)
        explorer.methods["seq"] = Method(name="seq", generator=gen, template="paper",
                                         history="passing-only", sampling=SamplingParams(n=2))
        return explorer, gen

    make(2, 1)[0].run()
    grown, _ = make(3, 2)
    message = _mismatch(grown)  # growing needs the explicit --extend
    assert "--extend" in message and "iterations: 2 (stored) vs 3 (now)" in message
    extended, gen = make(3, 2, on_existing="extend")
    result = extended.run()
    # trial 1 had iterations 1-2: one more; trial 2 is new: three
    assert result.resumed == 2 and result.evaluated == 4 and result.candidates == 12
    assert sorted(r.request_id or "" for r in gen.requests) == sorted(
        format_request_id("seq", "t0", t, i) for t, i in ((1, 3), (2, 1), (2, 2), (2, 3)))
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["samples"] == 12
    with _store(tmp_path / "run") as store:
        config = store.config()
    assert config is not None and config["extended"] == [
        {"iterations": {"from": 2, "to": 3}, "trials": {"from": 1, "to": 2}}]
    assert make(3, 2)[0].run().resumed == 6  # extended: a plain resume matches it now
    # extend is no back door: any other change is still refused
    other, gen2 = make(4, 2, on_existing="extend")
    other.methods["seq"] = Method(name="seq", generator=gen2, template="spec",
                                  history="passing-only", sampling=SamplingParams(n=2))
    assert "methods.seq.template" in _mismatch(other)


def test_extend_refuses_more_iterations_when_the_prompt_shows_the_total(tmp_path: Path) -> None:
    """pareto's prompt says "circuit k of N": earlier prompts said another N."""
    build_explorer(tmp_path / "run", tasks=1, iterations=2)[0].run()
    explorer, _ = build_explorer(tmp_path / "run", tasks=1, iterations=3, on_existing="extend")
    assert "shows the iteration count" in _mismatch(explorer)
    more_trials, _ = build_explorer(tmp_path / "run", tasks=1, iterations=2, trials=2,
                                    on_existing="extend")
    assert more_trials.run().evaluated == 2


def test_overwrite_starts_over_and_deletes_only_explore_files(tmp_path: Path) -> None:
    run = tmp_path / "run"
    build_explorer(run, tasks=2, iterations=3)[0].run()
    (run / "notes.txt").write_text("mine")
    explorer, gen = build_explorer(run, tasks=1, iterations=2, on_existing="overwrite")
    result = explorer.run()
    assert result.resumed == 0 and result.evaluated == 2 and result.candidates == 4
    assert len(gen.requests) == 2 and (run / "notes.txt").read_text() == "mine"
    assert json.loads((run / "summary.json").read_text())["samples"] == 4


def test_harmless_settings_do_not_block_a_resume(tmp_path: Path) -> None:
    build_explorer(tmp_path / "run", tasks=1, iterations=2)[0].run()
    again, gen = build_explorer(tmp_path / "run", tasks=1, iterations=2, workers=1,
                                batch_size=1, max_inflight=2, checkpoints=(1, 2),
                                title="other")
    assert again.run().resumed == 2 and gen.calls == []


def test_secret_generator_options_are_stored_as_digests(tmp_path: Path) -> None:
    explorer, gen = build_explorer(tmp_path / "run", tasks=1, iterations=1)
    explorer.methods["seq"] = Method(name="seq", generator=gen, sampling=SamplingParams(n=2),
                                     generator_options={"api_key": "sk-very-secret"})
    explorer.run()
    with _store(tmp_path / "run") as store:
        stored = json.dumps(store.config())
    assert "sk-very-secret" not in stored and "api_key" in stored


@pytest.mark.tools
def test_cli_refuses_a_run_dir_with_swapped_templates(tmp_path: Path) -> None:
    """The issue's case: the methods' templates swapped; exit 2 naming both, then
    --overwrite runs it; --extend with --overwrite is a usage error."""
    base = ["explore", "--tasks", str(TASKS), "--task", "add8_carry",
            "--generator-option", f"path={RECORDED}", "--select", "method,iteration",
            "--iterations", "1", "--ppa-estimator", "none", "--no-ast", "--simulator", "icarus",
            "--run-dir", str(tmp_path / "r"), "--json"]
    with _skip_without_iverilog():
        first = _json_out(CliRunner().invoke(cli, [
            *base, "--method", "pareto=replay:pareto", "--method", "spec=replay:spec"]))
    assert first["evaluated_groups"] == 2
    swapped = [*base, "--method", "pareto=replay:spec", "--method", "spec=replay:pareto"]
    refused = CliRunner().invoke(cli, swapped)
    assert refused.exit_code == 2, refused.output
    assert 'methods.pareto.template: "pareto" (stored) vs "spec" (now)' in refused.output
    assert 'methods.spec.template: "spec" (stored) vs "pareto" (now)' in refused.output
    both = CliRunner().invoke(cli, [*swapped, "--overwrite", "--extend"])
    assert both.exit_code == 2 and "not both" in both.output
    again = _json_out(CliRunner().invoke(cli, [*swapped, "--overwrite"]))
    assert again["resumed_groups"] == 0 and again["evaluated_groups"] == 2


class _skip_without_iverilog:
    def __enter__(self) -> None:
        import shutil

        if shutil.which("iverilog") is None:
            pytest.skip("iverilog not installed")

    def __exit__(self, *exc: object) -> None:
        return None


def test_start_event_of_a_resumed_run_counts_the_passes_it_already_has(tmp_path: Path) -> None:
    """The progress bar starts from these: iteration 1 passes 1 of 2, iteration 2 both."""
    explorer, _ = build_explorer(tmp_path / "run", tasks=1, iterations=2)
    explorer.run()
    events: list[ExploreEvent] = []
    again, _ = build_explorer(tmp_path / "run", tasks=1, iterations=2, on_event=events.append)
    again.run()
    start = next(ev for ev in events if ev.kind == "start")
    assert start.data == {"total": 2, "done": 2, "passed": 3}


def test_groups_a_generator_answers_with_nothing_are_counted(tmp_path: Path) -> None:
    """A replay without a task's recording answers []: the run says so instead of a gap."""
    explorer, gen = build_explorer(tmp_path / "run", tasks=2, iterations=2)
    gen.script["t1"] = [[], []]
    result = explorer.run()
    assert result.empty_groups == {"seq": {"t1": 2}}
    again, _ = build_explorer(tmp_path / "run", tasks=2, iterations=2)
    assert again.run().empty_groups == {"seq": {"t1": 2}}  # resumed groups count too


@pytest.mark.tools
def test_cli_explore_warns_about_tasks_replay_has_no_recording_for(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks"
    for top in ("and2", "or2"):
        (tasks / top).mkdir(parents=True)
        (tasks / top / "task.toml").write_text(f'id = "{top}"\ntop = "{top}"\nspec = "A gate."\n')
    recorded = tmp_path / "rec.jsonl"
    recorded.write_text(json.dumps({"task_id": "and2", "completion": (
        "module and2(input a, input b, output y); assign y = a & b; endmodule")}) + "\n")
    result = CliRunner().invoke(cli, [
        "explore", "--tasks", str(tasks), "--generator", "replay", "--generator-option",
        f"path={recorded}", "--iterations", "2", "--ppa-estimator", "none", "--no-ast",
        "--run-dir", str(tmp_path / "run"), "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["empty_groups"] == 2
    assert summary["empty_groups_by_method"] == {"replay": {"or2": 2}}
    assert "method 'replay': no candidate in 2 groups of 1 tasks (or2)" in result.stderr
