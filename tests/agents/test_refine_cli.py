"""``rtlforge refine``: the --json contract, exit codes, resuming, and usage errors.

The loop itself is tested with the orchestrator; here a stand-in with the orchestrator's
constructor and ``solve`` answers from a script per task (and writes its trace and decisions
where the real one does), so what is checked is the command's own behaviour.
"""

from __future__ import annotations

import html
import json
import sys
import types
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import pytest
from click.testing import CliRunner

from rtlforge.agents.base import Router
from rtlforge.agents.models import AgentAction, IterationRecord, SolveResult, Tier
from rtlforge.agents.trace import JsonlSink, Trace
from rtlforge.cli import cli
from rtlforge.core.errors import ToolMissingError
from rtlforge.core.hookspecs import Register, hookimpl
from rtlforge.core.models import Verdict
from rtlforge.core.plugins import PluginHost
from rtlforge.plugins.generators import scripted
from rtlforge.testing.builders import make_candidate

ROOT = Path(__file__).resolve().parents[2]
TASKS = ROOT / "examples" / "tasks"
PICK = ("--task", "mux4", "--task", "add8_carry", "--task", "cmp8s")


class _Router(Router):
    name: ClassVar[str] = "fixed"

    def __init__(self, path: str | None = None) -> None:
        self.path = path

    def decide(self, ctx: Any, agents: Sequence[str]) -> AgentAction:
        return AgentAction(agent=agents[0])


class _Learned(_Router):
    name: ClassVar[str] = "learned"

    def __init__(self, path: str) -> None:
        if not Path(path).is_file():
            raise ValueError(f"no checkpoint at {path}")
        self.path = path


class _Routers:
    @hookimpl
    def register_routers(self, register: Register) -> None:
        register(_Router)
        register(_Learned)


class FakeOrchestrator:
    """Answers each task from ``script``: a list of verdicts per task id (one per iteration);
    ``"raise"`` as a verdict stops midway with a RuntimeError (a killed run), ``"tool"`` with a
    ToolMissingError (infrastructure of the whole run)."""

    script: ClassVar[dict[str, list[str]]] = {}
    made: ClassVar[list[dict[str, Any]]] = []
    solved: ClassVar[list[str]] = []

    def __init__(self, **kwargs: Any) -> None:
        self.kwargs = kwargs
        self.made.append(kwargs)
        self.run_dir: Path = kwargs["run_dir"]

    def solve(self, task: Any, *, guard: Any = None) -> SolveResult:
        self.solved.append(task.id)
        trace_path = self.run_dir / "traces" / f"{task.id}.jsonl"
        trace = Trace(task.id, self.kwargs["sinks"], owned=(JsonlSink(trace_path),))
        records = []
        try:
            trace.emit("analysis", f"solving {task.id} (run {len(self.made)})")
            for i, verdict in enumerate(self.script.get(task.id, ["pass"])):
                with (self.run_dir / "decisions.jsonl").open("a") as fh:
                    fh.write(json.dumps({"task_id": task.id, "iteration": i,
                                         "run": len(self.made)}) + "\n")
                if verdict == "raise":
                    raise RuntimeError("killed midway")
                if verdict == "tool":
                    raise ToolMissingError("iverilog", "install iverilog")
                trace.emit("validation", verdict, iteration=i, agent="fast",
                           data={"verdict": verdict})
                records.append(IterationRecord(
                    iteration=i, tier=Tier.ROUTER, agent="fast", verdict=Verdict(verdict),
                    llm_calls=1, prompt_tokens=10, completion_tokens=5))
        finally:
            trace.close()
        final = records[-1].verdict
        return SolveResult(
            task_id=task.id, verdict=final, iterations=len(records),
            llm_calls=len(records), tokens=15 * len(records),
            agents=tuple(r.agent for r in records), tiers=tuple(r.tier for r in records),
            solved_by=Tier.ROUTER if final is Verdict.PASS else None, records=tuple(records),
            trace=str(trace_path), candidate=make_candidate(f"module {task.top}; endmodule"))

    def close(self) -> None:
        return None


@pytest.fixture(autouse=True)
def _setup(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> None:
    """Test routers on the CLI's host (the built-in ones are another part of the package),
    the scripted generator, and the stand-in orchestrator except for tool-backed tests, which
    run the real loop."""
    module = types.ModuleType("rtlforge.agents.orchestrator")
    module.Orchestrator = FakeOrchestrator  # type: ignore[attr-defined]
    if request.node.get_closest_marker("tools") is None:
        monkeypatch.setitem(sys.modules, "rtlforge.agents.orchestrator", module)
    monkeypatch.setattr(FakeOrchestrator, "script", {})
    monkeypatch.setattr(FakeOrchestrator, "made", [])
    monkeypatch.setattr(FakeOrchestrator, "solved", [])
    base = PluginHost.default

    def host() -> PluginHost:
        h = base()
        if "learned" not in h.names("router"):
            h.add_plugin(_Routers(), name="test-routers")
        if "scripted" not in h.names("generator"):  # entry points installed before it existed
            h.add_plugin(scripted, name="scripted")
        return h

    monkeypatch.setattr(PluginHost, "default", staticmethod(host))  # the CLI's host
    monkeypatch.setenv("RTLFORGE_PLUGIN_CACHE", "off")  # no manifest: that host is the CLI's


def _refine(run_dir: Path, *args: str) -> Any:
    return CliRunner().invoke(cli, ["refine", "--tasks", str(TASKS), *PICK, "--generator",
                                    "symbolic", "--router", "fixed", "--run-dir", str(run_dir),
                                    *args])


def _lines(result: Any) -> list[dict[str, Any]]:
    return [json.loads(line) for line in result.stdout.splitlines() if line.strip()]


def test_json_lines_per_task_and_exit_1_when_one_fails(tmp_path: Path) -> None:
    FakeOrchestrator.script = {"add8_carry": ["fail", "fail"]}
    result = _refine(tmp_path, "--json", "--max-iterations", "4", "--candidates", "2",
                     "--no-symbolic")
    assert result.exit_code == 1, result.output
    lines = _lines(result)
    assert [line["task_id"] for line in lines] == ["mux4", "add8_carry", "cmp8s"]
    assert {"task_id", "verdict", "iterations", "llm_calls", "tokens", "agents",
            "trace"} <= set(lines[0])
    assert lines[1] == {**lines[1], "verdict": "fail", "iterations": 2, "llm_calls": 2,
                        "tokens": 30, "agents": ["fast", "fast"]}
    assert Path(lines[0]["trace"]) == tmp_path / "traces" / "mux4.jsonl"
    made = FakeOrchestrator.made[0]
    assert (made["max_iterations"], made["candidates"], made["symbolic"],
            made["optimize"]) == (4, 2, False, False)
    assert isinstance(made["router"], _Router) and made["run_dir"] == tmp_path
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["pass_at_1"] == pytest.approx(2 / 3)
    assert summary["llm_calls_per_solved"] == pytest.approx(2.0)  # 4 calls, 2 solved
    assert len((tmp_path / "results.jsonl").read_text().splitlines()) == 3
    assert (tmp_path / "report.html").is_file()


def test_all_passing_exits_0_and_prints_a_table(tmp_path: Path) -> None:
    result = _refine(tmp_path)
    assert result.exit_code == 0, result.output
    assert "pass@1 1.0000 (3/3 passed their first attempt); solved 1.0000 (3/3 within 5 " \
           "iterations)" in " ".join(result.stdout.split())
    assert "mux4" in result.stdout and "report:" in result.stdout


def test_rerun_skips_finished_tasks_and_prints_them_again(tmp_path: Path) -> None:
    FakeOrchestrator.script = {"cmp8s": ["fail"]}
    first = _refine(tmp_path, "--json")
    again = _refine(tmp_path, "--json")
    assert again.exit_code == first.exit_code == 1
    assert _lines(again) == _lines(first)
    assert FakeOrchestrator.solved == ["mux4", "add8_carry", "cmp8s"]  # nothing solved twice


def test_other_settings_are_refused_unless_overwrite(tmp_path: Path) -> None:
    assert _refine(tmp_path, "--json").exit_code == 0
    refused = _refine(tmp_path, "--json", "--max-iterations", "2")
    assert refused.exit_code == 2
    assert "max_iterations: 5 (stored) vs 2 (now)" in refused.output
    assert len(FakeOrchestrator.solved) == 3
    redone = _refine(tmp_path, "--json", "--max-iterations", "2", "--overwrite")
    assert redone.exit_code == 0 and len(FakeOrchestrator.solved) == 6


def test_an_interrupted_task_is_redone_with_a_fresh_trace(tmp_path: Path) -> None:
    FakeOrchestrator.script = {"add8_carry": ["fail", "raise"]}
    killed = _refine(tmp_path, "--json")
    assert isinstance(killed.exception, RuntimeError)
    assert [line["task_id"] for line in _lines(killed)] == ["mux4"]
    FakeOrchestrator.script = {"add8_carry": ["pass"]}
    resumed = _refine(tmp_path, "--json")
    assert resumed.exit_code == 0, resumed.output
    assert FakeOrchestrator.solved == ["mux4", "add8_carry", "add8_carry", "cmp8s"]
    trace = (tmp_path / "traces" / "add8_carry.jsonl").read_text()
    assert "(run 2)" in trace and "(run 1)" not in trace
    decisions = [json.loads(x) for x in (tmp_path / "decisions.jsonl").read_text().splitlines()]
    assert [(d["task_id"], d["run"]) for d in decisions] == [
        ("mux4", 1), ("add8_carry", 2), ("cmp8s", 2)]


def test_infrastructure_failure_of_the_run_exits_3_and_keeps_what_finished(tmp_path: Path
                                                                           ) -> None:
    FakeOrchestrator.script = {"add8_carry": ["tool"]}
    result = _refine(tmp_path, "--json")
    assert result.exit_code == 3
    assert "required tool 'iverilog'" in result.stderr and "resume" in result.stderr
    assert [line["task_id"] for line in _lines(result)] == ["mux4"]
    assert json.loads((tmp_path / "summary.json").read_text())["tasks"] == 1


def test_learned_router_gets_its_path(tmp_path: Path) -> None:
    ckpt = tmp_path / "router.pt"
    ckpt.write_bytes(b"weights")
    result = _refine(tmp_path / "run", "--json", "--router", f"learned:{ckpt}")
    assert result.exit_code == 0, result.output
    router = FakeOrchestrator.made[0]["router"]
    assert isinstance(router, _Learned) and router.path == str(ckpt)
    settings = json.loads((tmp_path / "run" / "settings.json").read_text())
    assert settings["router"]["name"] == "learned" and settings["router"]["file_digest"]


@pytest.mark.parametrize(("args", "message"), [
    (("--task", "nope"), "unknown task ids: nope"),
    (("--router", "nosuch"), "no router named 'nosuch'"),
    (("--router", "learned:"), "expected NAME or NAME:PATH"),
    (("--router", "learned:/no/such/file"), "no checkpoint at /no/such/file"),
    (("--generator", "nosuch"), "no generator named 'nosuch'"),
    (("--generator-option", "novalue"), "novalue"),
    (("--agents", "/no/such/agents.toml"), "does not exist"),
    (("--max-iterations", "0"), "--max-iterations"),
])
def test_usage_errors_exit_2_before_any_work(tmp_path: Path, args: tuple[str, ...],
                                             message: str) -> None:
    result = _refine(tmp_path, *args)
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert FakeOrchestrator.made == [] and not (tmp_path / "results.jsonl").exists()


def test_every_task_an_infra_error_exits_3(tmp_path: Path) -> None:
    FakeOrchestrator.script = {t: ["infra_error"] for t in ("mux4", "add8_carry", "cmp8s")}
    result = _refine(tmp_path, "--json")
    assert result.exit_code == 3
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert (summary["infra_errors"], summary["pass_at_1"]) == (3, None)


MUX_WRONG = ("module mux4(input [1:0] sel, input [7:0] a, b, c, d, output [7:0] y);\n"
             "  assign y = sel[0] ? b : a;\nendmodule\n")
MUX_RIGHT = ("module mux4(input [1:0] sel, input [7:0] a, b, c, d, output [7:0] y);\n"
             "  assign y = sel[1] ? (sel[0] ? d : c) : (sel[0] ? b : a);\nendmodule\n")


@pytest.mark.tools
def test_real_loop_with_a_scripted_generator_end_to_end(tmp_path: Path) -> None:
    """The real orchestrator and iverilog: a wrong design, then the fix; the run directory
    holds what the CLI promises and a rerun resumes without generating anything."""
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"mux4": {"*": [f"```verilog\n{MUX_WRONG}```", MUX_RIGHT]}}))
    args = ("--task", "mux4", "--generator", "scripted", "--generator-option",
            f"path={script}", "--router", "fixed", "--no-symbolic", "--max-iterations", "3",
            "--json", "--run-dir", str(tmp_path / "run"))
    runner = CliRunner()
    result = runner.invoke(cli, ["refine", "--tasks", str(TASKS), *args])
    assert result.exit_code == 0, result.output
    (line,) = _lines(result)
    assert (line["verdict"], line["iterations"]) == ("pass", 2)
    assert line["llm_calls"] == 2 and line["tokens"] > 0
    events = [json.loads(x) for x in Path(line["trace"]).read_text().splitlines()]
    assert [e["kind"] for e in events if e["kind"] == "validation"] == ["validation"] * 2
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    # the first attempt failed and the second passed: pass@1 0, solved 1
    assert summary["pass_at_1"] == 0.0 and summary["solve_rate"] == 1.0
    assert summary["llm_calls_per_solved"] == 2.0
    stored = json.loads((tmp_path / "run" / "results.jsonl").read_text())
    assert stored["candidate"]["files"][0]["content"].strip() == MUX_RIGHT.strip()
    # the failing first design and its feedback are kept, and the report shows them
    (attempt,) = stored["attempts"]
    assert attempt["iteration"] == 0 and attempt["verdict"] == "fail"
    assert attempt["candidate"]["files"][0]["content"].strip() == MUX_WRONG.strip()
    assert attempt["feedback"][0]["category"] == "sim_mismatch"
    page = (tmp_path / "run" / "report.html").read_text()
    shown = page[page.index("<h4>Failing iterations</h4>"):]
    assert html.escape(MUX_WRONG.strip().splitlines()[-2].strip()) in shown
    again = runner.invoke(cli, ["refine", "--tasks", str(TASKS), *args])
    assert again.exit_code == 0 and _lines(again) == [line]


def test_agents_file_overrides_reach_the_loop_and_the_settings(tmp_path: Path) -> None:
    agents = tmp_path / "agents.toml"
    agents.write_text("[roles.fast]\ntemperature = 0.25\nretrieval_k = 4\n")
    result = _refine(tmp_path / "run", "--json", "--agents", str(agents))
    assert result.exit_code == 0, result.output
    assert FakeOrchestrator.made[0]["roles"] == {"fast": {"temperature": 0.25,
                                                          "retrieval_k": 4}}
    settings = json.loads((tmp_path / "run" / "settings.json").read_text())
    assert settings["agents"]["roles"] == {"fast": {"temperature": 0.25, "retrieval_k": 4}}
    agents.write_text("[roles.fastt]\ntemperature = 0.25\n")
    bad = _refine(tmp_path / "run2", "--json", "--agents", str(agents))
    assert bad.exit_code == 2 and "did you mean 'fast'" in bad.output
