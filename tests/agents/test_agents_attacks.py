"""Attacks on the orchestration layer by an adversary who controls the LLM's answers, the task
files, the agents file and what is left in a run directory (docs/security.md: bad input gets a
typed result with a clear message, never a crash, a hang or a wrong verdict).

Each test is a finding of the attack round of issue 12 (or a standing check of a path that
held); the module docstring of each group says what the attack was.
"""

from __future__ import annotations

import io
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from rtlforge.agents.decompose import Decomposer, DecompositionError, parse_plan
from rtlforge.agents.models import IterationRecord, SolveResult, Tier
from rtlforge.agents.run import RefineRun, UnsafeRunDirError
from rtlforge.agents.trace import ThoughtEvent, ThoughtKind, Trace, read_trace
from rtlforge.core.models import Port, Task, ValidationReport, Verdict
from rtlforge.testing.builders import make_candidate, make_task

# ------------------------------------------------------------------ decomposition plans


def _plan(names: list[str], port: str = "clk") -> str:
    return json.dumps({"modules": [
        {"name": n, "purpose": f"the {n.strip()} block",
         "ports": [{"name": port, "direction": "input"}]} for n in names]})


@pytest.mark.parametrize(("names", "port"), [
    (["alu\n", "regs", "fsm", "ctl"], "clk"),  # `$` matches before a final newline
    (["alu", "regs", "fsm", "ctl"], "clk\n"),
])
def test_plan_names_ending_in_a_newline_are_not_identifiers(names: list[str], port: str) -> None:
    with pytest.raises(DecompositionError, match="not a Verilog identifier"):
        parse_plan(_plan(names, port))


def test_a_plan_with_a_newline_in_a_module_name_is_a_typed_decomposition_failure() -> None:
    """Before the fix the name passed the plan check and SourceFile("alu\\n.v") raised a
    pydantic error out of the decomposer: the orchestrator called that an infrastructure
    failure, so LLM text ended the task as infra_error instead of a design problem."""
    task = Task(id="sys", spec="An ALU, a register file and an FSM.", top="sys",
                ports=(Port(name="clk", direction="input"),))
    answers = {"decompose": _plan(["alu\n", "regs", "fsm", "ctl"])}

    def call_llm(system: str | None, prompt: str, *, purpose: str) -> str:
        return answers.get(purpose, "```verilog\nmodule x(input clk); endmodule\n```")

    result = Decomposer(call_llm, lint=False, validate=False).build(task)
    assert result.candidate is None and result.failed_step == "plan"
    assert "not a Verilog identifier" in (result.error or "")


# ------------------------------------------------------------------ the run directory


TASKS = {"t": make_task("t", spec="spec of t")}
SETTINGS = {"version": 1, "tasks": {"t": "digest"}}


def _outside(tmp_path: Path) -> Path:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim.jsonl").write_text("precious\n")
    (outside / "summary.json").write_text("precious\n")
    return outside


def test_a_symlinked_traces_folder_is_refused_and_nothing_outside_is_deleted(
        tmp_path: Path) -> None:
    """Before the fix, resuming deleted every *.jsonl file of the folder the link pointed at
    (the unfinished tasks' traces, as it thought)."""
    outside = _outside(tmp_path)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "traces").symlink_to(outside, target_is_directory=True)
    with pytest.raises(UnsafeRunDirError, match=r"traces.*symbolic link"):
        RefineRun(run_dir, SETTINGS).prepare()
    assert (outside / "victim.jsonl").read_text() == "precious\n"


@pytest.mark.parametrize("name", ["summary.json", "report.html", "results.jsonl",
                                  "decisions.jsonl", "settings.json"])
def test_a_symlinked_run_file_is_refused_and_never_written_through(tmp_path: Path,
                                                                    name: str) -> None:
    outside = _outside(tmp_path)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / name).symlink_to(outside / "summary.json")
    with pytest.raises(UnsafeRunDirError, match="symbolic link"):
        run = RefineRun(run_dir, SETTINGS)
        run.prepare()
        run.write_summary([])
    assert (outside / "summary.json").read_text() == "precious\n"


def test_a_symlinked_trace_file_is_refused(tmp_path: Path) -> None:
    outside = _outside(tmp_path)
    run_dir = tmp_path / "run"
    (run_dir / "traces").mkdir(parents=True)
    (run_dir / "traces" / "t.jsonl").symlink_to(outside / "victim.jsonl")
    with pytest.raises(UnsafeRunDirError, match=r"t\.jsonl"):
        RefineRun(run_dir, SETTINGS).check()


def test_overwrite_removes_symlinks_themselves_not_what_they_point_at(tmp_path: Path) -> None:
    """Before the fix --overwrite crashed on a symlinked traces folder (rmtree refuses links)
    and unlinked nothing else; now the links go and their targets stay."""
    outside = _outside(tmp_path)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "traces").symlink_to(outside, target_is_directory=True)
    (run_dir / "report.html").symlink_to(outside / "summary.json")
    (run_dir / "unrelated.txt").write_text("not refine's\n")
    run = RefineRun(run_dir, SETTINGS, overwrite=True)
    run.prepare()
    run.write_summary([])
    assert (outside / "victim.jsonl").read_text() == "precious\n"
    assert (outside / "summary.json").read_text() == "precious\n"
    assert not (run_dir / "traces").is_symlink() and (run_dir / "traces").is_dir()
    assert not (run_dir / "report.html").is_symlink()
    assert (run_dir / "unrelated.txt").read_text() == "not refine's\n"


def test_a_run_file_of_the_wrong_kind_is_a_clear_error(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    (run_dir / "results.jsonl").mkdir(parents=True)
    (run_dir / "traces").write_text("a file where the traces folder goes\n")
    with pytest.raises(UnsafeRunDirError, match=r"results\.jsonl"):
        RefineRun(run_dir, SETTINGS).prepare()


def _passing(task_id: str = "t", **update: Any) -> SolveResult:
    candidate = make_candidate("module t; endmodule\n")
    report = ValidationReport(verdict=Verdict.PASS, task_id=task_id)
    result = SolveResult(task_id=task_id, verdict=Verdict.PASS, iterations=1, llm_calls=1,
                         records=(IterationRecord(iteration=0, tier=Tier.ROUTER, agent="fast",
                                                  verdict=Verdict.PASS),),
                         tiers=(Tier.ROUTER,), agents=("fast",), solved_by=Tier.ROUTER,
                         candidate=candidate, report=report)
    return result.model_copy(update=update)


def _stored(tmp_path: Path, results: bytes) -> RefineRun:
    run_dir = tmp_path / "run"
    run_dir.mkdir(exist_ok=True)
    run = RefineRun(run_dir, SETTINGS)
    (run_dir / "settings.json").write_text(json.dumps(run.settings))
    (run_dir / "results.jsonl").write_bytes(results)
    return run


def test_a_results_line_torn_inside_a_multibyte_character_is_dropped_not_a_crash(
        tmp_path: Path) -> None:
    """A killed run can tear the last line anywhere, also inside a UTF-8 sequence (the results
    hold designs and messages verbatim): resuming crashed with UnicodeDecodeError."""
    good = _passing().model_dump_json().encode() + b"\n"
    torn = _passing(error="caf\u00e9").model_dump_json().encode()
    torn = torn[:torn.index("\u00e9".encode()) + 1]  # the first byte of the two of é
    run = _stored(tmp_path, good + torn)
    done = run.prepare()
    assert set(done) == {"t"}
    assert (tmp_path / "run" / "results.jsonl").read_bytes() == good


def test_absurdly_nested_json_in_results_and_settings_is_not_a_crash(tmp_path: Path) -> None:
    deep = b"[" * 100_000 + b"\n"
    run = _stored(tmp_path, deep)
    assert run.prepare() == {}
    (tmp_path / "run" / "settings.json").write_bytes(deep)
    with pytest.raises(ValueError, match="other settings"):
        RefineRun(tmp_path / "run", SETTINGS).check()


@pytest.mark.parametrize("update", [
    {"candidate": None},  # a pass without a design
    {"report": ValidationReport(verdict=Verdict.FAIL, task_id="t")},  # its report says fail
])
def test_a_stored_pass_that_contradicts_itself_is_redone_not_trusted(
        tmp_path: Path, update: dict[str, Any]) -> None:
    run = _stored(tmp_path, _passing(**update).model_dump_json().encode() + b"\n")
    assert run.finished() == {}


def test_a_trace_torn_inside_a_multibyte_character_reads_back_without_it(
        tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    ok = ThoughtEvent(kind=ThoughtKind.ANALYSIS, message="fine").model_dump_json().encode()
    torn = ThoughtEvent(kind=ThoughtKind.ANALYSIS, message="\u00e9t\u00e9").model_dump_json()
    path.write_bytes(ok + b"\n" + torn.encode()[:torn.encode().index(b"\xc3") + 1])
    assert [e.message for e in read_trace(path)] == ["fine"]


# ------------------------------------------------------------------ the CLI's live view


HOSTILE = "x\x1b[2J\x1b[H\x1b]0;pwned\x07\x9b31m\u202egnp.exe\r\x08y"


def test_the_live_view_shows_no_terminal_control_sequences() -> None:
    """rich drops \\r, \\b and BEL but keeps ESC: a generator's error text (or anything else a
    trace message quotes) could clear the screen, move the cursor or set the window title."""
    from rich.console import Console

    from rtlforge.agents.cli import LiveView

    view = LiveView(total=1)
    view(ThoughtEvent(kind=ThoughtKind.ERROR, message=HOSTILE, task_id="t" + HOSTILE,
                      agent="a" + HOSTILE))
    out = io.StringIO()
    Console(file=out, force_terminal=True, width=400).print(view._render())
    shown = out.getvalue()
    # rich's own styling is SGR only (ESC [ ... m); nothing else may reach the terminal
    stripped = re.sub(r"\x1b\[[0-9;]*m", "", shown)
    assert not any(c in stripped for c in "\x1b\x9b\x07\r\x08\u202e"), repr(shown)
    assert "2J" in stripped  # the text is shown, made harmless


def test_cli_text_from_results_is_made_plain() -> None:
    from rtlforge.agents.cli import plain

    assert plain(HOSTILE) == plain(plain(HOSTILE))
    assert not any(c in plain(HOSTILE) for c in "\x1b\x9b\x07\r\x08\u202e")
    assert plain("tab\tand\nnewline") == "tab and newline"


# ------------------------------------------------------------------ labelling


def test_the_summary_and_report_say_a_generated_testbench_judged_the_task(
        tmp_path: Path) -> None:
    """A generated testbench may print TEST PASSED unconditionally; that is allowed only for
    tasks without a testbench, and then every output must say who judged."""
    result = _passing(judge="generated")
    assert result.summary()["judge"] == "generated"
    run = RefineRun(tmp_path / "run", SETTINGS)
    run.prepare()
    _, report = run.write_summary([result])
    html = report.read_text()
    assert "judge" in html and "generated" in html


# ------------------------------------------------------------------ router checkpoints


def _checkpoint(tmp_path: Path, name: str) -> Path:
    from rtlforge.agents.router.features import STATE_DIM
    from rtlforge.agents.router.nets import ActorCritic, save_router

    return save_router(tmp_path / name, ActorCritic(state_dim=STATE_DIM, hidden=8),
                       router="ppo", step=1)


def _edit_meta(path: Path, edit: Any) -> None:
    from rtlforge.trainers.checkpoints import CHECKPOINT_FILE

    meta = json.loads((path / CHECKPOINT_FILE).read_text())
    (path / CHECKPOINT_FILE).write_text(json.dumps(edit(meta)))


class _Evil:
    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return (os.system, ("touch " + os.environ.get("RTLFORGE_ATTACK_FLAG", "/nonexistent"),))


@pytest.mark.filterwarnings("ignore:Detected pickle protocol")  # the hand-written pickle
def test_a_tampered_router_checkpoint_is_a_config_error_and_runs_no_code(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """torch.load(weights_only=True) already refuses pickled code; every other way a checkpoint
    can be wrong (garbage weights, wrong shapes, missing or mistyped state) crashed the CLI
    with a traceback instead of the usage error `--router ppo:PATH` promises."""
    import pickle

    from rtlforge.agents.router.nets import WEIGHTS_FILE
    from rtlforge.agents.router.policy import PPORouter
    from rtlforge.core.errors import ConfigError

    flag = tmp_path / "pwned"
    monkeypatch.setenv("RTLFORGE_ATTACK_FLAG", str(flag))
    cases: dict[str, Path] = {}
    cases["pickled code"] = _checkpoint(tmp_path, "evil")
    (cases["pickled code"] / WEIGHTS_FILE).write_bytes(pickle.dumps(_Evil()))
    cases["garbage"] = _checkpoint(tmp_path, "garbage")
    (cases["garbage"] / WEIGHTS_FILE).write_bytes(b"not a torch file")
    edits = {"no hidden": lambda m: {**m, "state": {k: v for k, v in m["state"].items()
                                                    if k != "hidden"}},
             "other shape": lambda m: {**m, "state": {**m["state"], "hidden": 16}},
             "text hidden": lambda m: {**m, "state": {**m["state"], "hidden": "x"}},
             "no step": lambda m: {k: v for k, v in m.items() if k != "step"},
             "state list": lambda m: {**m, "state": [1]},
             "meta list": lambda m: [1]}
    for label, edit in edits.items():
        cases[label] = _checkpoint(tmp_path, label.replace(" ", "_"))
        _edit_meta(cases[label], edit)
    for label, path in cases.items():
        with pytest.raises(ConfigError):
            PPORouter(path=str(path))
        assert not flag.exists(), label


# ------------------------------------------------------------------ the HTML report


XSS = '<script>alert(1)</script><img src=x onerror=alert(2)>"\'><a href="javascript:x">'


def test_a_failed_task_with_hostile_text_everywhere_renders_escaped(tmp_path: Path) -> None:
    """Before the fix any failed task that carried its validation report crashed the report
    (it read ``ValidationReport.message``, which does not exist) and so ``rtlforge refine``
    at its very end. Every value shown comes from tasks, models or tools: all escaped."""
    from rtlforge.core.models import Feedback, StageResult

    report = ValidationReport(verdict=Verdict.FAIL, task_id="t", stages=(StageResult(
        name="sim", verdict=Verdict.FAIL,
        feedback=(Feedback(category="mismatch", message="y wrong " + XSS, stage="sim"),)),))
    task_id = "t" + XSS
    result = SolveResult(task_id=task_id, verdict=Verdict.FAIL, iterations=1,
                         records=(IterationRecord(iteration=0, tier=Tier.ROUTER,
                                                  agent="fast", verdict=Verdict.FAIL,
                                                  error_category=XSS, failed_stage=XSS),),
                         agents=("fast",), tiers=(Tier.ROUTER,), report=report,
                         candidate=make_candidate("module t; // " + XSS + "\nendmodule\n"),
                         error=None)
    run = RefineRun(tmp_path / "run", {"version": 1, "tasks": {task_id: "d"}})
    run.prepare()
    trace = Trace(task_id)
    trace.emit(ThoughtKind.ERROR, XSS, evidence=(XSS,))
    (tmp_path / "run" / "decisions.jsonl").write_text(json.dumps(
        {"task_id": task_id, "iteration": 0, "router": XSS,
         "action": {"agent": XSS, "focus": XSS, "reason": XSS},
         "outcome": {"verdict": XSS}}) + "\n")
    run.trace_path(task_id).write_text(trace.events[0].model_dump_json() + "\n")
    _, path = run.write_summary([result])
    html = path.read_text()
    assert "<script" not in html and "<img" not in html and 'href="javascript' not in html
    assert "y wrong &lt;script&gt;" in html  # the failure message is shown, escaped



# ------------------------------------------------------------------ the loop, with real tools


def _loop_host() -> Any:
    from rtlforge.agents import plugin as agents_plugin
    from rtlforge.agents.knowledge import plugin as knowledge_plugin
    from rtlforge.plugins.generators import scripted
    from rtlforge.plugins.validators import iverilog
    from rtlforge.testing.builders import make_plugin_host

    return make_plugin_host(iverilog, scripted, knowledge_plugin, agents_plugin)


def _loop(script: dict[str, Any], tmp_path: Path, *, gate: bool, **options: Any) -> Any:
    from rtlforge.agents.orchestrator import Orchestrator
    from rtlforge.plugins.generators.scripted import ScriptedGenerator
    from rtlforge.plugins.validators.iverilog import IverilogLint, IverilogSim
    from rtlforge.sandbox.runner import SandboxRunner
    from rtlforge.validate.pipeline import Pipeline

    runner = SandboxRunner(unsafe_skip_gate=not gate)
    pipeline = Pipeline([IverilogLint(), IverilogSim()], runner=runner, timeout=2.0)
    return Orchestrator(generator=ScriptedGenerator(script=script), host=_loop_host(),
                        pipeline=pipeline, router=_FirstAgent(), symbolic=False,
                        decomposer=False, guidance=False, run_dir=tmp_path / "run", **options)


class _FirstAgent:
    """A router stand-in: always the fast agent (the loop only needs decide/state/observe)."""

    name = "first"

    def decide(self, ctx: Any, agents: Any) -> Any:
        from rtlforge.agents.models import AgentAction

        return AgentAction(agent="fast", reason="test")

    def state(self, ctx: Any) -> tuple[float, ...]:
        return ()

    def observe(self, decision: Any) -> None:
        return None


def _bench(extra: str = "", before_summary: str = "") -> str:
    """A generated testbench for and2 that passes the testbench checks, with ``extra`` at the
    start of its initial block and ``before_summary`` before its status lines."""
    from test_orchestrator_builtins import TESTBENCH

    text = TESTBENCH.replace("  initial begin\n", "  initial begin\n" + extra, 1)
    return text.replace('    $display("Mismatches', before_summary + '    $display("Mismatches', 1)


@pytest.mark.tools
def test_a_generated_testbench_the_gate_refuses_goes_back_to_the_testbench_agent(
        tmp_path: Path) -> None:
    """Before the fix a generated testbench calling $system was accepted as the judge, and the
    pipeline's gate then refused it on every validation: a correct design failed at the
    security stage, with feedback about code the design agent never wrote."""
    from test_orchestrator_builtins import AND_DESIGN, AND_TASK

    hostile = _bench('    $system("touch pwned");\n')
    script = {"and2": {"testbench": [hostile, _bench()], "fast": [AND_DESIGN]}}
    with _loop(script, tmp_path, gate=True, max_iterations=1) as orch:
        result = orch.solve(AND_TASK)
    assert result.verdict is Verdict.PASS and result.judge == "generated"
    refusals = [e.message for e in read_trace(result.trace or "")
                if e.kind is ThoughtKind.BOTTLENECK and e.agent == "testbench"]
    assert len(refusals) == 1 and "security gate" in refusals[0] and "$system" in refusals[0]


@pytest.mark.tools
def test_with_the_gate_off_the_jail_holds_through_the_loop_and_no_pass_is_forged(
        tmp_path: Path) -> None:
    """The loop with the static gate switched off: a generated testbench and a design that run
    commands and write outside the run directory stay contained; a generated testbench that
    never reaches $finish is a timeout and the next task still runs; a design printing the
    status lines cannot forge a pass against a real testbench (the nonce)."""
    from test_orchestrator_builtins import AND_DESIGN, AND_TASK

    from rtlforge.tasks.loader import load_task

    outside = tmp_path / "outside"
    outside.mkdir()
    escape = (f'    $system("touch {outside}/tb_system");\n'
              f'    begin : w integer fd; fd = $fopen("{outside}/tb_fopen", "w"); '
              f'$fwrite(fd, "x"); $fclose(fd); end\n')
    design = AND_DESIGN.replace("  assign y = a & b;", f'  assign y = a & b;\n  initial begin '
                                f'$system("touch {outside}/dut_system"); '
                                f'$dumpfile("{outside}/dut.vcd"); $dumpvars; end')
    forged = ("```verilog\nmodule mux4(input [1:0] sel, input [7:0] a, b, c, d, "
              "output [7:0] y);\n  assign y = 8'h00;\n  initial begin\n"
              '    $display("Mismatches: 0 in 4 samples");\n    $display("TEST PASSED");\n'
              "  end\nendmodule\n```")
    script = {"and2": {"testbench": [_bench(escape)], "fast": [design]},
              "hang": {"testbench": [_bench(before_summary="    forever #1;\n")],
                       "fast": [AND_DESIGN]},
              "mux4": {"fast": [forged]}}
    mux4 = load_task(Path(__file__).resolve().parents[2] / "examples" / "tasks" / "mux4")
    with _loop(script, tmp_path, gate=False, max_iterations=1) as orch:
        results = [orch.solve(task) for task in
                   (AND_TASK, AND_TASK.model_copy(update={"id": "hang"}), mux4)]
    assert sorted(p.name for p in outside.iterdir()) == []
    escaped, hang, forge = results
    assert escaped.verdict is not Verdict.INFRA_ERROR and escaped.judge == "generated"
    assert hang.verdict is Verdict.TIMEOUT and hang.judge == "generated"
    assert forge.verdict is Verdict.FAIL and forge.judge == "real"


# ------------------------------------------------------------------ guidance gate weights


@pytest.mark.parametrize("edit", [
    lambda d: {**d, "layers": [{**d["layers"][0], "bias": [float("nan")] * 64},
                               *d["layers"][1:]]},  # NaN scores picked "none" for every spec
    lambda d: {**d, "layers": [*d["layers"][:2], {**d["layers"][2],
                                                  "bias": [float("inf")] * 6}]},
    lambda d: {k: v for k, v in d.items() if k != "layers"},
    lambda d: {**d, "layers": [1, 2, 3]},
    lambda d: {**d, "layers": None},
    lambda d: {**d, "layers": [{"weight": [[1.0]], "bias": [1.0]}]},  # wrong shapes
    lambda d: "[" * 100_000,
])
def test_a_malformed_guidance_gate_file_is_a_value_error(tmp_path: Path, edit: Any) -> None:
    from rtlforge.agents.guidance.gate import GuidanceGate

    path = tmp_path / "gate.json"
    GuidanceGate(trained=True).save(path)
    edited = edit(json.loads(path.read_text()))
    path.write_text(edited if isinstance(edited, str) else json.dumps(edited))
    with pytest.raises(ValueError, match=str(path)):
        GuidanceGate.load(path)


# ------------------------------------------------------------------ TOML inputs


DEEP_TOML = "x = " + "[" * 50_000 + "]" * 50_000 + "\n"


def test_hostile_role_templates_are_config_errors(tmp_path: Path) -> None:
    """Before the fix an undecodable template file and absurd nesting escaped as
    UnicodeDecodeError / RecursionError (a traceback from `refine --agents`), and a format
    spec such as {spec:>999999999} built a gigabyte-long prompt on every call."""
    from rtlforge.agents.base import RoleTemplate, RoleTemplateError

    (tmp_path / "bin.toml").write_bytes(b"\xff\xfe user = 'x'")
    (tmp_path / "deep.toml").write_text(DEEP_TOML)
    (tmp_path / "pad.toml").write_text('user = "{spec:>999999999}"\n')
    (tmp_path / "conv.toml").write_text('user = "{spec!r}"\n')
    for name in ("bin", "deep", "pad", "conv"):
        with pytest.raises(RoleTemplateError):
            RoleTemplate.load(tmp_path / f"{name}.toml")


def test_hostile_agents_knowledge_detector_and_task_files_are_typed_errors(
        tmp_path: Path) -> None:
    from rtlforge.agents.config import AgentsFileError, load_agents_file
    from rtlforge.agents.guidance.base import load_rules
    from rtlforge.agents.knowledge.base import load_entries
    from rtlforge.core.errors import TaskFormatError
    from rtlforge.tasks.loader import load_task

    deep = tmp_path / "deep.toml"
    deep.write_text(DEEP_TOML)
    with pytest.raises(AgentsFileError):
        load_agents_file(deep)
    def rules(path: Path) -> Any:
        return load_rules(path.read_text(), label=str(path))

    for loader in (load_entries, rules):
        with pytest.raises(ValueError, match=r"deep\.toml"):
            loader(deep)
        scalar = tmp_path / "scalar.toml"
        scalar.write_text("entry = 5\ndetector = 5\n")  # a number where a list of tables goes
        with pytest.raises(ValueError, match=r"scalar\.toml"):
            loader(scalar)
    from rtlforge.plugins.generators.scripted import load_script

    for name, text in (("deep.json", "[" * 100_000),
                       ("deep_script.toml", "step = " + DEEP_TOML[4:])):
        (tmp_path / name).write_text(text)
        with pytest.raises(TaskFormatError, match="not a valid script"):
            load_script(tmp_path / name)
    task_dir = tmp_path / "task"
    task_dir.mkdir()
    (task_dir / "task.toml").write_text('id = "t"\ntop = "t"\n' + DEEP_TOML)
    with pytest.raises(TaskFormatError):
        load_task(task_dir)


def test_the_sft_harvester_reads_a_torn_or_tampered_refine_run(tmp_path: Path) -> None:
    """A killed refine run leaves results.jsonl torn anywhere, also inside a UTF-8 sequence:
    the harvester crashed with UnicodeDecodeError; a pass whose candidate is not an object
    crashed with AttributeError."""
    from rtlforge.trainers.sft import _from_refine

    good = _passing().model_dump_json().encode()
    odd = json.dumps({"task_id": "u", "verdict": "pass", "candidate": [1]}).encode()
    torn = _passing(error="caf\u00e9").model_dump_json().encode()
    torn = torn[:torn.index("\u00e9".encode()) + 1]
    (tmp_path / "results.jsonl").write_bytes(b"\n".join([good, odd, b"[" * 100_000, torn]))
    got = list(_from_refine(tmp_path))
    assert [(tid, code) for tid, code, _ in got] == [("t", "module t; endmodule\n"),
                                                     ("u", None)]


def test_task_ids_that_differ_only_in_replaced_characters_get_their_own_traces(
        tmp_path: Path) -> None:
    """``a b`` and ``a_b`` both became traces/a_b.jsonl: solving the second deleted the
    first's trace, and the report showed one task's reasoning under the other."""
    from rtlforge.agents.run import trace_path

    ids = ["a_b", "a b", "a/b", "a\u00e9b", "a\u0435b", "..", "."]  # \u0435: Cyrillic e
    paths = [trace_path(tmp_path, tid) for tid in ids]
    assert len(set(paths)) == len(ids)
    assert paths[0] == tmp_path / "traces" / "a_b.jsonl"  # a plain id keeps its own name
    assert all(p.parent == tmp_path / "traces" and p.name.isascii() for p in paths)


def test_the_combined_lint_runs_in_the_loops_sandbox_runner() -> None:
    """Each decomposition built its lint pipeline on a new SandboxRunner that nothing closed:
    its gate workers (two processes) stayed alive after every complex task of a run."""
    from rtlforge.core.plugins import PluginHost
    from rtlforge.plugins.validators.iverilog import IverilogLint
    from rtlforge.validate.pipeline import Pipeline

    pipeline = Pipeline([IverilogLint()])
    decomposer = Decomposer(lambda *a, **k: "", host=PluginHost.default(), pipeline=pipeline)
    assert decomposer.lint_pipeline.runner is pipeline.runner


def test_the_orchestrator_closes_the_sandbox_runner_it_built(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from rtlforge.agents.orchestrator import Orchestrator
    from rtlforge.plugins.generators.scripted import ScriptedGenerator
    from rtlforge.sandbox.runner import SandboxRunner

    closed: list[SandboxRunner] = []
    monkeypatch.setattr(SandboxRunner, "close", lambda self: closed.append(self))
    with Orchestrator(generator=ScriptedGenerator(script={}), host=_loop_host(),
                      router=_FirstAgent(), symbolic=False) as orch:
        runner = orch.pipeline.runner
    assert closed == [runner]


def test_overwrite_refuses_a_directory_refine_did_not_make(tmp_path: Path) -> None:
    """--overwrite deleted traces/, results.jsonl, ... in whatever --run-dir named, also a
    directory refine never wrote (a home folder with its own traces/)."""
    (tmp_path / "traces").mkdir()
    (tmp_path / "traces" / "mine.jsonl").write_text("someone else's\n")
    with pytest.raises(UnsafeRunDirError, match="not a refine run directory"):
        RefineRun(tmp_path, SETTINGS, overwrite=True).prepare()
    assert (tmp_path / "traces" / "mine.jsonl").read_text() == "someone else's\n"


def test_the_report_reads_traces_only_from_the_runs_traces_folder(tmp_path: Path) -> None:
    secret = tmp_path / "secret.jsonl"
    secret.write_text(ThoughtEvent(kind=ThoughtKind.ANALYSIS, message="TOP-SECRET")
                      .model_dump_json() + "\n")
    run = RefineRun(tmp_path / "run", SETTINGS)
    run.prepare()
    _, report = run.write_summary([_passing(trace=str(secret))])
    assert "TOP-SECRET" not in report.read_text()
